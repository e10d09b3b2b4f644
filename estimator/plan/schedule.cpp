// Step time of a plan from its priced blocks (docs/estimator.md has every formula).
#include "schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "block_times.h"
#include "memory.h"

namespace shardcost {
namespace {

struct Step {
  const ScheduleInputs& in;
  const Graph& g = in.graph;
  const Strategy& s = in.strategy;
  const Software& sw = in.software;
  const Pricer& pr = in.pricer;
  // How every replica runs on one group with one TP degree.
  const ReplicaPricing base{&in.pricer, &in.graph, &in.strategy, &in.place};
  // Every data-parallel collective of a step, hidden or not (add_data_parallel sets it).
  Cost dp_full_{};

  // A stage, or several alike (a homogeneous cluster's middle stages), in rank order: the
  // groups its replicas run on (the slowest sets its pace) and where its data-parallel
  // collectives run.
  struct Entry {
    StageSpan span;
    int count = 1;
    std::vector<ReplicaPricing> replicas;
    ReplicaPricing data_parallel;
    Times t;
    const ReplicaPricing* slowest = nullptr;
  };

  // Each block priced once per micro-batch and pricer; body blocks under the strategy's
  // recomputation, the first- and last-stage blocks never recomputed.
  // Priced blocks by pricer and graph, kept across calls for their allocations: run() marks
  // them all unused first.
  struct BlockCache {
    struct Entry {
      const Pricer* pricer = nullptr;
      const Graph* graph = nullptr;
      std::vector<Times> times;
    };
    std::vector<Entry> entries;
    size_t used = 0;
  };
  static BlockCache& block_cache() {
    thread_local BlockCache cache;
    return cache;
  }
  const std::vector<Times>& blocks_on(const ReplicaPricing& u) {
    BlockCache& cache = block_cache();
    for (size_t i = 0; i < cache.used; ++i)
      if (cache.entries[i].pricer == u.pricer && cache.entries[i].graph == u.graph)
        return cache.entries[i].times;
    if (cache.used == cache.entries.size()) cache.entries.emplace_back();
    BlockCache::Entry& e = cache.entries[cache.used++];
    e.pricer = u.pricer;
    e.graph = u.graph;
    e.times.clear();
    // Per-layer CUDA graphs capture the body's layers only: the embedding and the head and
    // loss are launched eagerly. So does torch.compile compile them (the loss on its own:
    // Software::cross_entropy).
    Software eager = sw;
    eager.cuda_graphs = false;
    eager.compile = false;
    for (const Block& b : u.graph->blocks) {
      const bool body = b.pin == Block::Pin::body;
      e.times.push_back(block_times(b.ops, *u.pricer, *u.place, recompute_of(b, s),
                                    body ? sw : eager, in.track_origins));
    }
    return e.times;
  }

  // Pipeline: each micro-batch crosses 2*vpp stage boundaries per stage (activation
  // forward, gradient backward). Megatron sends 1/tp of the activation from each tensor-
  // parallel rank over its own link (scatter-gather) and all-gathers it on arrival, among
  // the receiving stage's devices. Between meshes of different TP degrees the activation is
  // resharded (Zhuang et al., MLSys'23): each receiving rank takes its 1/tp' slice from the
  // sending ranks that hold it, so the busiest rank of either side moves 1/min(tp, tp') of
  // it, and a receiver that replicates it (no sequence parallelism) all-gathers the slices
  // among its own devices. Equal degrees give Megatron's send.
  Cost boundary(const Pricer& over, const ReplicaPricing& from, const ReplicaPricing& to) const {
    const double act_bytes = from.graph->boundary_bytes;
    const int tp_from = from.strategy->tp, tp_to = to.strategy->tp;
    Cost hop = over.send_recv(act_bytes / std::min(tp_from, tp_to),
                              GroupPlacement{s.pp, from.place->pp_stride});
    if (!to.strategy->sp && tp_to > 1)
      hop = combined(hop, to.pricer->collective(CollectiveOp::all_gather, act_bytes, to.place->tp));
    return hop;
  }

  // Activation offloading (Strategy::offload): each offloaded layer's kept activations go to
  // the host over its link (copy_d2h, measured where the store has it) while the next layer's
  // forward runs, and come back (copy_h2d) while the backward of the layer after it runs; the
  // copy engines take no SMs. What a copy outlasts its window by, the compute stream waits
  // (booked as forward or backward compute).
  template <class TimesOf>
  void add_offload(Times& t, const StageSpan& span, const ReplicaPricing& u,
                   const TimesOf& times_of) const {
    const auto mode = static_cast<size_t>(s.recompute);
    for_each_leading_body(*u.graph, span, s.offload, [&](const Block& b, int n) {
      const Times& layer = times_of(b);
      const double fwd = layer.s[kComputeForward];
      const double bwd = layer.s[kComputeBackward] + layer.s[kComputeRecompute];
      const Priced to_host = u.pricer->memory("copy_d2h", b.kept_bytes[mode]);
      const Priced back = u.pricer->memory("copy_h2d", b.kept_bytes[mode]);
      t.add(kComputeForward, {std::max(0.0, to_host.seconds - fwd), to_host.origin}, n);
      t.add(kComputeBackward, {std::max(0.0, back.seconds - bwd), back.origin}, n);
    });
  }

