// Many jobs on one cluster: jobs files, the serial scheme by hand, the exact solver against
// brute force, list scheduling against the exact solver, curves from rank.
#include "shardcost/jobs.h"

#include <gtest/gtest.h>

#include <random>

#include "jobs/solver.h"
#include "shardcost/error.h"
#include "test_models.h"

namespace shardcost {
namespace {

using jobs::Instance;
using jobs::Mode;

Instance instance(int capacity, std::vector<std::vector<Mode>> modes) {
  Instance in;
  in.capacity = capacity;
  in.modes = std::move(modes);
  in.weight.assign(in.modes.size(), 1);
  in.deadline.assign(in.modes.size(), jobs::kNoDeadline);
  return in;
}

// Two jobs on 8 GPUs, each 10 s on all 8 or 18 s on 4: side by side (18 s) beats one after
// the other (20 s).
TEST(Jobs, TheSerialSchemeByHand) {
  const Instance in = instance(8, {{{8, 10}, {4, 18}}, {{8, 10}, {4, 18}}});
  const jobs::Solution both_wide = jobs::serial_schedule(in, {0, 1}, {0, 0});
  EXPECT_EQ(both_wide.start[1], 10);
  EXPECT_EQ(both_wide.makespan, 20);
  const jobs::Solution side = jobs::serial_schedule(in, {0, 1}, {1, 1});
  EXPECT_EQ(side.start[1], 0);
  EXPECT_EQ(side.makespan, 18);
  EXPECT_EQ(side.completion, 36);
  // A job later in the order fills a gap an earlier one leaves: the 4-GPU job of 5 s starts
  // at 0 beside the 4-GPU job of 18 s, before the 8-GPU job that waits for both.
  const Instance gap = instance(8, {{{4, 18}}, {{8, 10}}, {{4, 5}}});
  const jobs::Solution s = jobs::serial_schedule(gap, {0, 1, 2}, {0, 0, 0});
  EXPECT_EQ(s.start[1], 18);
  EXPECT_EQ(s.start[2], 0);
  EXPECT_EQ(jobs::brute_force(in, ScheduleObjective::makespan).makespan, 18);
}

// Random instances with speed-up curves as real jobs have them: more GPUs, less time, less
// than proportionally.
Instance random_instance(std::mt19937& rng, int n, int capacity) {
  std::uniform_real_distribution<double> work(10, 100), eff(0.6, 0.95);
  std::vector<std::vector<Mode>> modes;
  for (int j = 0; j < n; ++j) {
    const double w = work(rng);
    std::vector<Mode> ms;
    double t = w;
    for (int g = 1; g <= capacity; g *= 2) {
      ms.push_back({g, t});
      t = t / 2 / eff(rng);
    }
    std::uniform_int_distribution<size_t> keep(1, ms.size());
    ms.resize(keep(rng));  // some jobs may not take the larger counts
    modes.push_back(ms);
  }
  Instance in = instance(capacity, modes);
  std::uniform_real_distribution<double> weight(0.5, 3);
  for (double& w : in.weight) w = weight(rng);
  return in;
}

TEST(Jobs, TheExactSolverEqualsBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 3 + trial % 3;  // 3-5 jobs
    const Instance in = random_instance(rng, n, 8);
    for (ScheduleObjective o : {ScheduleObjective::makespan, ScheduleObjective::completion}) {
      const jobs::Solution brute = jobs::brute_force(in, o);
      jobs::Solution exact;
      std::string why;
      ASSERT_TRUE(jobs::exact_schedule(in, o, 30, exact, why)) << why;
      EXPECT_TRUE(exact.optimal);
      EXPECT_NEAR(exact.value(o), brute.value(o), 1e-6 * brute.value(o))
          << "trial " << trial << (o == ScheduleObjective::makespan ? " makespan" : " completion");
    }
  }
}

TEST(Jobs, ListSchedulingIsWithinTenPercentOfTheExactSolver) {
  std::mt19937 rng(11);
  double worst = 0;
  for (int trial = 0; trial < 16; ++trial) {
    // 5-7 jobs for the makespan, 4-6 for the completion time (the harder program).
    for (ScheduleObjective o : {ScheduleObjective::makespan, ScheduleObjective::completion}) {
      const int n = (o == ScheduleObjective::makespan ? 5 : 4) + trial % 3;
      const Instance in = random_instance(rng, n, 16);
      jobs::Solution exact;
      std::string why;
      ASSERT_TRUE(jobs::exact_schedule(in, o, 30, exact, why)) << why;
      ASSERT_TRUE(exact.optimal) << "trial " << trial;
      const jobs::Solution list = jobs::list_schedule(in, o);
      EXPECT_GE(list.value(o), exact.value(o) * (1 - 1e-9));
      // Never worse than either baseline: they are among the schedules it starts from.
      EXPECT_LE(list.value(o), jobs::one_after_another(in).value(o) * (1 + 1e-9));
      EXPECT_LE(list.value(o), jobs::even_split(in).value(o) * (1 + 1e-9));
      worst = std::max(worst, list.value(o) / exact.value(o) - 1);
      EXPECT_LE(list.value(o), 1.10 * exact.value(o)) << "trial " << trial;
    }
  }
  RecordProperty("worst_gap_percent", std::to_string(100 * worst));
}

TEST(Jobs, DeadlinesBindTheExactSolver) {
  // Without the deadline job 1 waits (makespan 20 either way round); with one at 10 s it must
  // go first.
  Instance in = instance(8, {{{8, 10}}, {{8, 10}}});
  in.deadline[1] = 10;
  jobs::Solution s;
  std::string why;
  ASSERT_TRUE(jobs::exact_schedule(in, ScheduleObjective::makespan, 10, s, why)) << why;
  EXPECT_EQ(s.start[1], 0);
  in.deadline[0] = 10;  // both by 10 s on 8 GPUs: impossible
  EXPECT_FALSE(jobs::exact_schedule(in, ScheduleObjective::makespan, 10, s, why));
  EXPECT_NE(why.find("deadline"), std::string::npos) << why;
}

TEST(Jobs, FilesAreReadStrictly) {
  const auto jobs = parse_jobs(R"({"jobs": [
      {"name": "a", "model": "llama3-8b", "gbs": 512, "steps": 1000, "gpus": [16, 8, 16]},
      {"model": "gpt3-1.3b", "gbs": 256, "tokens": 1e9, "priority": 2, "deadline_hours": 3}]})",
                               "jobs.json");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].gpu_counts, (std::vector<int>{8, 16}));
  EXPECT_EQ(jobs[1].name, "job1");
  EXPECT_EQ(*jobs[1].deadline_s, 3 * 3600);
  const auto csv = parse_jobs(
      "name,model,gbs,steps,gpus\n# a comment\nx,llama3-8b,512,100,8/16\ny,gpt3-1.3b,64,10,\n",
      "jobs.csv");
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[0].gpu_counts, (std::vector<int>{8, 16}));
  EXPECT_TRUE(csv[1].gpu_counts.empty());
  auto error = [](const char* text) {
    return test_models::input_error_of([&] { (void)parse_jobs(text, "jobs.json"); });
  };
  EXPECT_NE(error(R"({"jobs": [{"model": "m", "gbs": 8}]})").find("either steps or tokens"),
            std::string::npos);
  EXPECT_NE(error(R"({"jobs": [{"model": "m", "gbs": 8, "steps": 1, "gpu": [8]}]})").find("'gpu'"),
            std::string::npos);
  EXPECT_NE(error(R"({"jobs": [{"model": "m", "gbs": 0, "steps": 1}]})").find("gbs"),
            std::string::npos);
  EXPECT_NE(error("name,model,gbs,steps\nx,m,8,abc\n").find("line 2: steps 'abc'"),
            std::string::npos);
  EXPECT_NE(error("name,model,gbs,steps\nx,m,8\n").find("3 cells where the header has 4"),
            std::string::npos);
  EXPECT_NE(error(R"({"jobs": [{"name": "a", "model": "m", "gbs": 8, "steps": 1},
                               {"name": "a", "model": "m", "gbs": 8, "steps": 1}]})")
                .find("two jobs are named 'a'"),
            std::string::npos);
  EXPECT_NE(error(R"({"jobs": []})").find("holds no jobs"), std::string::npos);
  EXPECT_NE(error("model,gbs,gbs,steps\nm,8,8,1\n").find("names 'gbs' twice"), std::string::npos);
  // Tokens that would make more steps than the cap (the review found them overflowing).
  const auto huge =
      parse_jobs(R"({"jobs": [{"model": "gpt3-1.3b", "gbs": 8, "tokens": 1e300}]})", "jobs.json");
  EXPECT_NE(test_models::input_error_of([&] {
              (void)job_curves(huge, "dgx-h100", std::nullopt, EstimateOptions{});
            }).find("more than 1e15"),
            std::string::npos);
}

