// Step time and memory of one strategy: prices the layer's operators once, builds the
// pipeline schedule from per-stage micro-batch times, adds data-parallel communication and
// the optimizer step.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "layer_ops.h"
#include "memory.h"
#include "model_math.h"
#include "pricing.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

enum Part {
  kComputeForward,
  kComputeBackward,
  kComputeRecompute,
  kTpComm,
  kCpComm,
  kEpComm,
  kPpComm,
  kBubble,
  kDpComm,
  kOptimizer,
  kPartCount
};
constexpr const char* kPartNames[kPartCount] = {
    "compute_forward", "compute_backward", "compute_recompute", "tp_comm",    "cp_comm",
    "ep_comm",         "pp_p2p",           "pipeline_bubble",   "dp_comm",    "optimizer"};

// Seconds per part, with the weakest cost origin that contributed a non-zero time.
struct Times {
  std::array<double, kPartCount> s{};
  std::array<int, kPartCount> origin{};  // CostOrigin as int; kNone when nothing contributed
  // Of the communication parts, what runs during the backward pass (its own collectives and
  // a full recomputation's): with the backward and recompute compute, the window that
  // overlapped data-parallel reductions hide behind.
  double backward_comm = 0;
  static constexpr int kNone = 99;
  Times() { origin.fill(kNone); }
  void add_backward_comm(Part p, Priced x) {
    add(p, x);
    backward_comm += std::max(0.0, x.seconds);
  }
  void add(Part p, Priced x, double times = 1) {
    if (x.seconds <= 0) return;
    s[p] += x.seconds * times;
    origin[p] = std::min(origin[p], static_cast<int>(x.origin));
  }
  void add(const Times& o, double times) {
    backward_comm += o.backward_comm * times;
    for (int i = 0; i < kPartCount; ++i) {
      if (o.s[i] <= 0) continue;
      s[i] += o.s[i] * times;
      origin[i] = std::min(origin[i], o.origin[i]);
    }
  }
  double total() const {
    double t = 0;
    for (double x : s) t += x;
    return t;
  }
};

CostOrigin weakest_origin(const Times& t) {
  int o = Times::kNone;
  for (int x : t.origin) o = std::min(o, x);
  return static_cast<CostOrigin>(o == Times::kNone ? 0 : o);
}

Priced scaled(Priced p, double f) { return {p.seconds * f, p.origin}; }
// Both costs together, labelled with the weaker of their origins.
Priced combined(Priced a, Priced b) {
  return {a.seconds + b.seconds, static_cast<CostOrigin>(std::min(static_cast<int>(a.origin),
                                                                  static_cast<int>(b.origin)))};
}

struct OpCost {
  Priced fwd, bwd;
  Priced dgrad, wgrad;  // GEMMs: the input- and weight-gradient parts of bwd
  Priced regather;      // comm: the backward all-gather of a sequence-parallel input
  Part comm_part = kTpComm;
  bool is_comm = false;
  bool is_attention = false;
  bool selective = false;
};

OpCost price(const Op& op, const Pricer& pr) {
  OpCost c;
  c.selective = op.selective;
  switch (op.cls) {
    case OpClass::gemm: {
      c.fwd = pr.gemm(op.gemm);
      c.dgrad = pr.gemm(dgrad_shape(op.gemm));
      c.wgrad = pr.gemm(wgrad_shape(op.gemm));
      c.bwd = combined(c.dgrad, c.wgrad);
      c.is_attention = op.selective;
      break;
    }
    case OpClass::attention:
      c.fwd = pr.fused_attention(op.flops);
      // FlashAttention's backward recomputes the scores: 2.5x the forward matmuls.
      c.bwd = pr.fused_attention(2.5 * op.flops);
      c.is_attention = true;
      break;
    case OpClass::elementwise:
      c.fwd = pr.memory_pass(op.bytes);
      c.bwd = pr.memory_pass(op.backward_bytes);
      c.is_attention = op.selective;
      break;
    case OpClass::tp_comm:
    case OpClass::ep_comm:
      if (op.op) c.fwd = pr.collective(*op.op, op.bytes, op.group);
      if (op.backward_op) c.bwd = pr.collective(*op.backward_op, op.bytes, op.group);
      if (op.backward_regather)
        c.regather = pr.collective(CollectiveOp::all_gather, op.bytes, op.group);
      c.is_comm = true;
      c.comm_part = op.cls == OpClass::tp_comm ? kTpComm : kEpComm;
      break;
    case OpClass::cp_comm: {
      // cp-1 ring steps, each one neighbour exchange.
      const int steps = op.group.ranks - 1;
      c.fwd = scaled(pr.send_recv(op.bytes / steps, op.group.stride), steps);
      c.bwd = scaled(pr.send_recv(2 * op.bytes / steps, op.group.stride), steps);
      c.is_comm = true;
      c.comm_part = kCpComm;
      break;
    }
  }
  return c;
}