  // DualPipe runs a forward chunk of one micro-batch beside a backward chunk of another, so the
  // expert-parallel all-to-alls and the pipeline sends of each run behind the other's compute
  // (DeepSeek-V3, Sec. 3.2.1: "both all-to-all and PP communication can be fully hidden"):
  // what outlasts the stage's compute stays exposed, and the hidden part costs the SMs its
  // kernels take from that compute, as every overlap here does (the stack's communication SMs,
  // Software::ep_comm_sms: DeepSeek's 20, Sec. 3.2.2; else NCCL's channels).
  void dualpipe_overlap(Times& t, const Pricer& on) const {
    const double comm = t.s[kEpComm] + t.s[kPpComm];
    if (comm <= 0) return;
    const double compute = t.s[kComputeForward] + t.s[kComputeBackward] + t.s[kComputeRecompute];
    const double hidden = std::min(comm, compute);
    const double share = sw.ep_comm_sms > 0
                             ? std::min(1.0, static_cast<double>(sw.ep_comm_sms) / on.device().sms)
                             : on.nccl_sm_share();
    const double f = (comm - hidden + hidden * share) / comm;
    // The backward's share of them shrinks alike (what data-parallel reductions hide behind).
    t.backward_comm -= (1 - f) * std::min(t.backward_comm, comm);
    t.scale(kEpComm, f);
    t.scale(kPpComm, f);
  }

  // 1F1B with the experts' all-to-all overlap (Strategy::ep_overlap; Megatron-core's
  // --overlap-moe-expert-parallel-comm): one micro-batch's forward runs beside another's
  // backward, so each all-to-all runs behind the other's compute; what outlasts it stays
  // exposed, and the hidden part costs the SMs its kernels take (Software::ep_comm_sms, or
  // NCCL's channels).
  void ep_overlap(Times& t, const Pricer& on) const {
    const double comm = t.s[kEpComm];
    if (comm <= 0) return;
    const double compute = t.s[kComputeForward] + t.s[kComputeBackward] + t.s[kComputeRecompute];
    const double hidden = std::min(comm, compute);
    const double share = sw.ep_comm_sms > 0
                             ? std::min(1.0, static_cast<double>(sw.ep_comm_sms) / on.device().sms)
                             : on.overlap_slowdown();
    const double f = (comm - hidden + hidden * share) / comm;
    t.backward_comm -= (1 - f) * std::min(t.backward_comm, comm);
    t.scale(kEpComm, f);
  }

  // DualPipe's bubble (DeepSeek-V3, Table 2): (pp/2 - 1)(F&B + B - 3W), F a forward chunk, B
  // a full backward chunk, W its weight-gradient part, F&B the overlapped forward and backward
  // chunks (compute-bound: F + B); against 1F1B's (pp - 1)(F + B). So F + 2B - 3W. The stage's
  // communication and other parts ride with each chunk in proportion to its compute.
  double dualpipe_bubble(const Times& pace) const {
    const double F = pace.s[kComputeForward];
    const double B = pace.s[kComputeBackward] + pace.s[kComputeRecompute];
    const double W = std::min(pace.wgrad, pace.s[kComputeBackward]);
    const double compute = F + B;
    if (compute <= 0) return 0;
    const double chunks = std::max(0.0, F + 2 * B - 3 * W) / compute;
    return (s.pp / 2 - 1) * chunks * pace.total();
  }

  // DualPipe: each device's own stage (by its first unit) and the stage it holds besides.
  static std::vector<std::pair<int, StageSpan>>& device_mirrors() {
    thread_local std::vector<std::pair<int, StageSpan>> mirrors;
    return mirrors;
  }
  // The parameters one GPU of a stage holds, by how they are sharded: under DualPipe, its two
  // stages' (the embedding and the MTP module's copy of it, on one device, are one table).
  StageShards device_shards(const Graph& graph, const StageSpan& span) const {
    StageShards p = stage_shards(graph, s, sw, span);
    if (s.schedule != PipeSchedule::dualpipe) return p;
    for (const auto& [first_unit, mirror] : device_mirrors()) {
      if (first_unit != span.first_unit) continue;
      add_shards(p, stage_shards(graph, s, sw, mirror));
      if (span.first && mirror.last) {
        double tied = 0;
        for (const Block& b : graph.blocks)
          if (b.pin == Block::Pin::last_stage) tied += b.tied_params;
        // The head's copy sits where the head's mark put it.
        const bool head_sharded =
            s.zero_layers.empty() ? effective_zero(s, sw) >= 3 : s.zero_layers.back() > 0;
        (head_sharded ? p.sharded : p.held).dense -= tied;
      }
      break;
    }
    return p;
  }

