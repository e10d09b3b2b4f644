#pragma once
// Per-GPU memory of a pipeline stage, from the graph's blocks: weights, gradients and
// optimizer state under ZeRO 0-3, activations kept per micro-batch in flight under the
// schedule, working memory, and an allowance. Independent of the model family.
#include <algorithm>

#include "shardcost/estimator.h"
#include "stages.h"

namespace shardcost {

// Parameters one GPU of a stage holds: the part replicated over the data-parallel group and
// the expert part replicated over the expert-data-parallel group.
struct StageParameters {
  double dense = 0;
  double expert = 0;
  double fp8 = 0;  // of both, those of FP8 linears (precision=fp8)
  // Of dense, the frozen weights (Block::frozen): held, gathered under ZeRO-3, but given no
  // gradient, optimizer state or reduction.
  double frozen = 0;
  // What a ZeRO-3 stack gathers one call at a time: body units and pinned blocks (per layer),
  // parameter tensors (per tensor), and the largest tensor.
  int blocks = 0;
  int tensors = 0;
  double largest_tensor = 0;
  // Of the tensors, the one-dimensional ones (Block::vector_tensors).
  int vector_tensors = 0;
  double vector_params = 0;
  double largest_vector = 0;
  double total() const { return dense + expert; }
  // The parameters that train: all but the frozen ones (FP8 linears are frozen ones first).
  StageParameters trainable() const {
    StageParameters t = *this;
    t.dense = std::max(0.0, dense - frozen);
    t.fp8 = std::max(0.0, fp8 - frozen);
    t.frozen = 0;
    return t;
  }
};
StageParameters stage_parameters(const Graph&, const StageSpan&);
void add_parameters(StageParameters& to, const StageParameters& more, int copies = 1);

// One copy of a body block; the first-stage (or last-stage) blocks as one unit on a stage
// spanning `span` (tied weights held once where the first stage's table sits too).
StageParameters unit_of(const Block&);
StageParameters pinned_unit(const Graph&, Block::Pin, const StageSpan&);
// Calls f(unit, index, n) for each run of n identical parameter units the span's stage holds,
// in execution order, the run's first unit at `index`: the first stage's blocks as one (index
// 0), each body block's layers on the stage (1..L), the last stage's blocks as one (L + 1; an
// auxiliary head's copy too). Strategy::zero_layers marks these units.
template <class F>
void for_each_unit_run(const Graph& g, const StageSpan& span, F&& f) {
  if (span.first) f(pinned_unit(g, Block::Pin::first_stage, span), 0, 1);
  int unit = 0;
  const int lo = span.first_unit, hi = span.first_unit + span.units;
  for (const Block& b : g.blocks) {
    if (b.pin != Block::Pin::body) continue;
    const int from = std::max(unit, lo), to = std::min(unit + b.count, hi);
    if (to > from) f(unit_of(b), 1 + from, to - from);
    unit += b.count;
  }
  if (span.last || span.aux_head)
    f(pinned_unit(g, Block::Pin::last_stage, span), g.body_units() + 1, 1);
}
// The same, one unit at a time: f(unit, index).
template <class F>
void for_each_unit(const Graph& g, const StageSpan& span, F&& f) {
  for_each_unit_run(g, span, [&](const StageParameters& unit, int index, int n) {
    for (int i = 0; i < n; ++i) f(unit, index + i);
  });
}

// A stage's parameters by how the data-parallel group holds them: `held` under the ZeRO stage
// held_zero (0-2), `sharded` ZeRO-3 style, gathered before each use. Uniform strategies put
// every unit in one of the two by effective_zero; a per-layer mask (Strategy::zero_layers)
// splits them unit by unit.
struct StageShards {
  StageParameters held, sharded;
  int held_zero = 0;
  // Per pass over the stage, the gathers of the sharded part: per-layer stacks one per unit
  // and slice (each pinned block a unit); per-tensor stacks one per tensor and extra slice.
  double gather_calls = 0;
  // Per pass, the reduce-scatters of per-tensor stacks that reduce a tensor at a time
  // (Software::zero3_list_collectives): every tensor, those persisting too.
  double reduce_calls = 0;
  // Tensors below the stack's persistence threshold (Software::zero3_persistence_params):
  // held whole, gathered once a step after the optimizer, not in the passes.
  int persistent_tensors = 0;
  double persistent_params = 0;
  // Per backward, the sharded tensors gathered a second time under full recomputation
  // (Software::zero3_reuse_distance_params): released after their recomputed forward because
  // the weights run before their backward reach the reuse distance.
  double recompute_regathers = 0;
  double recompute_regather_params = 0;
  // Parameters gathered at once, as the units run in order: the one computing and the next
  // one's prefetch (per-layer stacks); the largest tensor over its slices (per-tensor stacks).
  double gathered_peak = 0;
  // The same with the FP8 linears' weights counted half: their bytes where they are gathered in
  // one byte against the others' two (torchao's float8 all-gather under FSDP2).
  double gathered_peak_fp8_half = 0;
  double largest_slice_tensor = 0;
  // Each part's first unit in execution order (the embedding on the first stage): its bucket
  // is the last reduced after the backward and its gather the first the forward waits for.
  StageParameters held_first, sharded_first;
  double total() const { return held.total() + sharded.total(); }
};
StageShards stage_shards(const Graph&, const Strategy&, const Software&, const StageSpan&);
// Of one copy of a body block recomputed in full, the linears' weights a per-tensor stack with
// DeepSpeed's reuse distance (Software::zero3_reuse_distance_params) releases after the
// recomputed forward and gathers again for the backward.
struct ReuseRegathers {
  double tensors = 0, params = 0;
};
ReuseRegathers recompute_regathers(const Block&, double reuse_distance);
// How a block is recomputed under the strategy: the body's layers by its setting; pinned
// blocks not at all, but one whose layer follows selective recomputation (an MTP module).
inline Recompute recompute_of(const Block& b, const Strategy& s) {
  if (b.pin == Block::Pin::body) return s.recompute;
  return b.follows_selective && s.recompute == Recompute::selective ? Recompute::selective
                                                                    : Recompute::none;
}
void add_shards(StageShards& to, const StageShards& more);

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, buffers = 0;
  double total() const { return weights + gradients + optimizer + activations + buffers; }
};
// in_flight: micro-batches' activations held (0: what the 1F1B schedules hold at `stage`).
MemoryBreakdown stage_memory(const Graph&, const Strategy&, const Software&, const StageSpan&,
                             int stage, double in_flight = 0);
