// Benchmark: the exact placement of a 50-operator graph on 8 heterogeneous devices in under
// 10 s on one core (issue 19). gpt-small (56 operators, 213 ideals) and ResNet-50 (174
// operators) on 4 A100s and 4 V100s (data/examples/a100-v100.json), by the program over
// ideals (median of 3); gpt-small also by the integer program alone (GLPK, once, given 20 s:
// how long it takes to prove the same optimum).
//   bench_placement
#include <fmt/format.h>

#include <chrono>
#include <vector>

#include "one_core.h"
#include "shardcost/device_placement.h"
#include "shardcost/estimator.h"

int main() {
  using namespace shardcost;
  const bool pinned = bench::pin_to_one_core();
  const std::string src = SHARDCOST_SOURCE_DIR;
  const Cluster c = load_cluster(src + "/data/examples/a100-v100.json");
  bool fast = true;
  for (const char* file : {"gpt-small", "resnet50"}) {
    const OpGraph g = load_onnx(src + "/data/onnx/" + file + ".onnx");
    int ops = 0;
    for (const GraphNode& n : g.nodes) ops += n.kind != NodeKind::view;
    PlacementOptions o;
    o.micro_batch = 16;
    std::vector<double> runs;
    DevicePlacement p;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      p = place_graph(g, c, o);
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double median = bench::median_run(runs);
    fmt::print(
        "{}: {} operators, {} ideals, on 8 devices of two kinds: {:.3f} s, median of 3 on {} "
        "(target < 10 s for 50 operators); {} stages, step {:.4f} s\n",
        g.name, ops, p.ideals, median, bench::cores(pinned), p.stages.size(), p.step_s);
    fast = fast && (ops < 50 || median < 10.0);
    if (std::string(file) != "gpt-small") continue;
    o.solver = PlacementOptions::Solver::program;
    o.program_time_s = 20;
    const auto t0 = std::chrono::steady_clock::now();
    const DevicePlacement q = place_graph(g, c, o);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(
        "{}: integer program, {} stage counts: {:.3f} s, {}; step {:.4f} s ({:+.2f} % against the "
        "ideals')\n",
        g.name, q.programs, took, q.exact ? "optimal" : "not proven optimal", q.step_s,
        100 * (q.step_s / p.step_s - 1));
  }
  return fast ? 0 : 1;
}