  Times run() {
    block_cache().used = 0;
    const StagePricing* hetero = in.stages;
    // Priced at the pipeline's slowest boundary: one crosses nodes once the pipeline spans
    // them, even when tp*cp*dp is below a node's GPUs (and, on a mixed cluster, groups).
    // The slowest boundary's part is the reshard's where its two sides differ in TP degree.
    Cost hop;
    Part hop_part = kPpComm;
    if (s.pp > 1) {
      if (!hetero) {
        hop = boundary(pr, base, base);
      } else {
        for (const auto& boundary_sends : hetero->sends)
          for (const StageSend& send : boundary_sends) {
            const Cost h = boundary(*send.over, send.from, send.to);
            if (h.seconds <= hop.seconds) continue;
            hop = h;
            hop_part = send.from.strategy->tp == send.to.strategy->tp ? kPpComm : kReshard;
          }
      }
    }
    // Interleaved with asynchronous sends (Software::overlap_p2p), each send runs behind the
    // next model chunk's forward or backward (a 1/vpp share of the stage's), less the SMs it
    // takes; otherwise every send waits.
    const bool p2p_behind = sw.overlap_p2p && s.vpp > 1;
    auto add_p2p = [&](Times& t) {
      if (s.pp == 1) return;
      if (!p2p_behind) {
        // Local updates send activations forward only: no gradient crosses a boundary.
        t.add(hop_part, hop, s.schedule == PipeSchedule::local ? 1.0 : 2.0 * s.vpp);
        return;
      }
      const double fwd = t.s[kComputeForward] / s.vpp;
      const double bwd = (t.s[kComputeBackward] + t.s[kComputeRecompute]) / s.vpp;
      t.add(hop_part, behind(hop, fwd, pr.overlap_slowdown()), s.vpp);
      t.add(hop_part, behind(hop, bwd, pr.overlap_slowdown()), s.vpp);
    };

    // One stage's work per micro-batch on one group's devices. Without fused gradient
    // accumulation each backward ends with main_grad += grad over the stage's parameters
    // (read bf16, read and write the fp32 main gradient).
    const ParameterBytes pb = parameter_bytes(s, sw);
    const double accumulate_bytes = pb.weight + 2.0 * pb.gradient;
    auto stage_time = [&](const StageSpan& span, const ReplicaPricing& u) {
      const std::vector<Times>& blocks = blocks_on(u);
      const Graph& ug = *u.graph;
      Times t;
      if (in.track_origins) t.track();
      // blocks[] is in graph order: a block's times are at its index.
      auto times_of = [&](const Block& b) -> const Times& {
        return blocks[static_cast<size_t>(&b - ug.blocks.data())];
      };
      for_each_body(ug, span, [&](const Block& b, int copies) { t.add(times_of(b), copies); });
      if (s.offload > 0) add_offload(t, span, u, times_of);
      for_each_pinned(ug, span, [&](const Block& b) { t.add(times_of(b), 1); });
      add_p2p(t);
      if (!sw.fused_grad_accumulation)
        t.add(kComputeBackward,
              u.pricer->memory_pass(accumulate_bytes *
                                    stage_parameters(ug, span).trainable().total()));
      // FSDP2's copy-out after each ZeRO-3 all-gather (Software::fsdp_copy_out): every
      // gathered parameter read from the gathered buffer and written to its unsharded tensor,
      // once for the forward and once for the backward's gather.
      // Under FSDP2's float8 all-gather (torchao's fsdp_pre_all_gather) the float8 linears'
      // weights are copied out in float8, and each gather first casts the rank's fp32 shard of
      // them with the scale computed once a step, eager (outside the compiled layers): the
      // product with the scale (read 4, write 4), the clamp (4 + 4), the cast (4 + 1): 21 B.
      if (sw.fsdp_copy_out) {
        const StageParameters sharded = device_shards(ug, span).sharded;
        const double gathered = sharded.total();
        if (gathered > 0) {
          const double float8 = s.torchao.weight_gather ? sharded.fp8 : 0;
          const double shard_cast = 21.0 * float8 / (s.dp * s.cp);
          const Priced copy =
              u.pricer->memory_pass(2.0 * pb.weight * (gathered - 0.5 * float8) + shard_cast);
          t.add(kComputeForward, copy);
          t.add(kComputeBackward, copy);
        }
      }
      // The embedding table is not a fused linear: its backward writes a dense gradient of
      // the whole (vocab-parallel) table, zeroed first, and Megatron's gradient hook adds it
      // into the fp32 main gradient (main_grad.add_(grad): read 2, read and write 4) every
      // micro-batch. Without fused accumulation the pass above already adds it.
      const double table = span.first ? pinned_unit(ug, Block::Pin::first_stage, span).dense : 0;
      if (table > 0) {
        const double e = numerics(s).element_bytes;
        t.add(kComputeBackward, u.pricer->memory("memset", e * table));
        if (sw.fused_grad_accumulation)
          t.add(kComputeBackward, u.pricer->memory_pass((e + 2.0 * pb.gradient) * table));
      }
      if (s.schedule == PipeSchedule::dualpipe) dualpipe_overlap(t, *u.pricer);
      if (s.ep_overlap) ep_overlap(t, *u.pricer);
      return t;
    };

    // Stages in rank order. On one group, stages differ in their body and in the first and
    // last stage's blocks: each kind is priced once. On a mixed cluster every stage is priced
    // on each group its replicas run on. The slowest sets the pace; the others fill and
    // drain the pipeline.
    thread_local std::vector<StageKind> kinds;
    thread_local std::vector<Entry> entries;
    entries.clear();
    if (hetero) {
      for (int st = 0; st < s.pp; ++st)
        entries.push_back({scheduled(in.layout.span(st), s.schedule),
                           1,
                           hetero->replicas[static_cast<size_t>(st)],
                           hetero->data_parallel[static_cast<size_t>(st)],
                           {},
                           nullptr});
    } else if (s.schedule == PipeSchedule::dualpipe) {
      // Every stage on its own: a device holds stages i and pp-1-i (paired below).
      for (int st = 0; st < s.pp; ++st)
        entries.push_back({in.layout.span(st), 1, {base}, base, {}, nullptr});
    } else {
      stage_kinds(in.layout, uniform_body(g), kinds);
      auto add = [&](const StageKind& k) {
        entries.push_back({scheduled(k.span, s.schedule), k.count, {base}, base, {}, nullptr});
      };
      add(kinds[0]);
      for (size_t k = 2; k < kinds.size(); ++k) add(kinds[k]);
      if (s.pp > 1) add(kinds[1]);
    }
    size_t slowest = 0;
    double sum_stages = 0;
    for (size_t k = 0; k < entries.size(); ++k) {
      Entry& e = entries[k];
      for (const ReplicaPricing& u : e.replicas) {
        Times t = stage_time(e.span, u);
        if (!e.slowest || t.total() > e.t.total()) e.t = std::move(t), e.slowest = &u;
      }
    }
    // DualPipe: each device runs half the micro-batches through stage i and half through
    // stage pp-1-i, so its pace is the pair's mean; the first half of the entries become the
    // devices, the rest are dropped.
    if (s.schedule == PipeSchedule::dualpipe) {
      const size_t half = entries.size() / 2;
      device_mirrors().clear();
      for (size_t k = 0; k < half; ++k) {
        Times pair;
        if (in.track_origins) pair.track();
        pair.add(entries[k].t, 0.5);
        pair.add(entries[entries.size() - 1 - k].t, 0.5);
        entries[k].t = std::move(pair);
        device_mirrors().emplace_back(entries[k].span.first_unit,
                                      entries[entries.size() - 1 - k].span);
      }
      entries.resize(half);
    }
    for (size_t k = 0; k < entries.size(); ++k) {
      const Entry& e = entries[k];
      sum_stages += e.count * e.t.total();
      if (e.t.total() > entries[slowest].t.total()) slowest = k;
    }
    const Entry& pace_entry = entries[slowest];
    const Times& pace = pace_entry.t;
    if (in.stage_seconds) {
      std::vector<double>& out = *in.stage_seconds;
      out.clear();
      for (const Entry& e : entries)
        out.insert(out.end(), static_cast<size_t>(e.count), e.t.total());
    }
    if (hetero && in.stage_replicas) {
      in.stage_replicas->clear();
      for (const Entry& e : entries)
        in.stage_replicas->push_back(static_cast<int>(e.slowest - e.replicas.data()));
    }

    const int micro_batches = s.micro_batches();
    Times step;
    if (in.track_origins) step.track();
    step.micro_batch_s = pace.total();
    step.add(pace, micro_batches);
    // Fill and drain: every other stage's work once, shortened by interleaving; DualPipe's
    // own (dualpipe_bubble). Local updates never flush: no stage waits for a later one, so a
    // stage starts the next step's micro-batches after its own update, and the pipeline
    // fills once a run, not once a step.
    const double bubble = s.schedule == PipeSchedule::dualpipe ? dualpipe_bubble(pace)
                          : s.schedule == PipeSchedule::local  ? 0.0
                                                              : (sum_stages - pace.total()) / s.vpp;
    step.add(kBubble, pace.part(kPartCount).as(bubble));
    // Interleaved with asynchronous sends, the steady state hides each send behind the next
    // chunk, but the fill and the drain each carry one micro-batch through the pp*vpp model
    // chunks in turn, and each of its pp*vpp - 1 sends is waited for: the device it reaches
    // has nothing else ready. Without interleaving, or with waiting sends, the stages' own
    // times (and so the bubble) already hold their sends.
    if (p2p_behind && s.schedule == PipeSchedule::one_f_one_b)
      step.add(hop_part, hop, 2.0 * (s.pp * s.vpp - 1));

    // FP8: Transformer Engine casts each FP8 linear's weight to FP8 with its transpose once
    // a step, in the first micro-batch (read 2, write 1 + 1 bytes per parameter; NVFP4 reads
    // it twice, its amax first: Numerics::weight_cast_reads); FP8 primary weights need only
    // the transpose (read 1, write 1). On the slowest stage's parameters, as the pace is.
    // (torchao casts every weight each micro-batch instead: in the linears' cast passes.)
    if (const Numerics n = numerics(s); n.quantized() && !n.torchao) {
      const ReplicaPricing& u = *pace_entry.slowest;
      // Under DualPipe the device casts both its stages' weights.
      const StageShards p = device_shards(*u.graph, pace_entry.span);
      const double fp8 = p.held.fp8 + p.sharded.fp8 / (s.dp * s.cp);
      step.add(kComputeForward,
               u.pricer->memory_pass((sw.fp8_params ? (n.copies - 1) * 2 * n.q
                                                    : n.weight_cast_reads + n.copies * n.q) *
                                     fp8));
    }

    add_data_parallel(step, pace, micro_batches, entries);
    add_optimizer(step, entries);
    if (s.dp_sync != DpSync::sync) agree_otherwise(step);
    // The layers per stage that balance the stages, priced with the blocks this step priced.
    if (in.balanced_layers) {
      in.balanced_layers->clear();
      const bool worth =
          !in.balance_if || (*in.balance_if)(sum_stages / s.pp, pace.total(), step.total());
      if (!hetero && s.pp > 1 && s.schedule == PipeSchedule::one_f_one_b && worth)
        *in.balanced_layers = min_max_stage_layers(
            g.body_units(), s.pp, s.vpp,
            [&](const StageSpan& span) { return stage_time(span, base).total(); });
    }
    return step;
  }