// Communication hidden behind a compute window costs what outlasts the window, plus the
// compute the NCCL kernels' SMs would have done meanwhile.
Priced behind(Priced comm, Priced window, double sm_share) {
  const double hidden = std::min(comm.seconds, window.seconds);
  return {comm.seconds - hidden + hidden * sm_share, comm.origin};
}

// Per micro-batch times of a block of ops (a layer, the embedding, the head).
Times block_times(const std::vector<Op>& ops, const Pricer& pr, Recompute recompute,
                  bool async_tp_backward) {
  // Each op priced once: an async TP collective also needs the next GEMM's weight gradient.
  thread_local std::vector<OpCost> costs;
  costs.clear();
  for (const Op& op : ops) costs.push_back(price(op, pr));
  Times t;
  Priced cp_fwd, cp_bwd, attn_fwd, attn_bwd;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const OpCost& c = costs[i];
    if (op.cls == OpClass::cp_comm) {
      cp_fwd = c.fwd;
      cp_bwd = c.bwd;
      continue;
    }
    if (c.is_comm) {
      t.add(c.comm_part, c.fwd);
      Priced bwd = c.bwd;
      Priced regather = c.regather;
      if (async_tp_backward && op.before_column_parallel && i + 1 < ops.size() &&
          ops[i + 1].cls == OpClass::gemm) {
        // The re-gather runs behind the input-gradient GEMM, the input gradient's
        // collective behind the weight-gradient GEMM.
        regather = behind(regather, costs[i + 1].dgrad, pr.nccl_sm_share());
        bwd = behind(bwd, costs[i + 1].wgrad, pr.nccl_sm_share());
      }
      t.add_backward_comm(c.comm_part, regather);
      t.add_backward_comm(c.comm_part, bwd);
      if (recompute == Recompute::full) t.add_backward_comm(c.comm_part, c.fwd);
    } else {
      t.add(kComputeForward, c.fwd);
      t.add(kComputeBackward, c.bwd);
      if (recompute == Recompute::full || (recompute == Recompute::selective && c.selective))
        t.add(kComputeRecompute, c.fwd);
      if (c.is_attention) {
        attn_fwd = combined(attn_fwd, c.fwd);
        attn_bwd = combined(attn_bwd, c.bwd);
      }
    }
  }
  // Ring attention hides the K/V exchange behind the attention of the block in hand, less
  // the SMs its communication kernels take from that attention.
  const Priced ring_fwd = behind(cp_fwd, attn_fwd, pr.nccl_sm_share());
  t.add(kCpComm, ring_fwd);
  if (recompute == Recompute::full) t.add_backward_comm(kCpComm, ring_fwd);
  t.add_backward_comm(kCpComm, behind(cp_bwd, attn_bwd, pr.nccl_sm_share()));
  return t;
}

