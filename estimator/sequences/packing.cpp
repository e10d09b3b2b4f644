// One global batch of sequences spread over the data-parallel ranks and packed into
// micro-batches, as frameworks do it (docs/variable-length.md).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "shardcost/varlen.h"

namespace shardcost {
namespace {

void add(MicroBatch& mb, int64_t length, const AttentionTiling& tiling) {
  const double s = static_cast<double>(length);
  mb.sequences += 1;
  mb.tokens += s;
  mb.squared += s * s;
  mb.attention += attention_work(length, tiling);
}

// One rank's sequences, in run order, into micro-batches: mbs at a time, or (budget > 0)
// in order while they fit (the sampler's order), or first fit after sorting longest first.
void pack_rank(const std::vector<int64_t>& seqs, int mbs, int budget, bool first_fit,
               const AttentionTiling& tiling, std::vector<MicroBatch>& out) {
  out.clear();
  if (budget <= 0) {
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (i % static_cast<size_t>(mbs) == 0) out.emplace_back();
      add(out.back(), seqs[i], tiling);
    }
    return;
  }
  for (int64_t s : seqs) {
    MicroBatch* into = nullptr;
    if (first_fit) {
      for (auto& mb : out)
        if (mb.tokens + static_cast<double>(s) <= budget) {
          into = &mb;
          break;
        }
    } else if (!out.empty() && out.back().tokens + static_cast<double>(s) <= budget) {
      into = &out.back();
    }
    if (!into) into = &out.emplace_back();
    add(*into, s, tiling);
  }
}

}  // namespace

double attention_work(int64_t length, const AttentionTiling& tiling) {
  const double tile = kAttentionTile, s = static_cast<double>(length);
  if (length <= 0) return 0;
  if (tiling.cp <= 1 || tiling.kind != CpKind::ring) {
    const double nb = std::ceil(s / tile);
    return tile * tile * nb * (nb + 1);  // 2 tile^2 per tile, nb (nb + 1) / 2 tiles
  }
  const double k = tiling.cp;
  const double nb = std::ceil(s / (2 * k) / tile);
  const double per_gpu = nb * (nb + 1) + (2 * k - 1) * nb * nb;  // tiles on each GPU
  return 2 * tile * tile * per_gpu * k;
}

void pack_batch(const std::vector<int64_t>& lengths, int dp, int mbs, int max_tokens,
                Balance balance, const SequenceCost& cost, PackedBatch& out,
                const AttentionTiling& tiling) {
  out.ranks.resize(static_cast<size_t>(dp));
  thread_local std::vector<std::vector<int64_t>> share;
  share.assign(static_cast<size_t>(dp), {});
  const size_t n = lengths.size();
  if (balance == Balance::none) {
    // As drawn: each rank its consecutive slice (a distributed sampler's shard of the batch).
    const size_t per = n / static_cast<size_t>(dp);
    for (size_t i = 0; i < n; ++i)
      share[std::min(i / std::max<size_t>(per, 1), static_cast<size_t>(dp) - 1)].push_back(
          lengths[i]);
  } else {
    thread_local std::vector<int64_t> sorted;
    sorted = lengths;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    if (balance == Balance::count) {
      // Equal counts, dealt longest first in a snake (0..dp-1, dp-1..0, ...).
      for (size_t i = 0; i < n; ++i) {
        const size_t round = i / static_cast<size_t>(dp), at = i % static_cast<size_t>(dp);
        share[round % 2 == 0 ? at : static_cast<size_t>(dp) - 1 - at].push_back(sorted[i]);
      }
    } else {
      // Longest first to the rank with the least so far: tokens, or the priced work.
      thread_local std::vector<double> load;
      load.assign(static_cast<size_t>(dp), 0);
      for (int64_t s : sorted) {
        const size_t r =
            static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        const double x = static_cast<double>(s);
        load[r] += balance == Balance::tokens ? x : cost.per_token * x + cost.per_square * x * x;
        share[r].push_back(s);
      }
    }
  }
  for (size_t r = 0; r < share.size(); ++r)
    pack_rank(share[r], mbs, max_tokens, balance != Balance::none, tiling, out.ranks[r]);
}

}  // namespace shardcost