  // dp_sync=local:H: each replica trains alone and the replicas average their parameters
  // every H steps, a whole exchange that nothing hides (the averaging step waits for it), so a
  // step carries 1/H of it. dp_sync=async:S: a replica applies its update without waiting, its
  // gradients reaching the others while it computes the next steps; the exchange serialises on
  // the links, so a step takes the longer of its computation and one exchange, and the
  // gradients arrive ceil(exchange / computation) updates late, at most S (the bound holds a
  // replica back only when the links are slower still, which the same longer time prices).
  // The exchange moves what sync's reductions move (with zero=0, fp32 gradients or
  // parameters: the same bytes).
  void agree_otherwise(Times& step) const {
    const Cost full = dp_full_;
    step.dp_exchange_s = full.seconds;
    step.scale(kDpComm, 0);
    if (s.dp_sync == DpSync::local) {
      step.add(kDpComm, full.as(full.seconds / s.dp_sync_steps));
      return;
    }
    const double compute = step.total();
    step.add(kDpComm, full.as(std::max(0.0, full.seconds - compute)));
    step.dp_staleness =
        compute > 0 ? std::min(s.dp_sync_steps,
                               std::max(1, static_cast<int>(std::ceil(full.seconds / compute))))
                    : s.dp_sync_steps;
  }