// The whole path on a small cluster: curves from rank, a schedule no worse than either
// baseline, a job that fits nowhere listed and the rest scheduled.
TEST(Jobs, CurvesFromRankAndASchedule) {
  const auto specs = parse_jobs(R"({"jobs": [
      {"name": "small", "model": "gpt3-1.3b", "gbs": 64, "steps": 200},
      {"name": "mid", "model": "llama3-8b", "gbs": 64, "steps": 100},
      {"name": "mid2", "model": "llama3-8b", "gbs": 64, "steps": 50, "gpus": [8, 16]},
      {"name": "huge", "model": "gpt3-175b", "gbs": 64, "steps": 10, "gpus": [1, 2]}]})",
                                "jobs.json");
  EstimateOptions eo;
  const auto curves = job_curves(specs, "dgx-h100", std::nullopt, eo);  // 8 GPUs: one node
  ASSERT_EQ(curves.size(), 4u);
  EXPECT_EQ(offered_gpu_counts(load_cluster("dgx-h100", 32)),
            (std::vector<int>{1, 2, 4, 8, 16, 32}));
  EXPECT_FALSE(curves[0].options.empty());
  EXPECT_TRUE(curves[3].options.empty());
  EXPECT_NE(curves[3].why_none.find("fits at none"), std::string::npos);
  // More GPUs: never more time per step than proportional... at least shorter at 8 than at 1.
  EXPECT_LT(curves[0].options.back().seconds, curves[0].options.front().seconds);
  const JobSchedule s = schedule_jobs(curves, 8);
  EXPECT_EQ(s.unschedulable, (std::vector<size_t>{3}));
  ASSERT_EQ(s.jobs.size(), 3u);  // mid2 asks for 8 or 16 GPUs: 16 is more than the cluster
  for (const ScheduledJob& j : s.jobs)
    if (j.job == 2) {
      EXPECT_EQ(j.gpus, 8);
    }
  EXPECT_TRUE(s.optimal) << s.solver;
  EXPECT_LE(s.makespan_s, s.sequential_s * (1 + 1e-9));
  EXPECT_LE(s.makespan_s, s.even_split_s * (1 + 1e-9));
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Hydra's model hopping: a model no single GPU holds runs on one, shard after shard; offered
// only with spill, priced no faster than its compute on one GPU nor than its host transfers.
TEST(Jobs, SpilledShardsRunAModelNoGpuHolds) {
  const auto specs = parse_jobs(
      R"({"jobs": [{"name": "big", "model": "llama3-70b", "gbs": 64, "steps": 10, "gpus": [1, 8]}]})",
      "jobs.json");
  EstimateOptions eo;
  const auto plain = job_curves(specs, "dgx-a100", std::nullopt, eo);
  ASSERT_TRUE(plain[0].options.empty());  // 70B's training state is more than 8 x 80 GB
  const auto curves = job_curves(specs, "dgx-a100", std::nullopt, eo, true);
  ASSERT_EQ(curves[0].options.size(), 1u);
  const JobOption& o = curves[0].options[0];
  EXPECT_EQ(o.gpus, 1);
  const Device a100 = find_device("a100-sxm4-80gb");
  const double params = transformer_workload(load_model("llama3-70b"))->parameters();
  // Shards of at most half the GPU: 18 B of state per parameter.
  EXPECT_EQ(o.spilled_shards, static_cast<int>(std::ceil(18 * params / (0.5 * a100.memory_bytes))));
  const Estimate compute =
      estimate(load_model("llama3-70b"), load_cluster("dgx-a100", 1), o.plan.strategy);
  EXPECT_GE(o.plan.step_time_s, compute.step_time_s);
  EXPECT_GE(o.plan.step_time_s, params * 36 / a100.pcie_bandwidth_Bps);
  EXPECT_DOUBLE_EQ(o.seconds, 10 * o.plan.step_time_s);
  const JobSchedule s = schedule_jobs(curves, 8);
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].spilled_shards, o.spilled_shards);
}

}  // namespace
}  // namespace shardcost
