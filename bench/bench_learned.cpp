// Benchmark: fit learned GEMM models on about 100,000 measured rows (the shared B200 bf16 and
// fp8 and L40S bf16 tables) in under 60 s, and rank Llama-3-70B on 64 B200s with the fitted
// store within 5x of the catalog-only search (in-process search time, median of 5). Prints
// the figures; exits 1 when a target is missed, 2 when the tables are not there.
//   bench_learned [MEASURED_DIR]   (default: SOURCE/../shared/data/measured)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "shardcost/db.h"
#include "shardcost/estimator.h"
#include "shardcost/importers.h"
#include "shardcost/learned.h"
#include "shardcost/store_costs.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median_rank_s(const shardcost::CostSource* costs) {
  const auto m = shardcost::load_model("llama3-70b");
  const auto c = shardcost::load_cluster("dgx-b200", 64);
  shardcost::RankOptions o;
  o.global_batch = 512;
  o.estimate.costs = costs;
  std::vector<double> s;
  for (int i = 0; i < 5; ++i) s.push_back(shardcost::rank(m, c, o).elapsed_s);
  std::sort(s.begin(), s.end());
  return s[2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1]
                                             : std::filesystem::path(SHARDCOST_SOURCE_DIR) / ".." /
                                                   "shared" / "data" / "measured";
  const std::string store = (std::filesystem::temp_directory_path() / "bench_learned.db").string();
  std::remove(store.c_str());
  size_t rows = 0;
  try {
    shardcost::db::Store s =
        shardcost::db::Store::open(store, shardcost::db::Store::Mode::read_write);
    for (const char* f : {"gemm_b200-sxm-180gb.csv", "gemm_l40s.csv"}) {
      std::ifstream in(dir / f);
      if (!in) {
        fmt::print(stderr,
                   "bench_learned: {} not found; give the folder of the shared measured tables\n",
                   (dir / f).string());
        return 2;
      }
      std::stringstream text;
      text << in.rdbuf();
      auto m = shardcost::db::import_cost_csv(text.str(), f);
      // L40S: its bf16 rows only, for about 100,000 rows in all.
      if (std::string(f) == "gemm_l40s.csv")
        std::erase_if(m.gemms, [](const auto& g) { return g.dtype != "bf16"; });
      rows += m.gemms.size();
      s.write(m);
    }
    const auto start = std::chrono::steady_clock::now();
    const auto reports = shardcost::fit_store(store, "gemm", std::nullopt);
    const double fit_s = seconds_since(start);
    const double fit_target = 60;
    fmt::print("fit {} GEMM rows into {} models: {:.1f} s (target < {:.0f} s): {}\n", rows,
               reports.size(), fit_s, fit_target, fit_s < fit_target ? "met" : "MISSED");
    for (const auto& r : reports)
      for (const auto& v : r.cross_validation)
        fmt::print("  {} {} {}: {} median {:.2f} % p90 {:.2f} %\n", r.kind, r.device, r.key,
                   v.split, 100 * v.median, 100 * v.p90);

    const auto measured = shardcost::StoreCosts::load(store);
    std::vector<std::string> problems;
    const auto learned = shardcost::LearnedCosts::load(store, &problems);
    const shardcost::CostChain chain{{&measured.measured(), &measured.interpolated(), &learned}};
    const double plain = median_rank_s(nullptr), with = median_rank_s(&chain);
    fmt::print(
        "rank llama3-70b on 64 x b200 (gbs 512): {:.3f} s with the fitted store, {:.3f} s "
        "without ({:.1f}x; target <= 5x): {}\n",
        with, plain, with / plain, with <= 5 * plain ? "met" : "MISSED");
    std::remove(store.c_str());
    return fit_s < fit_target && with <= 5 * plain ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_learned: {}\n", e.what());
    return 2;
  }
}