  // What a step's data-parallel collectives expose behind the pace's windows: the per
  // micro-batch ones m times, the once-a-step ones and the tied all-reduce once.
  static Cost exposed_per_step(const DataParallelComm& c, double fwd, double bwd, int m) {
    const Cost each = combined(c.exposed(c.every_forward, fwd), c.exposed(c.every_backward, bwd));
    return combined(combined(combined(each.as(each.seconds * m), c.later_forwards(m)),
                             c.exposed(c.last_backward, bwd)),
                    combined(c.exposed(c.next_forward, fwd), c.tied));
  }

  // The data-parallel collectives behind the pace-setting stage's windows: those of the stage
  // that takes longest over them (every stage reduces its own parameters at once; on a mixed
  // cluster each over its own groups and links).
  void add_data_parallel(Times& step, const Times& stage, int micro_batches,
                         const std::vector<Entry>& entries) {
    const double bwd = stage.s[kComputeBackward] + stage.s[kComputeRecompute] + stage.backward_comm;
    const double fwd = stage.s[kComputeForward];
    const Pricer& tied = in.stages ? *in.stages->tied : pr;
    DataParallelComm c;
    if (!in.stages) {
      // One group: the same collectives over the same group; the stage that exposes most
      // (the most parameters, or the embedding's call that nothing hides) sets the pace.
      c = data_parallel(entries.front().span, base, tied);
      double longest = exposed_per_step(c, fwd, bwd, micro_batches).seconds;
      for (size_t k = 1; k < entries.size(); ++k) {
        const DataParallelComm o = data_parallel(entries[k].span, base, tied);
        const double t = exposed_per_step(o, fwd, bwd, micro_batches).seconds;
        if (t > longest) c = o, longest = t;
      }
    } else {
      c = data_parallel(entries.front().span, entries.front().data_parallel, tied);
      double longest = exposed_per_step(c, fwd, bwd, micro_batches).seconds;
      for (size_t k = 1; k < entries.size(); ++k) {
        const DataParallelComm o = data_parallel(entries[k].span, entries[k].data_parallel, tied);
        const double t = exposed_per_step(o, fwd, bwd, micro_batches).seconds;
        if (t > longest) c = o, longest = t;
      }
    }
    if (in.data_parallel) *in.data_parallel = c;
    if (in.windows) *in.windows = {fwd, bwd};
    step.add(kDpComm, exposed_per_step(c, fwd, bwd, micro_batches));
    // Every collective of the step, hidden or not: what dp_sync=async and local price from
    // (synchronous steps, every search's, need none of it).
    if (s.dp_sync == DpSync::sync) return;
    auto whole = [](const DataParallelComm::Window& w) {
      return combined(combined(w.hidden, w.exposed), w.host);
    };
    const Cost each = combined(whole(c.every_forward), whole(c.every_backward));
    dp_full_ = combined(
        combined(combined(each.as(each.seconds * micro_batches), c.later_forwards(micro_batches)),
                 whole(c.last_backward)),
        combined(whole(c.next_forward), c.tied));
  }

  // `calls` collectives of equal size moving `bytes` in all, over `group`.
  static Priced split(const Pricer& pr, CollectiveOp op, double bytes, double calls,
                      GroupPlacement group) {
    if (bytes <= 0) return {0, CostOrigin::catalog};
    calls = std::max(1.0, calls);
    const Priced one = pr.collective(op, bytes / calls, group);
    return {one.seconds * calls, one.origin};
  }