struct Engine {
  const Model& m;
  const Cluster& c;
  const Strategy& s;
  const EstimateOptions& opt;
  const NodeGroup& g = c.groups.front();
  Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, opt.costs};

  Estimate run() {
    Estimate e;
    e.strategy = s;
    e.parameters = parameter_count(m);
    e.model_flops = model_flops_per_step(m, s.gbs);
    e.memory_capacity_bytes = g.device.memory_bytes;

    // Memory: the most loaded stage (first or last).
    const MemoryBreakdown mem = peak_stage_memory(m, s, opt.software);
    e.memory_per_gpu_bytes = mem.total();

    const Times t = step_times();
    e.step_time_s = t.total();
    const double gpus = c.total_gpus();
    e.tokens_per_s = static_cast<double>(s.gbs) * m.seq_len / e.step_time_s;
    e.tflops_per_gpu = e.model_flops / e.step_time_s / gpus / 1e12;
    e.mfu = e.model_flops / e.step_time_s / gpus /
            g.device.peak_flops[static_cast<int>(DType::bf16)];
    e.feasible = e.memory_per_gpu_bytes <= e.memory_capacity_bytes;
    if (!e.feasible) {
      constexpr double kGiB = 1024.0 * 1024 * 1024;
      e.reason = fmt::format("needs {:.1f} GiB of {:.1f} GiB", e.memory_per_gpu_bytes / kGiB,
                             e.memory_capacity_bytes / kGiB);
    }
    if (opt.breakdown) {
      for (int i = 0; i < kPartCount; ++i) {
        const int o = t.origin[i] == Times::kNone ? 0 : t.origin[i];
        e.time.push_back({kPartNames[i], t.s[i], static_cast<CostOrigin>(o)});
      }
      e.memory = {{"weights", mem.weights},
                  {"gradients", mem.gradients},
                  {"optimizer_state", mem.optimizer},
                  {"activations", mem.activations},
                  {"buffers", mem.buffers}};
    }
    return e;
  }

  Times step_times() {
    thread_local std::vector<Op> ops;
    ops.clear();
    layer_ops(m, s, opt.software.attention, ops);
    const Times layer = block_times(ops, pr, s.recompute, opt.software.async_tp_backward);
    ops.clear();
    embedding_ops(m, s, ops);
    const Times embedding = block_times(ops, pr, Recompute::none, opt.software.async_tp_backward);
    ops.clear();
    head_ops(m, s, ops);
    const Times head = block_times(ops, pr, Recompute::none, opt.software.async_tp_backward);

    const Placement place = placement(s);

    // Pipeline: each micro-batch crosses 2*vpp stage boundaries per stage (activation
    // forward, gradient backward). Megatron sends 1/tp of the activation from each tensor-
    // parallel rank over its own link (scatter-gather) and all-gathers it on arrival.
    Times p2p;
    if (s.pp > 1) {
      const double act_bytes = 2.0 * s.mbs * m.seq_len / s.cp * m.hidden;
      Priced hop = pr.send_recv(act_bytes / s.tp, place.pp_stride);
      if (!s.sp && s.tp > 1)
        hop = combined(hop, pr.collective(CollectiveOp::all_gather, act_bytes, place.tp));
      p2p.add(kPpComm, hop, 2.0 * s.vpp);
    }

    // One stage's work per micro-batch. Without fused gradient accumulation each backward
    // ends with main_grad += grad over the stage's parameters (read bf16, read and write
    // the fp32 main gradient).
    const double accumulate_bytes = 2.0 + 2.0 * opt.software.grad_bytes;
    auto stage_time = [&](int stage) {
      Times t;
      t.add(layer, stage_layers(m, s, stage));
      if (stage == 0) t.add(embedding, 1);
      if (stage == s.pp - 1) t.add(head, 1);
      t.add(p2p, 1);
      if (!opt.software.fused_grad_accumulation)
        t.add(kComputeBackward,
              pr.memory_pass(accumulate_bytes * stage_parameters(m, s, stage).total()));
      return t;
    };

    // Stages differ only in their layer count (middle stages take the remainder first) and
    // in the embedding and head: price each kind once.
    const Times first = stage_time(0);
    const Times* slowest = &first;
    double sum_stages = first.total();
    Times last, middle_more, middle_less;
    if (s.pp > 1) {
      last = stage_time(s.pp - 1);
      sum_stages += last.total();
      if (last.total() > slowest->total()) slowest = &last;
    }
    if (s.pp > 2) {
      const int more = std::min(m.layers % s.pp, s.pp - 2);  // middle stages with one extra layer
      middle_more = stage_time(1);
      middle_less = stage_time(s.pp - 2);
      sum_stages += more * middle_more.total() + (s.pp - 2 - more) * middle_less.total();
      const Times* middle = more > 0 ? &middle_more : &middle_less;
      if (middle->total() > slowest->total()) slowest = middle;
    }

    const int micro_batches = s.micro_batches();
    Times step;
    step.add(*slowest, micro_batches);
    // Fill and drain: every other stage's work once, shortened by interleaving.
    const double bubble = (sum_stages - slowest->total()) / s.vpp;
    step.add(kBubble, {bubble, weakest_origin(*slowest)});

    add_data_parallel(step, *slowest, micro_batches);
    add_optimizer(step);
    return step;
  }

  void add_data_parallel(Times& step, const Times& stage, int micro_batches) {
    const Placement place = placement(s);
    const StageParameters p = stage_parameters(m, s, 0);
    const double gbytes = opt.software.grad_bytes;
    const double stage_bwd =
        stage.s[kComputeBackward] + stage.s[kComputeRecompute] + stage.backward_comm;
    const double stage_fwd = stage.s[kComputeForward];

    auto reduce = [&](CollectiveOp op, double params_dense, double params_expert) {
      Priced dense = pr.collective(op, params_dense * gbytes, place.dp_cp);
      Priced expert = pr.collective(op, params_expert * gbytes, place.expert_dp);
      return combined(dense, expert);
    };
    auto gather = [&](double params_dense, double params_expert) {
      Priced dense = pr.collective(CollectiveOp::all_gather, params_dense * 2, place.dp_cp);
      Priced expert = pr.collective(CollectiveOp::all_gather, params_expert * 2, place.expert_dp);
      return combined(dense, expert);
    };
    // Collectives that share one compute window (a forward, a backward) share its cover:
    // what outlasts the window is exposed, and the hidden part still costs the compute that
    // the NCCL kernels' SMs would have done.
    struct Window {
      explicit Window(double window_s) : seconds(window_s) {}
      double seconds;
      Priced hidden_comm;   // overlapped collectives, summed
      Priced exposed_comm;  // collectives the software does not overlap
      void add(Priced comm, bool overlapped) {
        Priced& slot = overlapped ? hidden_comm : exposed_comm;
        slot = combined(slot, comm);
      }
    };
    const double sm_share = pr.nccl_sm_share();
    auto exposed = [sm_share](const Window& w) {
      const double hidden = std::min(w.hidden_comm.seconds, w.seconds);
      const Priced overlapped{w.hidden_comm.seconds - hidden + hidden * sm_share,
                              w.hidden_comm.origin};
      return combined(overlapped, w.exposed_comm);
    };
    const bool overlap = opt.software.overlap_grad_reduce;
    const bool overlap_gather = opt.software.overlap_param_gather;

    Window every_forward(stage_fwd), every_backward(stage_bwd);  // once per micro-batch
    Window last_backward(stage_bwd), next_forward(stage_fwd);    // once per step
    if (s.zero <= 1) {
      // Gradients reduced once per step, behind the last micro-batch's backward.
      const CollectiveOp op = s.zero == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
      last_backward.add(reduce(op, p.dense, p.expert), overlap);
    } else {
      // ZeRO-2/3 reduce-scatter every micro-batch's gradients into the shards.
      every_backward.add(reduce(CollectiveOp::reduce_scatter, p.dense, p.expert), overlap);
    }
    if (s.zero == 1 || s.zero == 2) {
      // Updated bf16 shards gathered back after the step, behind the next forward.
      next_forward.add(gather(p.dense, p.expert), overlap_gather);
    }
    if (s.zero == 3) {
      // Parameters gathered (prefetched) for every micro-batch's forward and backward.
      const Priced ag = gather(p.dense, p.expert);
      every_forward.add(ag, overlap_gather);
      every_backward.add(ag, overlap_gather);
    }
    step.add(kDpComm, exposed(every_forward), micro_batches);
    step.add(kDpComm, exposed(every_backward), micro_batches);
    step.add(kDpComm, exposed(last_backward));
    step.add(kDpComm, exposed(next_forward));
    // Tied embeddings on different stages: their gradients are all-reduced between the first
    // and last stage after backward.
    if (m.tied_embeddings && s.pp > 1) {
      const double shard = static_cast<double>(m.vocab) * m.hidden / s.tp;
      GroupPlacement pair{2, place.pp_stride * (s.pp - 1)};
      step.add(kDpComm, pr.collective(CollectiveOp::all_reduce, shard * gbytes, pair));
    }
  }

  void add_optimizer(Times& step) {
    const StageParameters p = stage_parameters(m, s, 0);
    const double shards = s.zero >= 1 ? s.dp * s.cp : 1;
    const double expert_shards = s.zero >= 1 ? static_cast<double>(s.dp * s.cp) / s.ep : 1;
    const double local = p.dense / shards + p.expert / expert_shards;
    // Megatron's mixed-precision optimizer over the local shard: fused Adam reads the fp32
    // gradient, master weight and moments and writes the last three (28 B), the gradient norm
    // reads the gradients (4), the master weights are copied to the 16-bit model (6) and the
    // gradients zeroed (grad_bytes). fp16 adds casting the gradients to fp32 (6) and the
    // loss-scale unscale-and-check pass (8).
    const Software& sw = opt.software;
    const double bytes = 28 + 4 + 6 + sw.grad_bytes + (sw.grad_bytes < 4 ? 6 : 0) +
                         (sw.loss_scaling ? 8 : 0);
    step.add(kOptimizer, pr.memory_pass(bytes * local));
  }
};

}  // namespace

Estimate estimate(const Model& m, const Cluster& c, const Strategy& s,
                  const EstimateOptions& opt) {
  if (auto why = check_strategy(m, c, s)) {
    throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
  }
  return Engine{m, c, s, opt}.run();
}

}  // namespace shardcost
