#pragma once
// Variable-length data: a distribution of sequence lengths, global batches drawn from it,
// their sequences spread over data-parallel ranks and packed into micro-batches, and the
// step priced per micro-batch (docs/variable-length.md).
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/estimator.h"
#include "shardcost/workload.h"

namespace shardcost {

// Sequence lengths in tokens: a measured sample (a file) or a named parametric form.
class LengthDistribution {
 public:
  // One length per line, or CSV with a header naming `length` and `count`; a name ending in
  // .gz is read through zlib. Bad input: one InputError with the file and the line.
  static LengthDistribution load(const std::string& path);
  // lognormal:median=1024,sigma=1.5[,min=128,max=8192] (sigma: the standard deviation of the
  // log length), uniform:min=128,max=8192, fixed:4096.
  static LengthDistribution parse(std::string_view spec);
  static LengthDistribution fixed(int64_t length);

  std::string describe() const;
  bool is_fixed() const { return kind_ == Kind::fixed; }
  int64_t min_length() const { return min_; }
  int64_t max_length() const { return max_; }
  double median() const;
  // One length; the generator's raw output is all it uses, so draws are the same everywhere.
  int64_t draw(std::mt19937_64&) const;

 private:
  enum class Kind { sample, lognormal, uniform, fixed };
  Kind kind_ = Kind::fixed;
  std::string source_;
  std::vector<int64_t> values_;       // sample: distinct lengths, ascending
  std::vector<uint64_t> cumulative_;  // sample: counts up to and including each value
  double log_median_ = 0, sigma_ = 0;
  int64_t min_ = 1, max_ = 1;
};

enum class LongSequences { drop, truncate };

// The attention work one sequence costs on each GPU of its context-parallel group, in
// squared tokens as Workload::graph_of takes them (divided by cp there): what varlen flash
// attention computes, whole tiles of kAttentionTile queries by kAttentionTile keys, the
// causal ones on and below the diagonal. Unsplit (cp 1, or Ulysses, which splits the heads):
// nb (nb + 1) / 2 tiles, nb = ceil(s / tile). Ring attention (cp > 1) splits the sequence in
// 2 cp chunks of c = s / 2cp tokens, each GPU holding two; over the ring's steps each GPU's
// chunks meet themselves (causal: nb (nb + 1) / 2 tiles each) and 2 cp - 1 other chunks
// (nb^2 tiles each), nb = ceil(c / tile). Long sequences tend to s^2 either way; a sequence
// shorter than a tile costs a whole one, and ring attention's short chunks many.
struct AttentionTiling {
  int cp = 1;
  CpKind kind = CpKind::ring;
};
// FlashAttention-2/3's and cuDNN's query and key block for head dimensions up to 128 on
// Ampere and Hopper (FA3's tile_size_fwd_sm90: 128 x 128 for head dim 128; FA2 128 x 64-128).
constexpr double kAttentionTile = 128;
double attention_work(int64_t length, const AttentionTiling&);

// One global batch of lengths spread over dp ranks and packed into micro-batches.
struct PackedBatch {
  std::vector<std::vector<MicroBatch>> ranks;  // per data-parallel rank, in run order
};
// The work a sequence of s tokens costs, for Balance::cost: per_token s + per_square s^2.
struct SequenceCost {
  double per_token = 1, per_square = 0;
};
// Spreads `lengths` (one global batch) over dp ranks and packs each rank's share: mbs
// sequences per micro-batch, or (max_tokens > 0) as many as fit in the token budget.
// Each micro-batch's attention work is counted under `tiling` (MicroBatch::attention).
void pack_batch(const std::vector<int64_t>& lengths, int dp, int mbs, int max_tokens, Balance,
                const SequenceCost&, PackedBatch& out, const AttentionTiling& tiling = {});

struct VarlenOptions {
  LengthDistribution lengths = LengthDistribution::fixed(1);
  uint64_t seed = 0;
  LongSequences long_sequences = LongSequences::drop;
  int batches = 100;  // global batches sampled
  // > 0: global batches of this many tokens (sequences drawn until they reach it), instead of
  // the strategy's gbs sequences.
  int64_t batch_tokens = 0;
  // > 1: every sequence padded to a multiple of this many tokens (packing with padding, as
  // kernels that want aligned lengths do); the padding is priced, not counted in tokens/s.
  int pad_to = 0;
};

struct VarlenEstimate {
  Estimate estimate;  // step_time_s: the mean over the sampled batches; figures from it
  double step_time_p10_s = 0, step_time_p90_s = 0;
  double imbalance = 1;  // mean over batches of the slowest rank's work over the ranks' mean
  // The static baseline: the same plan with sequences spread as drawn (balance=none); for
  // cp=dynamic, the smallest power-of-two CP that fits the longest kept sequence. 0: none
  // can run (baseline says why).
  double baseline_step_time_s = 0;
  std::string baseline;                           // its strategy keys, or why there is none
  double tokens_per_step = 0;                     // mean kept tokens per global batch
  int64_t drawn = 0, dropped = 0, truncated = 0;  // sequences
  int64_t longest = 0;                            // kept, tokens
  int max_micro_batches = 0;                      // on the busiest rank of any batch
  std::vector<double> step_times_s;               // per sampled global batch, in draw order
  // cp=dynamic: how many of the kept sequences ran at each CP size (ascending).
  std::vector<std::pair<int, int64_t>> cp_sequences;
};

// Prices the strategy on global batches drawn from the distribution (options.seed makes it
// deterministic). Throws InputError for what cannot be priced (a token budget below the
// longest kept sequence, unfused attention with packed sequences, ...).
VarlenEstimate estimate_varlen(const Workload&, const Cluster&, const Strategy&,
                               const VarlenOptions&, const EstimateOptions& = {});
VarlenEstimate estimate_varlen(const Model&, const Cluster&, const Strategy&, const VarlenOptions&,
                               const EstimateOptions& = {});

// rank on variable-length data: the fixed-length search (at seq_len) keeps its best plans that
// fit in memory, and each is priced on the sampled batches with every variable-length choice
// that keeps its memory (a token budget per GPU of the fixed micro-batch's tokens, mbs*seq_len/cp;
// balance none, tokens and cost; with cp > 1 also cp_kind=ulysses and cp=dynamic,cp_max=cp),
// best mean step first.
struct VarlenRank {
  std::vector<VarlenEstimate> best;
  int64_t fixed_evaluated = 0;  // candidates the fixed-length search priced
  int64_t evaluated = 0;        // variable-length estimates made
  double elapsed_s = 0;
};
VarlenRank rank_varlen(const Workload&, const Cluster&, const RankOptions&, const VarlenOptions&);
VarlenRank rank_varlen(const Model&, const Cluster&, const RankOptions&, const VarlenOptions&);

}  // namespace shardcost