  // One stage's data-parallel collectives on the pricer of the groups and links they run
  // over, with the graph and placement of its largest shard; `tied` prices the first and
  // last stages' tied-embedding all-reduce.
  DataParallelComm data_parallel(const StageSpan& span, const ReplicaPricing& u,
                                 const Pricer& tied_pr) const {
    const Pricer& on = *u.pricer;
    const Graph& ug = *u.graph;
    const Placement& place = *u.place;
    const StageShards shards = device_shards(ug, span);
    const ParameterBytes pb = parameter_bytes(s, sw);
    const double gbytes = pb.gradient;
    // The calls a stack makes. Gradient reductions go out in buckets (one call for the
    // whole buffer without), those of ZeRO-3's per-layer stacks one per unit; ZeRO-3
    // gathers one per unit, or one per parameter tensor (StageShards::gather_calls).
    const double bucket =
        sw.grad_bucket_params * (sw.grad_bucket_grows_with_dp
                                     ? std::max(1.0, 1e6 * s.dp * s.cp / sw.grad_bucket_params)
                                     : 1.0);
    auto buckets = [&](double params) { return bucket > 0 ? std::ceil(params / bucket) : 1.0; };
    const bool per_layer = sw.zero3_gathers == ShardedCalls::per_layer;
    // Collectives that share one compute window (a forward, a backward) share its cover:
    // what outlasts the window is exposed, and the hidden part still costs the compute that
    // the NCCL kernels' SMs would have done.
    DataParallelComm c;
    c.sm_share = on.overlap_slowdown();
    auto add = [](DataParallelComm::Window& w, const Cost& comm, bool overlapped) {
      Cost& slot = overlapped ? w.hidden : w.exposed;
      slot = combined(slot, comm);
    };
    // Collectives in calls whose one call holding the part's first unit (in execution order)
    // has no compute to hide behind: reduced after the backward's last op, gathered before the
    // forward's first. Buckets follow the parameters in reverse (Megatron-core's
    // _ParamAndGradBuffer, PyTorch DDP's Reducer), so that call is the last reduction and the
    // first gather: the first unit's parameters, at least a bucket's, at most the part's.
    struct Calls {
      Cost rest, first;
    };
    auto add_calls = [&](DataParallelComm::Window& w, const Calls& calls, bool overlapped) {
      add(w, calls.rest, overlapped);
      add(w, calls.first, false);
    };
    const bool overlap = sw.overlap_grad_reduce;
    const bool overlap_gather = sw.overlap_param_gather;
    // One part of the stage's parameters under one ZeRO stage (3: gathered in `calls` per
    // pass).
    auto add_part = [&](const StageParameters& p, const StageParameters& first, int zero,
                        double calls, double reduce_calls) {
      if (p.total() <= 0) return;
      // `n` calls moving `params` in all over `group`, the one holding `lead` of them apart.
      auto with_first = [&](CollectiveOp op, double bytes_per_param, double params, double n,
                            double lead, GroupPlacement group) {
        if (params <= 0) return Calls{};
        lead = std::min(params, lead);
        if (n <= 1 || lead >= params)
          return Calls{{}, on.collective(op, params * bytes_per_param, group)};
        return Calls{split(on, op, (params - lead) * bytes_per_param, n - 1, group),
                     on.collective(op, lead * bytes_per_param, group)};
      };
      // Without expert parallelism every parameter shares the data-parallel group and its
      // buffer: one set of calls; with it, the expert part goes over the expert-data-parallel
      // group, and the first unit's call is the dense buffer's (the embedding, or a layer's
      // attention). ZeRO-3 calls one per unit (per-layer stacks; the call holding the first
      // unit is its own) or per tensor (the unit's share); the rest call in buckets.
      const bool blockwise = zero == 3 && per_layer;
      // Over the parameters `q` (the part's first unit's: `q_first`): gradients are reduced for
      // those that train, weights gathered for all (ZeRO-3) or for those updated (ZeRO-1/2).
      auto over_groups = [&](CollectiveOp op, double bytes_per_param, bool sharded_calls,
                             const StageParameters& q, const StageParameters& q_first) {
        const double n = op == CollectiveOp::all_gather ? calls : reduce_calls;
        auto calls_of = [&](double params) { return sharded_calls ? n : buckets(params); };
        auto lead_of = [&](double unit) {
          if (sharded_calls) return blockwise ? unit : unit / std::max(1, q_first.tensors);
          return bucket > 0 ? std::max(bucket, unit) : std::numeric_limits<double>::infinity();
        };
        if (s.ep == 1 && s.expert_tp() == s.tp) {
          const double all = q.total();
          return with_first(op, bytes_per_param, all, calls_of(all), lead_of(q_first.total()),
                            place.dp_cp);
        }
        const Calls dense = with_first(op, bytes_per_param, q.dense, calls_of(q.dense),
                                       lead_of(q_first.dense), place.dp_cp);
        const Cost expert =
            split(on, op, q.expert * bytes_per_param, calls_of(q.expert), place.expert_dp);
        return Calls{combined(dense.rest, expert), dense.first};
      };
      // FP8 primary weights are gathered in FP8, and so are torchao's float8 linears' under
      // FSDP2's float8 all-gather: their share of the bytes halves.
      const bool fp8_gather = numerics(s).quantized() && (sw.fp8_params || s.torchao.weight_gather);
      const double gathered = fp8_gather ? 1 - 0.5 * p.fp8 / p.total() : 1;
      // A stack of list collectives (Software::zero3_list_collectives) reduce-scatters stage
      // 3's gradients one tensor at a time, as it gathers them.
      const bool lists = zero == 3 && sw.zero3_list_collectives;
      const StageParameters trained = p.trainable(), trained_first = first.trainable();
      const Calls reduced =
          over_groups(zero == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter, gbytes,
                      blockwise || lists, trained, trained_first);
      // After the step, ZeRO-1/2 gather the updated shards in buckets; ZeRO-3 gathers as the
      // stack issues its calls, frozen weights too.
      const Calls gather =
          zero == 3 ? over_groups(CollectiveOp::all_gather, pb.weight * gathered, true, p, first)
                    : over_groups(CollectiveOp::all_gather, pb.weight * gathered, false, trained,
                                  trained_first);
      if (zero <= 1) {
        // Gradients reduced once per step, behind the last micro-batch's backward.
        add_calls(c.last_backward, reduced, overlap);
      } else {
        // ZeRO-2/3 reduce-scatter every micro-batch's gradients into the shards.
        add_calls(c.every_backward, reduced, overlap);
      }
      if (zero == 1 || zero == 2) {
        // Updated bf16 shards gathered back after the step, behind the next forward.
        add_calls(c.next_forward, gather, overlap_gather);
      }
      if (zero == 3 && !lists) {
        // Parameters gathered (prefetched) for every micro-batch's forward and backward; the
        // backward starts on the units the forward left gathered (FSDP2 keeps the last block).
        add_calls(c.every_forward, gather, overlap_gather);
        add(c.every_backward, combined(gather.rest, gather.first), overlap_gather);
      }
      if (lists) {
        // Each call hands NCCL one view per rank of the group (Software::
        // zero3_list_collectives): the host builds the list in Python, an ATen op per view
        // (the gather's narrow; the reduce-scatter's view and narrow; Software::
        // host_python_op_s), and ProcessGroupNCCL copies every view from C++ (a backward
        // op's dispatch and launch, host_backward_launch_s): a gather's copies after its
        // collective is queued, so they are issued while it runs; a reduce-scatter's before.
        // A gather synchronizes the device first: it, its host work and the memset of its
        // buffer wait exposed, forward and backward. The reduce-scatters' host work runs
        // beside the backward's kernels. Calls of one kind are priced alike (equal sizes).
        const double ranks = place.dp_cp.ranks;
        const double py = sw.host_python_op_s, cpp = sw.host_backward_launch_s;
        auto exposed_gathers = [&](const Cost& collectives, double n, double bytes) {
          const double host = n * ranks * py + std::max(collectives.seconds, n * ranks * cpp);
          const Cost zeroed = on.memory("memset", bytes);
          return combined(collectives.as(host), zeroed);
        };
        const Cost gathers =
            exposed_gathers(combined(gather.rest, gather.first), calls, p.total() * pb.weight);
        add(c.every_forward, gathers, false);
        add(c.every_backward, gathers, false);
        if (shards.recompute_regathers > 0) {
          // Under full recomputation the linears released after their recomputed forward
          // (Software::zero3_reuse_distance_params) are gathered again for their backward,
          // each as above.
          const double n = shards.recompute_regathers;
          const double bytes = shards.recompute_regather_params * pb.weight;
          add(c.every_backward,
              exposed_gathers(split(on, CollectiveOp::all_gather, bytes, n, place.dp_cp), n, bytes),
              false);
        }
        c.every_backward.host =
            combined(c.every_backward.host,
                     Cost(Priced{reduce_calls * ranks * (2 * py + cpp), CostOrigin::catalog}));
        if (shards.persistent_tensors > 0) {
          // The persisting tensors: released after every micro-batch's backward with the rest
          // (stage3's backward ends in _partition_all_parameters), gathered back after the
          // step in one call (_allgather_params: a view per rank as above, then each tensor
          // copied out from Python a rank at a time: three views and a launched copy, for
          // the ranks whose part starts inside it), and in the later micro-batches' forwards
          // one tensor at a time like the others.
          const double n = shards.persistent_tensors, bytes = shards.persistent_params * pb.weight;
          const double from = std::min(ranks, shards.persistent_params / n);
          const Cost once = on.collective(CollectiveOp::all_gather, bytes, place.dp_cp);
          const double copy_out = n * from * (4 * py + sw.host_driver_launch_s);
          const double host = ranks * py + std::max(once.seconds, ranks * cpp) + copy_out;
          add(c.next_forward, once.as(host), false);
          c.later_forward =
              combined(c.later_forward,
                       exposed_gathers(split(on, CollectiveOp::all_gather, bytes, n, place.dp_cp),
                                       n, bytes));
        }
      }
    };
    add_part(shards.held, shards.held_first, shards.held_zero, 0, 0);
    add_part(shards.sharded, shards.sharded_first, 3, shards.gather_calls, shards.reduce_calls);
    // Tied embeddings on different stages: their gradients are all-reduced between the first
    // and last stage after backward. DualPipe holds both on one device: one table, no
    // all-reduce (DeepSeek-V3 Sec. 3.2.3, "physical sharing of parameters and gradients").
    if (s.pp > 1 && s.schedule != PipeSchedule::dualpipe) {
      for (const Block& b : ug.blocks) {
        // (Frozen tied weights, LoRA's, have no gradient to all-reduce.)
        if (b.pin != Block::Pin::last_stage || b.tied_params <= 0 || b.frozen) continue;
        GroupPlacement pair{2, place.pp_stride * (s.pp - 1)};
        c.tied = combined(
            c.tied, tied_pr.collective(CollectiveOp::all_reduce, b.tied_params * gbytes, pair));
      }
    }
    return c;
  }

