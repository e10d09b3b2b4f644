// Successive halving, synchronous and asynchronous (ASHA), simulated over a pool of workers
// (docs/scheduling.md, "Hyperparameter searches").
#include "shardcost/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <random>
#include <set>

#include "shardcost/error.h"

namespace shardcost {
namespace {

// Counts by quality rank (0 best): how many of the finished trials rank better than q.
class Fenwick {
 public:
  explicit Fenwick(int n) : tree_(static_cast<size_t>(n) + 1, 0) {}
  void add(int q) {
    for (size_t i = static_cast<size_t>(q) + 1; i < tree_.size(); i += i & (~i + 1)) ++tree_[i];
  }
  int better_than(int q) const {  // finished trials of rank < q
    int sum = 0;
    for (size_t i = static_cast<size_t>(q); i > 0; i -= i & (~i + 1)) sum += tree_[i];
    return sum;
  }

 private:
  std::vector<int> tree_;
};

// Each trial's quality rank, a seeded permutation: which trials are promoted, never how long
// they take (every trial trains at the same step time).
std::vector<int> qualities(const SearchSpec& s) {
  std::vector<int> q(static_cast<size_t>(s.trials));
  std::iota(q.begin(), q.end(), 0);
  std::mt19937_64 rng(s.seed);
  std::shuffle(q.begin(), q.end(), rng);
  return q;
}

// Seconds of training a trial does to finish rung k (from the previous rung's checkpoint
// when it resumes, from scratch otherwise).
double rung_seconds(const SearchSpec& s, const std::vector<int64_t>& b, size_t k, double step_s) {
  const int64_t steps = k == 0 || !s.resume ? b[k] : b[k] - b[k - 1];
  return static_cast<double>(steps) * step_s;
}

HalvingRun synchronous(const SearchSpec& s, HalvingRun r, const std::vector<int64_t>& b) {
  const std::vector<int> q = qualities(s);
  std::vector<int> members(static_cast<size_t>(s.trials));
  std::iota(members.begin(), members.end(), 0);
  double start = 0, busy = 0;
  for (size_t k = 0; k < b.size() && !members.empty(); ++k) {
    // Every member of the rung, in order, on the worker that frees first; the rung ends with
    // its last trial, and nothing of the next starts before.
    const double d = rung_seconds(s, b, k, r.step_s);
    std::priority_queue<double, std::vector<double>, std::greater<>> free;
    for (int w = 0; w < r.workers; ++w) free.push(start);
    double end = start, first = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      const double t = free.top() + d;
      free.pop();
      free.push(t);
      end = std::max(end, t);
      if (i == 0) first = t;
    }
    busy += d * static_cast<double>(members.size());
    r.rungs.push_back({b[k], static_cast<int>(members.size())});
    if (k + 1 == b.size()) r.first_full_s = first;
    start = end;
    // The best 1/reduction go on.
    std::sort(members.begin(), members.end(),
              [&](int x, int y) { return q[static_cast<size_t>(x)] < q[static_cast<size_t>(y)]; });
    members.resize(members.size() / static_cast<size_t>(s.reduction));
  }
  r.makespan_s = start;
  r.gpu_busy_share = busy * r.gpus_per_trial;
  return r;
}

HalvingRun asynchronous(const SearchSpec& s, HalvingRun r, const std::vector<int64_t>& b) {
  const std::vector<int> q = qualities(s);
  const size_t rungs = b.size();
  // Per rung: finished trials by quality (Fenwick), how many, and the unpromoted ones.
  std::vector<Fenwick> finished(rungs, Fenwick(s.trials));
  std::vector<int> done(rungs, 0);
  std::vector<std::set<int>> waiting(rungs);  // quality ranks of finished, unpromoted trials
  std::vector<int> trial_of(static_cast<size_t>(s.trials));
  for (int t = 0; t < s.trials; ++t) trial_of[static_cast<size_t>(q[static_cast<size_t>(t)])] = t;
  int started = 0;
  // A free worker's next job: the best unpromoted trial of the highest rung below the top
  // whose finished trials put it in their best 1/reduction; else a new trial (Li et al. 2020,
  // Algorithm 2). nullopt: nothing to run now.
  auto next = [&]() -> std::optional<std::pair<int, size_t>> {
    for (size_t k = rungs - 1; k-- > 0;) {
      if (waiting[k].empty()) continue;
      const int best = *waiting[k].begin();
      if (finished[k].better_than(best) < done[k] / s.reduction) {
        waiting[k].erase(waiting[k].begin());
        return std::pair{trial_of[static_cast<size_t>(best)], k + 1};
      }
    }
    if (started < s.trials) return std::pair{started++, size_t{0}};
    return std::nullopt;
  };
  struct Job {
    double end;
    int trial;
    size_t rung;
    bool operator>(const Job& o) const { return end > o.end; }
  };
  std::priority_queue<Job, std::vector<Job>, std::greater<>> running;
  int idle = r.workers;
  double now = 0, busy = 0;
  bool full = false;
  auto fill = [&] {
    while (idle > 0) {
      const auto j = next();
      if (!j) return;
      const double d = rung_seconds(s, b, j->second, r.step_s);
      busy += d;
      running.push({now + d, j->first, j->second});
      --idle;
    }
  };
  fill();
  while (!running.empty()) {
    const Job j = running.top();
    running.pop();
    now = j.end;
    ++idle;
    const int quality = q[static_cast<size_t>(j.trial)];
    finished[j.rung].add(quality);
    ++done[j.rung];
    if (j.rung + 1 < rungs) waiting[j.rung].insert(quality);
    if (j.rung + 1 == rungs && !full) r.first_full_s = now, full = true;
    // Trials ending at the same instant are all counted before any worker chooses.
    if (!running.empty() && running.top().end == now) continue;
    fill();
  }
  for (size_t k = 0; k < rungs; ++k) r.rungs.push_back({b[k], done[k]});
  r.makespan_s = now;
  r.gpu_busy_share = busy * r.gpus_per_trial;
  return r;
}

}  // namespace

