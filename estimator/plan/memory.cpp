#include "memory.h"

#include <algorithm>
#include <vector>

#include "shardcost/workload.h"

namespace shardcost {

namespace {

// A frozen block's weights that take no gradient: all it holds but its adapters (LoRA).
double frozen_params(const Block& b) {
  return b.frozen ? b.dense_params - b.adapter_params : 0;
}

}  // namespace

StageParameters unit_of(const Block& b) {
  StageParameters p;
  p.dense = b.dense_params;
  p.expert = b.expert_params;
  p.fp8 = b.fp8_params;
  p.frozen = frozen_params(b);
  p.blocks = 1;
  p.tensors = b.param_tensors;
  p.largest_tensor = b.largest_tensor_params;
  p.vector_tensors = b.vector_tensors;
  p.vector_params = b.vector_params;
  p.largest_vector = b.largest_vector_params;
  return p;
}

StageParameters pinned_unit(const Graph& g, Block::Pin pin, const StageSpan& span) {
  StageParameters p;
  for (const Block& b : g.blocks) {
    if (b.pin != pin) continue;
    p.dense += b.dense_params;
    p.expert += b.expert_params;
    p.frozen += frozen_params(b);
    p.blocks += 1;  // (their FP8 weights are not counted: pinned blocks were priced so)
    p.tensors += b.param_tensors;
    p.largest_tensor = std::max(p.largest_tensor, b.largest_tensor_params);
    p.vector_tensors += b.vector_tensors;
    p.vector_params += b.vector_params;
    p.largest_vector = std::max(p.largest_vector, b.largest_vector_params);
    // Tied weights are held once where the first-stage block they share sits here too.
    if (b.tied_params > 0 &&
        !(b.pin == Block::Pin::last_stage && (span.first || span.shares_first))) {
      p.dense += b.tied_params;
      if (b.frozen) p.frozen += b.tied_params;
    }
  }
  return p;
}

StageParameters stage_parameters(const Graph& g, const StageSpan& span) {
  StageParameters out;
  for_each_unit_run(g, span,
                    [&](const StageParameters& unit, int, int n) { add_parameters(out, unit, n); });
  return out;
}

void add_parameters(StageParameters& to, const StageParameters& more, int copies) {
  to.dense += copies * more.dense;
  to.expert += copies * more.expert;
  to.fp8 += copies * more.fp8;
  to.frozen += copies * more.frozen;
  to.blocks += copies * more.blocks;
  to.tensors += copies * more.tensors;
  to.largest_tensor = std::max(to.largest_tensor, more.largest_tensor);
  to.vector_tensors += copies * more.vector_tensors;
  to.vector_params += copies * more.vector_params;
  to.largest_vector = std::max(to.largest_vector, more.largest_vector);
}

void add_shards(StageShards& to, const StageShards& more) {
  add_parameters(to.held, more.held);
  add_parameters(to.sharded, more.sharded);
  to.gather_calls += more.gather_calls;
  to.reduce_calls += more.reduce_calls;
  to.persistent_tensors += more.persistent_tensors;
  to.persistent_params += more.persistent_params;
  to.recompute_regathers += more.recompute_regathers;
  to.recompute_regather_params += more.recompute_regather_params;
  to.gathered_peak = std::max(to.gathered_peak, more.gathered_peak);
  to.gathered_peak_fp8_half = std::max(to.gathered_peak_fp8_half, more.gathered_peak_fp8_half);
  to.largest_slice_tensor = std::max(to.largest_slice_tensor, more.largest_slice_tensor);
  if (to.held_first.total() <= 0) to.held_first = more.held_first;
  if (to.sharded_first.total() <= 0) to.sharded_first = more.sharded_first;
}

StageShards stage_shards(const Graph& g, const Strategy& s, const Software& sw,
                         const StageSpan& span) {
  StageShards out;
  const int zero = effective_zero(s, sw);
  const bool masked = !s.zero_layers.empty();
  out.held_zero = masked ? s.zero : std::min(zero, 2);
  // The mark of parameter unit `index` (for_each_unit's): 0 held, k >= 1 sharded in k slices.
  auto mark = [&](int index) {
    if (!masked) return zero >= 3 ? 1 : 0;
    return index < static_cast<int>(s.zero_layers.size())
               ? s.zero_layers[static_cast<size_t>(index)]
               : 0;
  };
  const bool per_layer = sw.zero3_gathers == ShardedCalls::per_layer;
  double previous = 0;       // the slice gathered before, in execution order (0: a held unit)
  double previous_half = 0;  // the same, its FP8 linears' weights counted half
  // n consecutive units alike, marked `slices`: what n calls of one unit each would add.
  auto add_units = [&](const StageParameters& p, int slices, int n) {
    if (slices == 0) {
      if (out.held.total() <= 0) out.held_first = p;
      add_parameters(out.held, p, n);
      previous = previous_half = 0;
      return;
    }
    if (out.sharded.total() <= 0) out.sharded_first = p;
    add_parameters(out.sharded, p, n);
    // A per-tensor stack with a persistence threshold keeps a unit's vectors whole where the
    // largest is under it (at hidden sizes past 25k a GPT's fc1 bias is not, and the unit's
    // vectors are all taken as gathered: an approximation, a tensor at a time would split
    // them).
    const bool persist = !per_layer && sw.zero3_persistence_params > 0 && p.vector_tensors > 0 &&
                         p.largest_vector < sw.zero3_persistence_params;
    const int kept = persist ? p.vector_tensors : 0;
    out.gather_calls += n * (per_layer ? p.blocks * slices : p.tensors - kept + (slices - 1));
    out.reduce_calls += n * (per_layer ? p.blocks * slices : p.tensors + (slices - 1));
    out.persistent_tensors += n * kept;
    out.persistent_params += persist ? n * p.vector_params : 0;
    // The slice computing beside the one gathered before it, or two of this run's.
    auto peak = [&](double& at, double& before, double piece) {
      at = std::max(at, before + piece);
      if (slices > 1 || n > 1) at = std::max(at, 2 * piece);
      before = piece;
    };
    peak(out.gathered_peak, previous, p.total() / slices);
    peak(out.gathered_peak_fp8_half, previous_half, (p.total() - 0.5 * p.fp8) / slices);
    out.largest_slice_tensor = std::max(out.largest_slice_tensor, p.largest_tensor / slices);
  };
  // Unmasked, every unit of a run has one mark: a run at a time (the search prices this for
  // every stage of every plan); a per-layer mask, a unit at a time.
  for_each_unit_run(g, span, [&](const StageParameters& unit, int index, int n) {
    if (!masked) return add_units(unit, mark(index), n);
    for (int i = 0; i < n; ++i) add_units(unit, mark(index + i), 1);
  });
  if (!per_layer && sw.zero3_reuse_distance_params > 0 && s.recompute == Recompute::full &&
      (zero >= 3 || masked)) {
    // Body units on this stage, in order (for_each_unit_run's numbering: 1..L).
    int unit = span.first_unit;
    for_each_body(g, span, [&](const Block& b, int copies) {
      const int from = unit;
      unit += copies;
      if (recompute_of(b, s) != Recompute::full) return;
      int sharded = 0;
      for (int i = from; i < unit; ++i) sharded += mark(1 + i) > 0 ? 1 : 0;
      if (sharded == 0) return;
      const ReuseRegathers r = recompute_regathers(b, sw.zero3_reuse_distance_params);
      out.recompute_regathers += sharded * r.tensors;
      out.recompute_regather_params += sharded * r.params;
    });
  }
  return out;
}

ReuseRegathers recompute_regathers(const Block& b, double reuse_distance) {
  // The block's linears in forward order, each one module's weight (the attention core's
  // batched GEMMs hold none). Recomputed, linear i runs, then those after it, then their
  // backwards in reverse, then its own: the trace between its two uses holds every later
  // linear twice. DeepSpeed counts the modules' whole elements (ds_numel: a tensor-parallel
  // rank's shard as that rank holds it); norms and biases, tiny, are left out of the sum.
  ReuseRegathers out;
  double later = 0;  // the weights after linear i, summed from the block's end
  for (auto op = b.ops.rbegin(); op != b.ops.rend(); ++op) {
    if (op->kind != OpKind::gemm || op->core_attention) continue;
    const double weight = static_cast<double>(op->gemm.n) * static_cast<double>(op->gemm.k) *
                          static_cast<double>(op->gemm.batch);
    // The experts' weights go over their own group: counted in the distance, not regathered
    // here (DeepSpeed of 2021 ran no expert parallelism under ZeRO-3).
    if (2 * later >= reuse_distance && !op->per_expert_kernels) {
      out.tensors += 1;
      out.params += weight;
    }
    later += weight;
  }
  return out;
}

ParameterBytes parameter_bytes(const Strategy& s, const Software& sw) {
  ParameterBytes b;
  const DType p = s.precision.value_or(sw.precision);
  if (p == DType::fp32 || p == DType::tf32) {
    b.weight = 4, b.gradient = 4, b.optimizer = 8;
  } else {
    b.gradient = p == DType::fp16 && sw.fp16_grads ? 2 : sw.grad_bytes;
    if (sw.bf16_optimizer_moments) b.optimizer = 4 + 2 + 2;  // fp32 master, bf16 moments
    // The quantized copies of each quantized linear's weight, as its casts write them
    // (Numerics::copies: with its transpose, or one where FP8 GEMMs take either layout).
    // torchao keeps none: it casts each weight as a GEMM takes it.
    if (is_quantized(p) && !sw.fp8_params && !s.torchao.active)
      b.fp8_copy = numerics(s).copies * dtype_bytes(p);
  }
  return b;
}

int effective_zero(const Strategy& s, const Software& sw) {
  return s.pp > 1 && s.zero == 3 && sw.fsdp_pipeline_once ? 1 : s.zero;
}

MemoryBreakdown stage_memory(const Graph& g, const Strategy& s, const Software& sw,
                             const StageSpan& given_span, int stage, double in_flight_given) {
  const StageSpan span = scheduled(given_span, s.schedule);
  const StageShards p = stage_shards(g, s, sw, span);
  const double dense_shards = s.dp * s.cp;
  const double expert_shards = s.expert_dp();
  // What one GPU holds of a part: all of it, or its shard.
  auto held = [&](const StageParameters& part, bool shard) {
    return shard ? part.dense / dense_shards + part.expert / expert_shards : part.total();
  };
  const int z = p.held_zero;
  const ParameterBytes pb = parameter_bytes(s, sw);
  MemoryBreakdown mem;
  mem.weights = pb.weight * (held(p.held, false) + held(p.sharded, true));
  if (p.sharded.total() > 0) {
    if (sw.zero3_gathers == ShardedCalls::per_layer) {
      // The unit computing and the next one's prefetch, gathered whole (or a slice of each);
      // under FSDP2's float8 all-gather the float8 linears' unsharded weights are float8
      // (torchao's fsdp_post_all_gather returns the gathered float8 data), one byte each.
      mem.weights +=
          pb.weight * (s.torchao.weight_gather ? p.gathered_peak_fp8_half : p.gathered_peak);
      // Backward holds two units' gradients unsharded: the unit whose backward runs, in the
      // type its weight-gradient GEMMs write (the reduction type where they accumulate into
      // the gradient buffer, Megatron-core's FSDP; the parameters' type where autograd writes
      // them, FSDP2), and the one before it, copied into its reduce-scatter's input in the
      // reduction type and held until that reduce-scatter ends (FSDP2's foreach_reduce;
      // Megatron-core FSDP's bucket). Each as half the adjacent pair gathered_peak counts.
      // Frozen weights (LoRA) have none: the trained share of the sharded part.
      const double computed = sw.fused_grad_accumulation ? pb.gradient : pb.weight;
      const double trained = p.sharded.trainable().total() / p.sharded.total();
      mem.gradients += 0.5 * (computed + pb.gradient) * p.gathered_peak * trained;
    } else {
      // DeepSpeed: the sub-module computing (at most its largest tensor) and the prefetch
      // bucket (stage3_prefetch_bucket_size).
      mem.weights += pb.weight * (p.largest_slice_tensor + sw.prefetch_bucket_params);
      // ... and the gradients gathered for the next reduction, up to reduce_bucket_size.
      mem.gradients += pb.gradient * std::min(sw.grad_bucket_params, p.sharded.trainable().total());
    }
  }
  // FP8 copies follow the weights' sharding (ZeRO-3 casts the gathered ones).
  mem.weights += pb.fp8_copy * (p.held.fp8 + p.sharded.fp8 / dense_shards);
  // Gradients and optimizer state for the parameters that train (not LoRA's frozen weights).
  const StageParameters held_trained = p.held.trainable(), sharded_trained = p.sharded.trainable();
  mem.gradients += pb.gradient * (held(held_trained, z >= 2) + held(sharded_trained, true));
  mem.optimizer = pb.optimizer * (held(held_trained, z >= 1) + held(sharded_trained, true));

  // Micro-batches in flight, in units of the stage's whole activations, as Megatron's
  // schedules run: stage i warms up with (pp-i-1)*2 + (v-1)*pp model-chunk forwards
  // (interleaved; pp-i-1 without interleaving), capped at the m*v there are, and holds one
  // more in the steady state; a chunk is 1/v of the stage. Without interleaving that is
  // min(pp-i, m); on the first stage (p(v+1)-1)/v = p(1 + (p-1)/(p v)), Korthikanti et al.
  // 2022's factor (Sec. 4.2.3); on the last, (p(v-1)+1)/v, nearly p, not 1.
  const int64_t v = s.vpp;
  const int64_t chunks = static_cast<int64_t>(s.micro_batches()) * v;
  const int64_t warmup = v > 1 ? (s.pp - stage - 1) * 2 + (v - 1) * s.pp : s.pp - stage - 1;
  // Local updates run each micro-batch's backward right after its forward: one in flight.
  const double in_flight =
      in_flight_given > 0 ? in_flight_given
      : s.schedule == PipeSchedule::local
          ? 1.0
          : static_cast<double>(std::min(warmup + 1, chunks)) / static_cast<double>(v);
  const auto mode = static_cast<size_t>(s.recompute);
  double recomputed_peak = 0;  // the unit being recomputed materialises its full activations
  for_each_body(g, span, [&](const Block& b, int copies) {
    mem.activations += b.kept_bytes[mode] * copies * in_flight;
    recomputed_peak = std::max(recomputed_peak, b.kept_bytes[0]);
  });
  if (s.recompute != Recompute::none) mem.activations += recomputed_peak;
  // Offloaded layers (the first s.offload of the one stage) keep nothing on the GPU at the
  // peak, the end of the forward: each layer's copy leaves during the next layer's forward
  // and comes back during the backward of the layer after it.
  for_each_leading_body(g, span, s.offload, [&](const Block& b, int n) {
    mem.activations -= b.kept_bytes[mode] * n * in_flight;
  });
  // What a pinned block needs only while it runs (a loss's fp32 logits and their gradient) is
  // freed before the next one runs: the largest of them, not their sum (the main head's loss
  // and the MTP module's run one after the other, forward and backward).
  double working = 0;
  for_each_pinned(g, span, [&](const Block& b) {
    mem.activations += in_flight * b.kept_bytes[static_cast<size_t>(recompute_of(b, s))];
    // Compiled, the loss keeps the 16-bit logits and writes their gradient beside them.
    const bool fused_loss = b.te_loss_working_bytes >= 0;
    working = std::max(working, sw.cross_entropy == CrossEntropy::te && fused_loss
                                    ? b.te_loss_working_bytes
                                : sw.cross_entropy == CrossEntropy::compiled && fused_loss
                                    ? 2 * b.te_loss_working_bytes
                                    : b.working_bytes);
  });
  mem.activations += working;
  mem.buffers =
      MemoryModel::allowance(sw, mem.weights + mem.gradients + mem.optimizer + mem.activations);
  return mem;
}

MemoryBreakdown peak_stage_memory(const Graph& g, const Strategy& s, const Software& sw,
                                  const StageLayout& layout) {
  // Every stage can be the peak: a middle stage holding a layer more than the first keeps
  // nearly as many micro-batches in flight (pp - 1 against pp). With one body block, a stage
  // of the same size and position as an earlier one holds the same and keeps fewer in flight,
  // so only the first stage of each size needs pricing; otherwise all are priced.
  if (s.schedule == PipeSchedule::dualpipe) {
    MemoryBreakdown peak;
    // Device i runs stage i for the micro-batches entering at its end and stage pp-1-i for
    // those entering at the other, each direction half the step's. Each direction holds what
    // 1F1B holds at that position: pp - i micro-batches of stage i, i + 1 of stage pp-1-i,
    // pp + 1 on every device (deepseek-ai/DualPipe, dualpipe.py's step(): rank 0 runs 14
    // forwards of its first stage, then one of each, and from then on one backward per
    // forward of each; the README's "PP+1"). So the device holding the first stage holds
    // the last stage's activations (the head, its logits, the MTP module) once, not half of
    // pp + 1 times.
    const int per_direction = std::max(1, s.micro_batches() / 2);
    for (int stage = 0; stage < s.pp / 2; ++stage) {
      const StageSpan span = layout.span(stage);
      const MemoryBreakdown a =
          stage_memory(g, s, sw, span, stage, std::min(s.pp - stage, per_direction));
      const int mirror = s.pp - 1 - stage;
      // DeepSeek-V3's MTP module and its main head share the embedding and output head
      // physically with the first stage on this device (arXiv:2412.19437 Sec. 3.2.3).
      StageSpan mirror_span = layout.span(mirror);
      mirror_span.shares_first = span.first && mirror_span.last;
      const MemoryBreakdown b =
          stage_memory(g, s, sw, mirror_span, mirror, std::min(stage + 1, per_direction));
      MemoryBreakdown both;
      both.weights = a.weights + b.weights;
      both.gradients = a.gradients + b.gradients;
      both.optimizer = a.optimizer + b.optimizer;
      both.activations = a.activations + b.activations;
      both.buffers = MemoryModel::allowance(
          sw, both.weights + both.gradients + both.optimizer + both.activations);
      if (stage == 0 || both.total() > peak.total()) peak = both;
    }
    return peak;
  }
  const bool uniform = uniform_body(g);
  MemoryBreakdown peak;
  std::vector<StageSpan> seen;
  for (int stage = 0; stage < s.pp; ++stage) {
    const StageSpan span = layout.span(stage);
    if (uniform) {
      const bool alike = std::any_of(seen.begin(), seen.end(), [&](const StageSpan& o) {
        return o.units == span.units && o.first == span.first && o.last == span.last;
      });
      if (alike) continue;
      seen.push_back(span);
    }
    const MemoryBreakdown m = stage_memory(g, s, sw, span, stage);
    if (stage == 0 || m.total() > peak.total()) peak = m;
  }
  return peak;
}

}  // namespace shardcost
