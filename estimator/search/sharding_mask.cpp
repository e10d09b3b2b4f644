// Per-layer sharding masks (docs/seed-planners.md, item 1).
#include "sharding_mask.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "plan/memory.h"

namespace shardcost {

ShardingUnits sharding_units(const Graph& g) {
  ShardingUnits u;
  const int body = g.body_units();
  u.params.assign(static_cast<size_t>(body) + 2, 0);
  double largest_layer = 0;
  // The whole model on one stage (pp = 1, where masks apply).
  const StageSpan all{0, body, true, true};
  for_each_unit(g, all, [&](const StageParameters& unit, int index) {
    u.params[static_cast<size_t>(index)] = unit.total();
    if (index >= 1 && index <= body) largest_layer = std::max(largest_layer, unit.total());
  });
  u.slices.assign(u.params.size(), 1);
  if (largest_layer > 0)
    for (size_t i : {size_t{0}, u.params.size() - 1})
      u.slices[i] =
          static_cast<int>(std::clamp(std::ceil(u.params[i] / largest_layer), 1.0, 1024.0));
  return u;
}

Strategy MaskFamily::at(size_t k) const {
  Strategy s = first;
  for (size_t i = 0; i < k && i < order.size(); ++i) s.zero_layers[order[i]] = 0;
  return s;
}

std::vector<MaskFamily> sharding_families(const Graph& g, const Strategy& shape, int base,
                                          const Software& sw, const StageLayout& layout,
                                          double capacity) {
  const ShardingUnits units = sharding_units(g);
  const size_t n = units.params.size();
  MaskFamily f;
  // Layers in the order they are replicated: the largest first (the most gathers saved per
  // mask entry), ties in model order.
  f.order.resize(n - 2);
  std::iota(f.order.begin(), f.order.end(), size_t{1});
  std::stable_sort(f.order.begin(), f.order.end(),
                   [&](size_t a, size_t b) { return units.params[a] > units.params[b]; });
  f.first = shape;
  f.first.zero = base;
  // A pinned unit's mark: 0 replicated, 1 sharded whole, 2 sharded in its slices.
  auto pinned_mark = [&](int choice, size_t unit) {
    return choice == 0 ? 0 : choice == 1 ? 1 : units.slices[unit];
  };
  auto fits = [&](const Strategy& t) {
    return peak_stage_memory(g, t, sw, layout).total() <= capacity;
  };
  std::vector<MaskFamily> out;
  const size_t layers = f.order.size();
  // A tied head's projection is the embedding's table: marked alike.
  bool tied = false;
  for (const Block& b : g.blocks)
    tied = tied || (b.pin == Block::Pin::last_stage && b.tied_params > 0);
  for (int embedding = 0; embedding < 3; ++embedding)
    for (int head = 0; head < 3; ++head) {
      // Slicing a unit gathered whole already is no choice.
      if ((embedding == 2 && units.slices.front() == 1) || (head == 2 && units.slices.back() == 1))
        continue;
      if (tied && (embedding == 0) != (head == 0)) continue;
      f.first.zero_layers.assign(n, 1);
      f.first.zero_layers.front() = pinned_mark(embedding, 0);
      f.first.zero_layers.back() = pinned_mark(head, n - 1);
      if (!fits(f.first)) continue;
      // Memory grows with the layers replicated (each adds its weights and gradients beyond
      // a shard); replicating the last sharded ones also frees the gathered peak, so all of
      // them is tried on its own.
      f.most = 0;
      if (fits(f.at(layers))) {
        f.most = layers;
      } else {
        size_t hi = layers;
        while (f.most + 1 < hi) {
          const size_t mid = (f.most + hi) / 2;
          (fits(f.at(mid)) ? f.most : hi) = mid;
        }
      }
      out.push_back(f);
    }
  return out;
}

Strategy fastest_mask(const MaskFamily& f, const std::function<double(const Strategy&)>& seconds) {
  std::vector<double> known(f.most + 1, -1);
  auto at = [&](size_t k) {
    if (known[k] < 0) known[k] = seconds(f.at(k));
    return known[k];
  };
  size_t best = 0;
  auto visit = [&](size_t k) {
    if (at(k) < at(best)) best = k;
  };
  visit(f.most);
  const size_t step = std::max<size_t>(1, f.most / 8);
  for (size_t k = step; k < f.most; k += step) visit(k);
  for (size_t h = step / 2; h >= 1; h /= 2) {
    const size_t around = best;
    if (around >= h) visit(around - h);
    if (around + h <= f.most) visit(around + h);
  }
  return f.at(best);
}

}  // namespace shardcost