// The most loaded pipeline stage, over every stage: what must fit on every GPU. Under
// DualPipe a device holds stages i and pp-1-i and pp+1 micro-batches' activations between them
// (DeepSeek-V3, Table 2).
MemoryBreakdown peak_stage_memory(const Graph&, const Strategy&, const Software&,
                                  const StageLayout&);

// Bytes per parameter of the model's weights, its gradients and Adam's state. Mixed precision
// (fp16, bf16, fp8): 16-bit weights, gradients of Software::grad_bytes (fp32 main gradients
// for bf16), fp32 master weights plus Adam's two moments (12). fp32/tf32: fp32 weights and
// gradients, the two moments (8), no master copy. fp8 adds Transformer Engine's FP8 copy of
// each FP8 linear's weight and its transpose (fp8_copy, per FP8 parameter), unless the weights
// are FP8 themselves (Software::fp8_params: 1 B and a 1 B transpose, as bf16's 2 B).
struct ParameterBytes {
  double weight = 2, gradient = 4, optimizer = 12, fp8_copy = 0;
};
ParameterBytes parameter_bytes(const Strategy&, const Software&);
// The ZeRO stage the stack runs the strategy's as: FSDP2 under pipelining (torchtitan,
// Software::fsdp_pipeline_once) keeps its weights gathered and its gradients whole through the
// step, which shards and communicates as ZeRO-1 does.
int effective_zero(const Strategy&, const Software&);

struct MemoryModel {
  // The allowance (Software::memory_fixed_bytes and memory_fragmentation): CUDA context and
  // kernels (~0.5 GiB), NCCL channel buffers for several communicators, cuBLAS workspaces;
  // plus a share of the rest for caching-allocator fragmentation. Its bytes on top of the
  // modelled state and activations.
  static double allowance(const Software& sw, double modelled) {
    return sw.memory_fixed_bytes + sw.memory_fragmentation * modelled;
  }
};

}  // namespace shardcost
