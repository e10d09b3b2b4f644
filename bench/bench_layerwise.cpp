// Benchmark: the layer-wise search of a 200-operator graph on 64 devices in under 2 s on one
// core (issue 16). ResNet-152 (517 priced operators, past the target's 200) and ResNet-50 on
// 64 ABCI V100s, every uniform strategy priced too. Median of 3.
//   bench_layerwise
#include <fmt/format.h>

#include <chrono>
#include <vector>

#include "one_core.h"
#include "shardcost/estimator.h"
#include "shardcost/layerwise.h"

int main() {
  using namespace shardcost;
  const bool pinned = bench::pin_to_one_core();
  const Cluster c = load_cluster("abci-v100", 64);
  bool fast = true;
  for (const char* file : {"data/onnx/resnet152.onnx", "data/onnx/resnet50.onnx"}) {
    const OpGraph g = load_onnx(std::string(SHARDCOST_SOURCE_DIR) + "/" + file);
    int priced = 0;
    for (const GraphNode& n : g.nodes) priced += n.kind != NodeKind::view;
    LayerwiseOptions o;
    o.global_batch = 64 * 32;
    std::vector<double> runs;
    LayerwiseResult r;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r = plan_layerwise(g, c, o);
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double median = bench::median_run(runs);
    fmt::print(
        "{}: {} operators on 64 devices, {} splits priced: {:.3f} s, median of 3 on {} "
        "(target < 2 s for 200 operators)\n",
        g.name, priced, r.configurations, median, bench::cores(pinned));
    fmt::print("  best {} {:.4f} s per step\n", r.best.strategy, r.best.step_s);
    fast = fast && (priced < 200 || median * 200 / priced < 2.0);
  }
  return fast ? 0 : 1;
}