std::vector<int64_t> SearchSpec::budgets() const {
  std::vector<int64_t> out;
  for (double b = static_cast<double>(min_steps); b < static_cast<double>(max_steps);
       b *= reduction)
    out.push_back(static_cast<int64_t>(b));
  out.push_back(max_steps);
  return out;
}

std::string_view to_string(Halving h) {
  return h == Halving::synchronous ? "synchronous" : "asynchronous";
}

HalvingRun simulate_halving(const SearchSpec& s, Halving kind, int gpus_per_trial, int cluster_gpus,
                            double step_s) {
  if (gpus_per_trial < 1 || gpus_per_trial > cluster_gpus)
    throw InputError(fmt::format("{} GPUs per trial on a cluster of {}: give 1 to {}",
                                 gpus_per_trial, cluster_gpus, cluster_gpus));
  if (!(step_s > 0) || !std::isfinite(step_s))
    throw InputError("a trial's step time must be a positive number of seconds");
  if (s.trials < 1 || s.trials > kMaxSearchTrials)
    throw InputError(fmt::format("a search plans 1 to {} trials", kMaxSearchTrials));
  if (s.reduction < 2) throw InputError("the reduction factor must be at least 2");
  HalvingRun r;
  r.kind = kind;
  r.gpus_per_trial = gpus_per_trial;
  r.workers = cluster_gpus / gpus_per_trial;
  r.step_s = step_s;
  r.time_full_s = static_cast<double>(s.max_steps) * step_s;
  const std::vector<int64_t> b = s.budgets();
  r = kind == Halving::synchronous ? synchronous(s, r, b) : asynchronous(s, r, b);
  r.gpu_busy_share /= r.makespan_s > 0 ? static_cast<double>(cluster_gpus) * r.makespan_s : 1;
  return r;
}

}  // namespace shardcost