  // The optimizer step over the local shard: the slowest stage's, on its slowest devices.
  void add_optimizer(Times& step, const std::vector<Entry>& entries) {
    Priced slowest{0, CostOrigin::catalog};
    for (const Entry& e : entries)
      for (const ReplicaPricing& u : e.replicas) {
        const Priced o = optimizer(e.span, u);
        if (o.seconds > slowest.seconds) slowest = o;
      }
    step.add(kOptimizer, slowest);
  }

  Priced optimizer(const StageSpan& span, const ReplicaPricing& u) const {
    const Pricer& on = *u.pricer;
    // Over the parameters that train (LoRA's adapters, not its frozen weights).
    StageShards p = device_shards(*u.graph, span);
    p.held = p.held.trainable();
    p.sharded = p.sharded.trainable();
    const double shards = s.dp * s.cp;
    const double expert_shards = static_cast<double>(s.expert_dp());
    const double sharded = p.sharded.dense / shards + p.sharded.expert / expert_shards;
    const double local =
        sharded +
        (p.held_zero >= 1 ? p.held.dense / shards + p.held.expert / expert_shards : p.held.total());
    // Megatron's mixed-precision optimizer over the local shard: fused Adam reads the fp32
    // gradient, master weight and moments and writes the last three (28 B), the gradient norm
    // reads the gradients (4), the master weights are copied to the 16-bit model (6) and the
    // gradients zeroed (grad_bytes, a memset). fp16 adds casting the gradients to fp32 (6) and the
    // dynamic loss scale's unscale-and-check pass (8), which every fp16 run has. fp32/tf32 training
    // updates the fp32 weights in place: no master copy to cast back.
    // Adam's 28 B are the fp32 gradient read and the fp32 master and moments read and written:
    // the optimizer's state (the weights themselves where they are the fp32 master), so 20 B
    // with bf16 moments (Software::bf16_optimizer_moments).
    const ParameterBytes pb = parameter_bytes(s, sw);
    const double copy_back = pb.weight < 4 ? 6 : 0;
    const double state = pb.optimizer + (pb.weight < 4 ? 0 : pb.weight);
    const double adam = 4 + 2 * state;
    const bool fp16 = s.precision.value_or(sw.precision) == DType::fp16;
    const double bytes = adam + 4 + copy_back + (pb.gradient < 4 ? 6 : 0) + (fp16 ? 8 : 0);
    // Zeroing the gradients for the next step: the whole buffer where the stack keeps whole
    // gradients in one (Software::zero_whole_grad_buffer, under ZeRO 0-1), else the shard.
    const double buffer =
        sw.zero_whole_grad_buffer && p.held_zero <= 1 ? sharded + p.held.total() : local;
    const Priced step = on.memory_pass(bytes * local);
    // Before the reduction the stack's own passes over the whole gradient buffer of the
    // parameters it keeps whole per rank (ZeRO 0-2), once a step on the compute stream
    // (Software::grad_nan_check, grad_scale_in_place, grad_coalesce_copies): a read for the
    // NaN check (not under fp16's dynamic loss scale), a read and a write for the 1/dp
    // scaling, two of each for a flatten and the copy back.
    double passes = 0;
    if (sw.grad_nan_check && !fp16) passes += 1;
    if (sw.grad_scale_in_place && s.dp * s.cp > 1) passes += 2;
    if (sw.grad_coalesce_copies) passes += 4;
    const double before_reduction =
        passes > 0 && p.held.total() > 0
            ? on.memory_pass(passes * pb.gradient * p.held.total()).seconds
            : 0.0;
    return {step.seconds + before_reduction + on.memory("memset", pb.gradient * buffer).seconds,
            step.origin};
  }
};

}  // namespace

Times step_times(const ScheduleInputs& in) {
  return Step{in}.run();
}

double DataParallelComm::seconds(const std::vector<double>& forward_s,
                                 const std::vector<double>& backward_s) const {
  double t = tied.seconds;
  for (double w : forward_s) t += exposed(every_forward, w).seconds;
  t += later_forwards(static_cast<int>(forward_s.size())).seconds;
  for (double w : backward_s) t += exposed(every_backward, w).seconds;
  if (!backward_s.empty()) t += exposed(last_backward, backward_s.back()).seconds;
  if (!forward_s.empty()) t += exposed(next_forward, forward_s.front()).seconds;
  return t;
}

}  // namespace shardcost
