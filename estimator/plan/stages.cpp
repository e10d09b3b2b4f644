#include "stages.h"

#include <algorithm>
#include <numeric>

#include "shardcost/plan.h"

namespace shardcost {

std::vector<int> default_stage_layers(int layers, int pp) {
  std::vector<int> out;
  const StageLayout layout(layers, pp);
  for (int s = 0; s < pp; ++s) out.push_back(layout.units(s));
  return out;
}

StageLayout::StageLayout(int layers, int pp, const std::vector<int>* explicit_layers)
    : layers_(layers), pp_(pp) {
  if (explicit_layers && !explicit_layers->empty()) {
    explicit_ = explicit_layers;
    int unit = 0;
    for (int n : *explicit_layers) {
      prefix_.push_back(unit);
      unit += n;
    }
  }
}

int StageLayout::units(int stage) const {
  if (explicit_) return (*explicit_)[static_cast<size_t>(stage)];
  const int base = layers_ / pp_;
  const int extra = layers_ % pp_;
  if (extra == 0) return base;
  // Order in which stages receive one extra layer: 1 .. pp-2, then 0, then pp-1.
  const int middle = std::max(0, pp_ - 2);
  int rank_in_order;
  if (stage >= 1 && stage <= pp_ - 2) {
    rank_in_order = stage - 1;
  } else if (stage == 0) {
    rank_in_order = middle;
  } else {
    rank_in_order = middle + 1;
  }
  return base + (rank_in_order < extra ? 1 : 0);
}

StageSpan StageLayout::span(int stage) const {
  StageSpan s;
  s.units = units(stage);
  s.first = stage == 0;
  s.last = stage == pp_ - 1;
  if (explicit_) {
    s.first_unit = prefix_[static_cast<size_t>(stage)];
  } else if (stage > 0) {
    // Stages before this one: stage 0, and middle stages 1 .. stage-1.
    const int base = layers_ / pp_, extra = layers_ % pp_;
    const int middles_before = std::min(stage - 1, std::max(0, pp_ - 2));
    s.first_unit =
        stage * base + (extra > std::max(0, pp_ - 2) ? 1 : 0) + std::min(middles_before, extra);
  }
  return s;
}

void stage_kinds(const StageLayout& layout, bool uniform, std::vector<StageKind>& out) {
  out.clear();
  const int pp = layout.pp();
  out.push_back({layout.span(0), 1});
  if (pp > 1) out.push_back({layout.span(pp - 1), 1});
  if (pp <= 2) return;
  if (uniform && !layout.is_explicit()) {
    // The default split in closed form: middle stages 1..more hold one layer more.
    const int more = layout.middles_with_extra();
    if (more > 0) out.push_back({layout.span(1), more});
    if (pp - 2 - more > 0) out.push_back({layout.span(1 + more), pp - 2 - more});
    return;
  }
  const size_t first_middle = out.size();
  for (int s = 1; s <= pp - 2; ++s) {
    const StageSpan span = layout.span(s);
    bool merged = false;
    if (uniform) {
      for (size_t k = first_middle; k < out.size() && !merged; ++k)
        if (out[k].span.units == span.units) ++out[k].count, merged = true;
    }
    if (!merged) out.push_back({span, 1});
  }
}

namespace {

// The fewest layers stage k of pp may hold.
int least_layers(int k, int pp, int vpp) {
  const bool end = k == 0 || k == pp - 1;
  return end ? (vpp > 1 ? vpp - 1 : 0) : std::max(1, vpp);
}

// Each stage filled from the last with the most layers that keep it within `bound` (leaving
// the earlier stages their least); a stage at its least may reach `cap` (>= bound). Empty
// where some stage cannot. From the last: under 1F1B the first stages hold the most
// micro-batches' activations, so what the bound leaves over goes to them least.
std::vector<int> fill_under(double bound, double cap, int layers, int pp, int vpp,
                            const std::function<double(const StageSpan&)>& seconds) {
  std::vector<int> least(static_cast<size_t>(pp));
  for (int k = 0; k < pp; ++k) least[static_cast<size_t>(k)] = least_layers(k, pp, vpp);
  int before = 0;  // the least the stages before k hold
  for (int k = 0; k + 1 < pp; ++k) before += least[static_cast<size_t>(k)];
  std::vector<int> out(static_cast<size_t>(pp));
  int end = layers;  // one past stage k's last unit
  for (int k = pp - 1; k >= 0; --k) {
    const bool first = k == 0;
    const int fewest = least[static_cast<size_t>(k)];
    const int most = end - before;
    int n = first ? most : fewest;
    if (n < fewest) return {};
    auto span = [&](int units) { return StageSpan{end - units, units, first, k == pp - 1}; };
    if (seconds(span(n)) > (n == fewest ? cap : bound)) return {};
    while (!first && n < most && seconds(span(n + 1)) <= bound) ++n;
    out[static_cast<size_t>(k)] = n;
    end -= n;
    if (!first) before -= least[static_cast<size_t>(k - 1)];
  }
  return out;
}

// The least bound in [0, hi] under which fill_under (with `cap`, or the bound itself where
// cap is 0) finds a split, to a relative 1e-6, and that split; `best` holds one found at hi.
double bisect(double hi, double cap, std::vector<int>& best, int layers, int pp, int vpp,
              const std::function<double(const StageSpan&)>& seconds) {
  double lo = 0;
  for (int i = 0; i < 64 && hi - lo > 1e-6 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    std::vector<int> split = fill_under(mid, cap > 0 ? cap : mid, layers, pp, vpp, seconds);
    if (split.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(split);
    }
  }
  return hi;
}

// Neighbouring stages evened out: each boundary moved to where the slower of its two stages
// is least, the others held, until none moves. The slowest stage never grows, and stages
// the bound left uneven (a long run at their least beside a long run at the bound) even
// out. Each move lowers a pair's slower stage, so it ends.
void even_out(std::vector<int>& split, int pp, int vpp,
              const std::function<double(const StageSpan&)>& seconds) {
  auto cost = [&](int k, int start, int units) {
    return seconds(StageSpan{start, units, k == 0, k == pp - 1});
  };
  const int total = std::accumulate(split.begin(), split.end(), 0);
  for (int round = 0, moved = 1; moved && round < 4 * total + pp; ++round) {
    moved = 0;
    int start = 0;  // stage k's first unit
    for (int k = 0; k + 1 < pp; ++k) {
      const size_t a = static_cast<size_t>(k), b = a + 1;
      const int end = start + split[a] + split[b];
      const int lo = start + least_layers(k, pp, vpp), hi = end - least_layers(k + 1, pp, vpp);
      const int now = start + split[a];
      double best = std::max(cost(k, start, split[a]), cost(k + 1, now, split[b]));
      int at = now;
      for (int p = lo; p <= hi; ++p) {
        const double worse = std::max(cost(k, start, p - start), cost(k + 1, p, end - p));
        if (worse < best * (1 - 1e-9)) best = worse, at = p;
      }
      if (at != now) {
        split[a] = at - start;
        split[b] = end - at;
        moved = 1;
      }
      start += split[a];
    }
  }
}

}  // namespace

std::vector<int> min_max_stage_layers(int layers, int pp, int vpp,
                                      const std::function<double(const StageSpan&)>& seconds) {
  if (pp < 1) return {};
  const StageLayout even(layers, pp);
  double hi = 0;
  for (int k = 0; k < pp; ++k) hi = std::max(hi, seconds(even.span(k)));
  std::vector<int> best = fill_under(hi, hi, layers, pp, vpp, seconds);
  if (best.empty()) return {};
  // The slowest stage at its least, then the others as low as they go under it: a stage held
  // at its fewest layers (an end stage with a heavy head) may set the pace alone.
  const double pace = bisect(hi, 0, best, layers, pp, vpp, seconds);
  bisect(pace, pace, best, layers, pp, vpp, seconds);
  even_out(best, pp, vpp, seconds);
  return best;
}

bool uniform_body(const Graph& g) {
  int body = 0;
  for (const Block& b : g.blocks) body += b.pin == Block::Pin::body ? 1 : 0;
  return body == 1;
}

Plan plan_of(const Strategy& s) {
  Plan p;
  p.strategy = s;
  p.stage_layers = s.stage_layers;  // layers=a/b/c: the strategy's own split
  return p;
}

}  // namespace shardcost
