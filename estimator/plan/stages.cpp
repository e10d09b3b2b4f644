#include "stages.h"

#include <algorithm>

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
