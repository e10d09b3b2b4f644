#include "memory.h"

#include <algorithm>
#include <vector>

namespace shardcost {

StageParameters stage_parameters(const Graph& g, const StageSpan& span) {
  StageParameters out;
  for_each_body(g, span, [&](const Block& b, int copies) {
    out.dense += copies * b.dense_params;
    out.expert += copies * b.expert_params;
    out.fp8 += copies * b.fp8_params;
    out.blocks += copies;
    out.tensors += copies * b.param_tensors;
    out.largest_tensor = std::max(out.largest_tensor, b.largest_tensor_params);
  });
  for_each_pinned(g, span, [&](const Block& b) {
    out.dense += b.dense_params;
    out.expert += b.expert_params;
    out.blocks += 1;
    out.tensors += b.param_tensors;
    out.largest_tensor = std::max(out.largest_tensor, b.largest_tensor_params);
    // Tied weights are held once where the first-stage block they share sits here too.
    if (b.tied_params > 0 && !(b.pin == Block::Pin::last_stage && span.first))
      out.dense += b.tied_params;
  });
  return out;
}

ParameterBytes parameter_bytes(const Strategy& s, const Software& sw) {
  ParameterBytes b;
  const DType p = s.precision.value_or(sw.precision);
  if (p == DType::fp32 || p == DType::tf32) {
    b.weight = 4, b.gradient = 4, b.optimizer = 8;
  } else {
    b.gradient = sw.grad_bytes;
    // The quantized copy of each quantized linear's weight and its transpose (column-wise copy).
    if (is_quantized(p) && !sw.fp8_params) b.fp8_copy = 2 * dtype_bytes(p);
  }
  return b;
}

int effective_zero(const Strategy& s, const Software& sw) {
  return s.pp > 1 && s.zero == 3 && sw.fsdp_pipeline_once ? 1 : s.zero;
}

MemoryBreakdown stage_memory(const Graph& g, const Strategy& s, const Software& sw,
                             const StageSpan& span, int stage, double in_flight_given) {
  const StageParameters p = stage_parameters(g, span);
  const double dense_shards = s.dp * s.cp;
  const double expert_shards = s.expert_dp();
  const int zero = effective_zero(s, sw);
  auto sharded = [&](int from_stage) {
    return zero >= from_stage ? p.dense / dense_shards + p.expert / expert_shards : p.total();
  };
  const ParameterBytes pb = parameter_bytes(s, sw);
  MemoryBreakdown mem;
  mem.weights = pb.weight * sharded(3);
  if (zero >= 3) {
    if (sw.zero3_gathers == ShardedCalls::per_layer) {
      // Two body units' full weights gathered at a time (the one computing and the prefetch).
      const double units = std::max(1, span.units);
      mem.weights += pb.weight * 2 * p.total() / units;
    } else {
      // DeepSpeed: the sub-module computing (at most its largest tensor) and the prefetch
      // bucket (stage3_prefetch_bucket_size).
      mem.weights += pb.weight * (p.largest_tensor + sw.prefetch_bucket_params);
    }
  }
  // FP8 copies follow the weights' sharding (ZeRO-3 casts the gathered ones).
  mem.weights += pb.fp8_copy * (zero >= 3 ? p.fp8 / dense_shards : p.fp8);
  mem.gradients = pb.gradient * sharded(2);
  mem.optimizer = pb.optimizer * sharded(1);

  // Micro-batches in flight, in units of the stage's whole activations, as Megatron's
  // schedules run: stage i warms up with (pp-i-1)*2 + (v-1)*pp model-chunk forwards
  // (interleaved; pp-i-1 without interleaving), capped at the m*v there are, and holds one
  // more in the steady state; a chunk is 1/v of the stage. Without interleaving that is
  // min(pp-i, m); on the first stage (p(v+1)-1)/v = p(1 + (p-1)/(p v)), Korthikanti et al.
  // 2022's factor (Sec. 4.2.3); on the last, (p(v-1)+1)/v, nearly p, not 1.
  const int64_t v = s.vpp;
  const int64_t chunks = static_cast<int64_t>(s.micro_batches()) * v;
  const int64_t warmup = v > 1 ? (s.pp - stage - 1) * 2 + (v - 1) * s.pp : s.pp - stage - 1;
  const double in_flight = in_flight_given > 0 ? in_flight_given
                                               : static_cast<double>(std::min(warmup + 1, chunks)) /
                                                     static_cast<double>(v);
  const auto mode = static_cast<size_t>(s.recompute);
  double recomputed_peak = 0;  // the unit being recomputed materialises its full activations
  for_each_body(g, span, [&](const Block& b, int copies) {
    mem.activations += b.kept_bytes[mode] * copies * in_flight;
    recomputed_peak = std::max(recomputed_peak, b.kept_bytes[0]);
  });
  if (s.recompute != Recompute::none) mem.activations += recomputed_peak;
  for_each_pinned(g, span, [&](const Block& b) {
    mem.activations += in_flight * b.kept_bytes[0] + b.working_bytes;
  });
  mem.buffers =
      MemoryModel::kFixedBytes +
      MemoryModel::kFragmentation * (mem.weights + mem.gradients + mem.optimizer + mem.activations);
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
    // Each of the two stages' share of pp + 1 micro-batches (no more than the step has).
    const double in_flight = std::min(s.pp + 1, s.micro_batches()) / 2.0;
    for (int stage = 0; stage < s.pp / 2; ++stage) {
      const MemoryBreakdown a = stage_memory(g, s, sw, layout.span(stage), stage, in_flight);
      const int mirror = s.pp - 1 - stage;
      const MemoryBreakdown b = stage_memory(g, s, sw, layout.span(mirror), mirror, in_flight);
      MemoryBreakdown both;
      both.weights = a.weights + b.weights;
      both.gradients = a.gradients + b.gradients;
      both.optimizer = a.optimizer + b.optimizer;
      both.activations = a.activations + b.activations;
      both.buffers = MemoryModel::kFixedBytes +
                     MemoryModel::kFragmentation *
                         (both.weights + both.gradients + both.optimizer + both.activations);
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
