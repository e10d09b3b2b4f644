// What a request names, read: the preset with its overrides, the model at its sequence length,
// the cluster with its network trace, and the store's costs.
#include "request_inputs.h"

#include <fmt/format.h>

#include "shardcost/error.h"
#include "shardcost/units.h"

namespace shardcost {

std::unique_ptr<CostSources> load_cost_sources(const std::string& db) {
  auto c = std::make_unique<CostSources>();
  if (db.empty()) return c;
  c->store = StoreCosts::load(db);
  c->chain.add(c->store->measured());
  c->chain.add(c->store->interpolated());
  // Models fitted on the store (shardcost fit), before the catalog.
  c->learned = LearnedCosts::load(db, &c->warnings);
  c->chain.add(*c->learned);
  return c;
}

namespace requests {

std::shared_ptr<const CostSources> costs_for(const PlanRequest& a, const CostSources* given,
                                             std::vector<std::string>* warnings) {
  if (given) return {std::shared_ptr<const CostSources>(), given};  // the caller's
  std::shared_ptr<const CostSources> read = load_cost_sources(a.db);
  *warnings = read->warnings;
  return read;
}

PlanRequest resolved(const PlanRequest& a) {
  if (!is_onnx_path(a.model) && (a.epoch_samples != 0 || a.optimizer != "sgd"))
    throw InputError(
        "--epoch-samples and --optimizer apply to operator graphs (--model FILE.onnx)");
  if (is_onnx_path(a.model) && (!a.attention.empty() || a.seq_len))
    throw InputError(
        "--attention and --seq-len apply to transformer models, not operator graphs (.onnx)");
  // The sampling of variable-length data, without the data: nothing would read it.
  const VarlenRequest& v = a.varlen;
  const VarlenRequest none;
  if (!v.given() &&
      (v.seed != none.seed || v.batches != none.batches || v.long_seqs != none.long_seqs ||
       v.pad_to != none.pad_to || v.batch_tokens != none.batch_tokens))
    throw InputError(
        "--seed, --batches, --long-seqs, --pad-to and --batch-tokens sample variable-length "
        "data: give --seq-lengths FILE or --seq-dist too, or leave them out");
  PlanRequest r = a;
  if (r.software.empty()) r.software = is_onnx_path(a.model) ? "pytorch-ddp" : "megatron-core";
  return r;
}

std::optional<DataLoading> loading_of(const PlanRequest& a) {
  if (a.data_loading.empty()) return std::nullopt;
  if (a.varlen.given())
    throw InputError(
        "--data-loading prices fixed-length steps; leave out --seq-lengths/--seq-dist, or "
        "--data-loading");
  return parse_data_loading(a.data_loading);
}

Software software_of(const PlanRequest& a) {
  Software sw = parse_software(a.software);
  if (!a.attention.empty()) sw.fused_attention = parse_fused_attention(a.attention);
  if (a.memory_headroom_gib) {
    const double gib = *a.memory_headroom_gib;
    if (!(gib >= 0 && gib <= 1024))
      throw InputError(fmt::format(
          "--memory-headroom {} is not a size in GiB from 0 to 1024; give what a GPU holds "
          "beyond the modelled state and activations, e.g. 3",
          gib));
    sw.memory_fixed_bytes = gib * units::kGiB;
    sw.memory_fragmentation = 0;
  }
  return sw;
}

Model model_of(const PlanRequest& a) {
  Model m = load_model(a.model);
  if (a.seq_len) {
    constexpr int kMaxSeqLen = 1 << 27;  // a model file's bound (inputs.cpp)
    if (*a.seq_len < 1 || *a.seq_len > kMaxSeqLen)
      throw InputError(fmt::format("--seq-len {} is not a sequence length; give 1 to {} tokens",
                                   *a.seq_len, kMaxSeqLen));
    m.seq_len = *a.seq_len;
  }
  return m;
}

Cluster cluster_of(const PlanRequest& a) {
  Cluster c = load_cluster(a.cluster, a.gpus);
  if (!a.network_trace.empty()) c.network_trace = load_network_trace(a.network_trace);
  return c;
}

}  // namespace requests
}  // namespace shardcost
