#include "block_times.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

namespace shardcost {
namespace {

// One source's answers (Priced, one origin each); a GEMM's backward is its two GEMMs.
struct OpCost {
  Priced fwd, bwd;
  Priced dgrad, wgrad;  // GEMMs: the input- and weight-gradient parts of bwd
  Priced regather;      // comm: the backward all-gather of a sequence-parallel input
  bool gemm = false;
  Part comm_part = kTpComm;
  bool is_comm = false;
  bool is_attention = false;
  bool selective = false;
  double selective_share = 1;
  // The host's seconds to launch the op's kernels, forward and backward, without CUDA graphs.
  double host_fwd = 0, host_bwd = 0;
};

// The experts' tensor-parallel traffic counts as tensor-parallel communication.
Part comm_part(Axis a) {
  return a == Axis::tp || a == Axis::etp ? kTpComm : a == Axis::cp ? kCpComm : kEpComm;
}

OpCost price(const Op& op, const Pricer& pr, const Placement& place, const Software& sw) {
  if (op.needs_tp_comm_overlap && !sw.tp_comm_overlap) return {};  // not run by this stack
  const FusedAttention kernel = sw.fused_attention;
  // One kernel each way where the op takes time (an identity collective launches none).
  auto launch_each = [&](OpCost& c) {
    c.host_fwd = c.fwd.seconds > 0 ? sw.host_forward_launch_s : 0;
    c.host_bwd = c.bwd.seconds > 0 ? sw.host_backward_launch_s : 0;
  };
  OpCost c;
  c.selective = op.selective;
  c.selective_share = op.selective_share;
  const GroupPlacement& group = place.of(op.axis);
  switch (op.kind) {
    case OpKind::gemm: {
      c.fwd = pr.gemm(op.gemm, op.dtype);
      c.dgrad = pr.gemm(dgrad_shape(op.gemm), op.dtype);
      c.wgrad = pr.gemm(wgrad_shape(op.gemm), op.dtype);
      const bool per_expert = op.per_expert_kernels && sw.grouped_gemm_per_expert &&
                              !sw.fused_grouped_mlp && op.gemm.batch > 1;
      if (per_expert) {
        // One kernel per local expert: each beyond the first pays its launch (priced grouped,
        // the GEMMs' work is the one grouped kernel's).
        const double launches = (op.gemm.batch - 1) * GemmModel::kPerMemberKernel_s;
        c.fwd.seconds += launches;
        c.dgrad.seconds += launches;
        c.wgrad.seconds += launches;
      }
      // A frozen weight (LoRA) takes no gradient: the input gradient's GEMM alone.
      if (op.frozen) c.wgrad = {0, c.dgrad.origin};
      c.bwd = {c.dgrad.seconds + c.wgrad.seconds, c.dgrad.origin};
      // The input- and the weight-gradient GEMM backward; a stack running one GEMM per local
      // expert launches the others from the same C++ call, at the driver's cost each.
      c.host_fwd = sw.host_forward_launch_s;
      c.host_bwd = (op.frozen ? 1 : 2) * sw.host_backward_launch_s;
      if (per_expert) {
        const double members = (op.gemm.batch - 1) * sw.host_driver_launch_s;
        c.host_fwd += members;
        c.host_bwd += 2 * members;
      }
      c.gemm = true;
      c.is_attention = op.core_attention;
      break;
    }
    case OpKind::attention: {
      const AttentionShape shape{kernel, op.attention_seq, op.attention_head_dim,
                                 sw.fp8_attention && op.fp8_capable, sw.cudnn};
      c.fwd = pr.fused_attention(op.flops, op.dtype, shape);
      // FlashAttention's backward recomputes the scores: 2.5x the forward matmuls, at the
      // kernel's own backward rate.
      c.bwd = pr.fused_attention(2.5 * op.flops, op.dtype, shape, true);
      // A fused kernel that moves more than it computes (Mamba-2's chunked scan, whose chunk
      // states cross HBM between its kernels) takes the longer of the two.
      if (op.bytes > 0) {
        const Priced fwd_bytes = pr.memory_pass(op.bytes);
        const Priced bwd_bytes = pr.memory_pass(op.backward_bytes);
        if (fwd_bytes.seconds > c.fwd.seconds) c.fwd = fwd_bytes;
        if (bwd_bytes.seconds > c.bwd.seconds) c.bwd = bwd_bytes;
      }
      // FlashAttention's backward: the dO.O row sums, then the main kernel.
      c.host_fwd = sw.host_forward_launch_s;
      c.host_bwd = 2 * sw.host_backward_launch_s;
      c.is_attention = true;
      break;
    }
    case OpKind::memory: {
      // The loss (the one pass with fused variants of its own), or a pass of a layer, which
      // torch.compile (Software::compile, the body's blocks only) runs as Inductor fuses it.
      const bool loss = op.te_loss_bytes >= 0;
      const bool eager = sw.eager_elementwise && op.eager_bytes >= 0;
      const bool grouped = sw.fused_grouped_mlp && op.grouped_mlp_bytes >= 0;
      const bool te_loss = sw.cross_entropy == CrossEntropy::te && loss;
      const bool compiled_loss =
          sw.cross_entropy == CrossEntropy::compiled && loss && op.compiled_bytes >= 0;
      const bool compiled = sw.compile && !loss;
      const bool own = compiled && op.compiled_bytes >= 0;
      // The bytes forward and backward of the variant this stack runs.
      using Bytes = std::pair<double, double>;
      const auto [fwd, bwd] = grouped   ? Bytes{op.grouped_mlp_bytes, op.grouped_mlp_backward_bytes}
                              : te_loss ? Bytes{op.te_loss_bytes, op.te_loss_backward_bytes}
                              : compiled_loss || own
                                  ? Bytes{op.compiled_bytes, op.compiled_backward_bytes}
                              : eager && !compiled ? Bytes{op.eager_bytes, op.eager_backward_bytes}
                                                   : Bytes{op.bytes, op.backward_bytes};
      c.fwd = pr.memory_pass(fwd);
      c.bwd = pr.memory_pass(bwd);
      launch_each(c);
      c.is_attention = op.core_attention;
      break;
    }
    case OpKind::collective:
      if (op.routing.top_k > 0 && sw.ep_dispatcher == EpDispatcher::flex) {
        // Dispatch and combine, each the other's backward, through DeepEP or HybridEP.
        c.fwd = pr.routed_all_to_all(op.bytes, op.routing, group);
        c.bwd = pr.routed_all_to_all(op.backward_bytes > 0 ? op.backward_bytes : op.bytes,
                                     op.routing, group);
        launch_each(c);
        c.is_comm = true;
        c.comm_part = comm_part(op.axis);
        break;
      }
      if (op.op) c.fwd = pr.collective(*op.op, op.bytes, group);
      if (op.backward_op)
        c.bwd = pr.collective(*op.backward_op, op.backward_bytes > 0 ? op.backward_bytes : op.bytes,
                              group);
      if (op.backward_regather)
        c.regather = pr.collective(CollectiveOp::all_gather, op.bytes, group);
      launch_each(c);
      if (c.regather.seconds > 0) c.host_bwd += sw.host_backward_launch_s;
      c.is_comm = true;
      c.comm_part = comm_part(op.axis);
      break;
    case OpKind::ring: {
      // ranks-1 ring steps, each one neighbour exchange.
      const int steps = group.ranks - 1;
      const Priced fwd = pr.send_recv(op.bytes / steps, group);
      const Priced bwd = pr.send_recv(2 * op.bytes / steps, group);
      c.fwd = {fwd.seconds * steps, fwd.origin};
      c.bwd = {bwd.seconds * steps, bwd.origin};
      c.host_fwd = c.fwd.seconds > 0 ? steps * sw.host_forward_launch_s : 0;
      c.host_bwd = c.bwd.seconds > 0 ? steps * sw.host_backward_launch_s : 0;
      c.is_comm = true;
      c.comm_part = comm_part(op.axis);
      break;
    }
  }
  return c;
}

// Per micro-batch times of a block of ops (a layer, the embedding, the head).

// Transformer Engine's userbuffers overlap (its default configuration, initialize_ub): an
// all-gather runs as a ring exchange on the copy engines (one SM) in tp steps, each GEMM
// chunk on the block just received, so the comm hides behind (tp-1)/tp of the GEMM (the
// first chunk is local); a reduce-scatter is pipelined in 4 splits on 16 SMs, each split's
// reduce-scatter behind the next split's GEMM, the last one's exposed.
constexpr double kPipelineSplits = 4;
Priced ring_exchange(Priced comm, double gemm_s, double tp, int sms) {
  return behind(comm, gemm_s * (tp - 1) / tp, 1.0 / sms);
}
Priced pipelined(Priced comm, double gemm_s, double sm_share) {
  const double tail = comm.seconds / kPipelineSplits;
  const Priced body = behind({comm.seconds - tail, comm.origin},
                             gemm_s * (kPipelineSplits - 1) / kPipelineSplits, sm_share);
  return {body.seconds + tail, comm.origin};
}

// The GEMM next to a collective: the one after it or before it, skipping the FP8 cast pass
// that follows a GEMM; nullopt where there is none.
std::optional<size_t> gemm_near(const std::vector<Op>& ops, size_t i, bool after) {
  for (size_t d = 1; d <= 2; ++d) {
    if (after ? i + d >= ops.size() : i < d) return std::nullopt;
    const size_t j = after ? i + d : i - d;
    if (ops[j].kind == OpKind::gemm) return j;
    if (ops[j].kind != OpKind::memory) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

Times block_times(const std::vector<Op>& ops, const Pricer& pr, const Placement& place,
                  Recompute recompute, const Software& sw, bool track_origins) {
  const bool async_tp_backward = sw.async_tp_backward;
  // Each op priced once: an async TP collective also needs the next GEMM's weight gradient.
  thread_local std::vector<OpCost> costs;
  costs.clear();
  for (const Op& op : ops) costs.push_back(price(op, pr, place, sw));
  Times t;
  if (track_origins) t.track();
  Priced cp_fwd, cp_bwd;
  double attn_fwd = 0, attn_bwd = 0;  // the compute a ring exchange hides behind
  double comm_fwd = 0;                // the forward's exposed communication
  double host_fwd = 0, host_bwd = 0;  // the host's launches of the passes
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const OpCost& c = costs[i];
    host_fwd += c.host_fwd;
    host_bwd += c.host_bwd;
    // A recomputed forward is launched again inside the backward.
    if (recompute == Recompute::full || (recompute == Recompute::selective && c.selective))
      host_bwd += c.host_fwd;
    if (op.kind == OpKind::ring) {
      cp_fwd = c.fwd;
      cp_bwd = c.bwd;
      continue;
    }
    if (c.is_comm) {
      Priced fwd = c.fwd;
      Priced bwd = c.bwd;
      Priced regather = c.regather;
      const double sms = pr.overlap_slowdown();
      if (async_tp_backward && op.before_column_parallel && i + 1 < ops.size() &&
          ops[i + 1].kind == OpKind::gemm) {
        // The re-gather runs behind the input-gradient GEMM, the input gradient's
        // collective behind the weight-gradient GEMM.
        regather = behind(regather, costs[i + 1].dgrad.seconds, sms);
        bwd = behind(bwd, costs[i + 1].wgrad.seconds, sms);
      }
      if (sw.tp_comm_overlap && op.userbuffers) {
        const double tp = place.tp.ranks;
        if (op.before_column_parallel) {
          // The all-gather as a ring exchange with the column-parallel GEMM that consumes it.
          if (auto j = gemm_near(ops, i, true))
            fwd = ring_exchange(fwd, costs[*j].fwd.seconds, tp, pr.device().sms);
        } else if (auto j = gemm_near(ops, i, false)) {
          // The reduce-scatter pipelined with the row-parallel GEMM that produces it;
          // backward, the output gradient's all-gather as a ring exchange with its dgrad.
          // With an SM margin the GEMM runs on the other SMs throughout (its extra time is
          // the overlap's), and the comm kernels take none of its SMs.
          const int margin = std::string_view(ops[*j].name).find("proj") != std::string_view::npos
                                 ? sw.ub_margin_proj_sms
                                 : sw.ub_margin_fc2_sms;
          const int all = pr.device().sms;
          if (margin > 0 && margin < all) {
            const double gemm = costs[*j].fwd.seconds;
            const double slower = gemm * margin / (all - margin);
            fwd = pipelined(fwd, gemm + slower, 0);
            fwd.seconds += slower;
          } else {
            // Transformer Engine's pipelined kernels on their 16 SMs (not NCCL's).
            fwd = pipelined(fwd, costs[*j].fwd.seconds, pr.nccl_sm_share());
          }
          bwd = ring_exchange(bwd, costs[*j].dgrad.seconds, tp, pr.device().sms);
        }
      }
      t.add(c.comm_part, fwd);
      comm_fwd += std::max(0.0, fwd.seconds);
      t.add_backward_comm(c.comm_part, regather);
      t.add_backward_comm(c.comm_part, bwd);
      if (recompute == Recompute::full) t.add_backward_comm(c.comm_part, fwd);
      if (recompute == Recompute::selective && c.selective)
        t.add_backward_comm(c.comm_part, {fwd.seconds * c.selective_share, fwd.origin});
    } else {
      t.add(kComputeForward, c.fwd);
      if (c.gemm) {
        t.add(kComputeBackward, c.dgrad, c.wgrad);
        t.wgrad += std::max(0.0, c.wgrad.seconds);
      } else
        t.add(kComputeBackward, c.bwd);
      if (recompute == Recompute::full)
        t.add(kComputeRecompute, c.fwd);
      else if (recompute == Recompute::selective && c.selective)
        t.add(kComputeRecompute, c.fwd, c.selective_share);
      if (c.is_attention) {
        attn_fwd += c.fwd.seconds;
        attn_bwd += c.bwd.seconds;
      }
    }
  }
  // Ring attention hides the K/V exchange behind the attention of the block in hand, which
  // runs slower meanwhile (Pricer::overlap_slowdown).
  const Priced ring_fwd = behind(cp_fwd, attn_fwd, pr.overlap_slowdown());
  t.add(kCpComm, ring_fwd);
  comm_fwd += std::max(0.0, ring_fwd.seconds);
  if (recompute == Recompute::full) t.add_backward_comm(kCpComm, ring_fwd);
  t.add_backward_comm(kCpComm, behind(cp_bwd, attn_bwd, pr.overlap_slowdown()));
  // Without CUDA graphs the host launches every kernel: a pass whose kernels run shorter
  // than their launches waits for the host (the queue runs ahead only while the GPU is the
  // slower; over a block's repeated copies the pass takes the longer of the two).
  if (!sw.cuda_graphs) {
    const double gpu_fwd = t.s[kComputeForward] + comm_fwd;
    const double gpu_bwd = t.s[kComputeBackward] + t.s[kComputeRecompute] + t.backward_comm;
    t.add(kHostLaunch, {std::max(0.0, host_fwd - gpu_fwd) + std::max(0.0, host_bwd - gpu_bwd),
                        CostOrigin::catalog});
  }
  return t;
}

}  // namespace shardcost
