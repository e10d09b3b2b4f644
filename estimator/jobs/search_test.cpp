// Hyperparameter searches: successive halving and ASHA against hand calculations and against
// the analytic claims of Li et al. (MLSys 2020).
#include "shardcost/search.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shardcost/error.h"

namespace shardcost {
namespace {

SearchSpec spec(int trials, int64_t min_steps, int64_t max_steps, int reduction, bool resume) {
  SearchSpec s;
  s.trials = trials;
  s.min_steps = min_steps;
  s.max_steps = max_steps;
  s.reduction = reduction;
  s.resume = resume;
  return s;
}

TEST(Search, RungBudgetsGrowByTheReductionUpToTheFullBudget) {
  EXPECT_EQ(spec(81, 1, 81, 3, true).budgets(), (std::vector<int64_t>{1, 3, 9, 27, 81}));
  // A full budget off the geometric ladder is the last rung.
  EXPECT_EQ(spec(81, 100, 1000, 3, true).budgets(), (std::vector<int64_t>{100, 300, 900, 1000}));
  EXPECT_EQ(spec(1, 50, 50, 3, true).budgets(), (std::vector<int64_t>{50}));
}

// By hand: 4 trials, budgets 1 and 2 steps of 1 s, reduction 2, two workers of one GPU.
TEST(Search, SmallSearchesMatchHandCalculations) {
  const SearchSpec s = spec(4, 1, 2, 2, true);
  // Synchronous: rung 0 is two waves of two (ends at 2 s); the best two resume for one step
  // side by side (ends at 3 s). 6 GPU-seconds of training on 2 GPUs over 3 s: all busy.
  const HalvingRun sync = simulate_halving(s, Halving::synchronous, 1, 2, 1.0);
  EXPECT_DOUBLE_EQ(sync.first_full_s, 3);
  EXPECT_DOUBLE_EQ(sync.makespan_s, 3);
  EXPECT_DOUBLE_EQ(sync.gpu_busy_share, 1);
  ASSERT_EQ(sync.rungs.size(), 2u);
  EXPECT_EQ(sync.rungs[0].trials, 4);
  EXPECT_EQ(sync.rungs[1].trials, 2);
  // ASHA: at 1 s two trials have finished rung 0; the better is in their best half and goes
  // on at once (done at 2 s) while the other worker starts a third trial.
  const HalvingRun asha = simulate_halving(s, Halving::asynchronous, 1, 2, 1.0);
  EXPECT_DOUBLE_EQ(asha.first_full_s, 2);
  EXPECT_EQ(asha.rungs[0].trials, 4);
  // Without resuming, a promoted trial trains both steps again.
  const HalvingRun again =
      simulate_halving(spec(4, 1, 2, 2, false), Halving::synchronous, 1, 2, 1.0);
  EXPECT_DOUBLE_EQ(again.first_full_s, 4);
  // Three GPUs of two per trial: one worker, one GPU idle.
  const HalvingRun odd = simulate_halving(s, Halving::synchronous, 2, 3, 1.0);
  EXPECT_EQ(odd.workers, 1);
  EXPECT_DOUBLE_EQ(odd.makespan_s, 6);
  EXPECT_NEAR(odd.gpu_busy_share, 2.0 * 6 / (3 * 6), 1e-12);
}

// Li et al. 2020, section 3: with enough workers (one per trial of the top rung's cohort:
// reduction^(rungs-1)), ASHA returns a configuration trained to the full budget R in about the
// time one model takes to train to R, while synchronous halving of a search that fills every
// worker for that long at each rung (rung 0: reduction^(rungs-1) times more trials than
// workers) needs one such time per rung. Each within 5 %, for several reductions and depths.
TEST(Search, TheAnalyticClaimsOfAshaHold) {
  for (const int eta : {2, 3, 4}) {
    for (const int depth : {2, 3}) {
      int64_t top = 1;
      for (int k = 0; k < depth; ++k) top *= eta;  // R / r
      const int workers = static_cast<int>(top);
      const int trials = workers * static_cast<int>(top);
      const double step = 0.7;
      const double time_r = static_cast<double>(top) * step;  // one model trained to R
      const SearchSpec resumed = spec(trials, 1, top, eta, true);
      const HalvingRun asha = simulate_halving(resumed, Halving::asynchronous, 1, workers, step);
      EXPECT_NEAR(asha.first_full_s / time_r, 1.0, 0.05) << eta << " " << depth;
      EXPECT_DOUBLE_EQ(asha.time_full_s, time_r);
      const SearchSpec scratch = spec(trials, 1, top, eta, false);
      const HalvingRun sync = simulate_halving(scratch, Halving::synchronous, 1, workers, step);
      EXPECT_NEAR(sync.first_full_s / ((depth + 1) * time_r), 1.0, 0.05) << eta << " " << depth;
      // And synchronous halving never returns sooner than ASHA here.
      EXPECT_GE(simulate_halving(resumed, Halving::synchronous, 1, workers, step).first_full_s,
                asha.first_full_s);
    }
  }
}

TEST(Search, SynchronousRungsKeepOneTrialInTheReduction) {
  const HalvingRun r =
      simulate_halving(spec(256, 100, 8100, 3, true), Halving::synchronous, 8, 64, 1.0);
  std::vector<int> counts;
  for (const RungCount& c : r.rungs) counts.push_back(c.trials);
  EXPECT_EQ(counts, (std::vector<int>{256, 85, 28, 9, 3}));
  // ASHA promotes at least as many (it decides on fewer finished trials).
  const HalvingRun a =
      simulate_halving(spec(256, 100, 8100, 3, true), Halving::asynchronous, 8, 64, 1.0);
  EXPECT_EQ(a.rungs[0].trials, 256);
  for (size_t k = 1; k < a.rungs.size(); ++k) EXPECT_GE(a.rungs[k].trials, counts[k]);
}

TEST(Search, SearchFilesAreReadStrictly) {
  const SearchSpec s = parse_search(
      R"({"model": "llama3-8b", "gbs": 64, "trials": 27, "min_steps": 10, "max_steps": 90,
          "gpus": [8, 1, 8]})",
      "t");
  EXPECT_EQ(s.gpu_counts, (std::vector<int>{1, 8}));
  EXPECT_EQ(s.reduction, 3);
  EXPECT_TRUE(s.resume);
  const SearchSpec given = parse_search(
      R"({"trials": 9, "min_steps": 1, "max_steps": 9, "step_seconds": {"4": 0.5}})", "t");
  EXPECT_DOUBLE_EQ(given.step_seconds.at(4), 0.5);
  auto refused = [](const char* text, const char* says) {
    try {
      parse_search(text, "f.json");
      ADD_FAILURE() << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(R"({"model": "m", "gbs": 8, "trials": 8, "min_steps": 1, "max_steps": 9})",
          "give at least 9 trials");
  refused(R"({"model": "m", "gbs": 8, "trials": 9, "min_steps": 10, "max_steps": 9})", "max_steps");
  refused(R"({"trials": 9, "min_steps": 1, "max_steps": 9})", "give either model");
  refused(R"({"model": "m", "gbs": 8, "trials": 9, "min_steps": 1, "max_steps": 9,
              "step_seconds": {"1": 2}})",
          "give either model");
  refused(R"({"model": "m", "gbs": 8, "trials": 9, "min_steps": 1, "max_steps": 9, "eta": 3})",
          "eta");
  refused(R"({"model": "m", "gbs": 8, "trials": 9, "min_steps": 1, "max_steps": 9,
              "reduction": 1})",
          "reduction");
  refused(R"({"trials": 9, "min_steps": 1, "max_steps": 9, "step_seconds": {"x": 1}})",
          "not a GPU count");
  refused(R"({"model": "m", "gbs": 8, "trials": 200000, "min_steps": 1, "max_steps": 9})",
          "trials");
}

}  // namespace
}  // namespace shardcost
