// Plan files: the strategy keys that hold for every stage, and each stage's layers and
// replicas. On a homogeneous cluster a plan prices exactly as the strategy string it spells
// out; per-replica devices and TP degrees that differ are the heterogeneous planner's.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <numeric>

#include "estimate_internal.h"
#include "inputs/json_fields.h"
#include "shardcost/error.h"
#include "shardcost/plan.h"
#include "strategy_text.h"

namespace shardcost {
namespace {

// Plans are new: a key they do not know is a typo, not a feature of a later version.
void known_keys(const nlohmann::json& j, const std::string& where,
                std::initializer_list<const char*> keys) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (!known) {
      std::string list;
      for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
      throw InputError(fmt::format("{}: unknown field '{}'; the fields are {}", where, key, list));
    }
  }
}

bool pinned(const std::vector<std::string>& keys, const char* key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

std::optional<std::string> check_stage_layers(const Workload& w, const Strategy& s,
                                              const std::vector<int>& layers) {
  if (static_cast<int>(layers.size()) != s.pp)
    return fmt::format("{} stage layer counts for pp={}", layers.size(), s.pp);
  // Stages that hold no layers lead or trail the pipeline: they hold the embedding (or part
  // of it: token and position embeddings on stages of their own) or the head. A stage between
  // two that hold layers holds at least one.
  const auto first = std::find_if(layers.begin(), layers.end(), [](int n) { return n > 0; });
  const auto last = std::find_if(layers.rbegin(), layers.rend(), [](int n) { return n > 0; });
  for (size_t i = 0; i < layers.size(); ++i) {
    const bool inside = first != layers.end() &&
                        static_cast<std::ptrdiff_t>(i) > first - layers.begin() &&
                        static_cast<std::ptrdiff_t>(i) < layers.rend() - last - 1;
    if (layers[i] < 0 || (layers[i] == 0 && (inside || first == layers.end())))
      return fmt::format(
          "stage {} holds {} layers; a stage between two that hold layers holds at least one "
          "(stages with none may only lead the pipeline, holding the embedding, or trail it, "
          "holding the head)",
          i, layers[i]);
  }
  const int sum = std::accumulate(layers.begin(), layers.end(), 0);
  if (sum != w.layers())
    return fmt::format("the stages hold {} layers but {} has {}; make them add up", sum, w.name(),
                       w.layers());
  return std::nullopt;
}

Plan parse_plan_json(std::string_view text, std::string_view origin, const Cluster& c, int layers) {
  const auto j = parse_json_text(text, origin);
  const std::string where(origin);
  JsonFields f(j, where);
  known_keys(j, where, {"strategy", "stages"});
  Plan plan;
  Strategy& s = plan.strategy;
  const std::vector<std::string> keys =
      apply_strategy_text(f.optional_string("strategy").value_or(""), s);
  if (pinned(keys, "stage_tp") || pinned(keys, "layers"))
    f.fail("strategy", fmt::format("gives {}; a plan file gives each stage's layers and each "
                                   "replica's tp in its stages",
                                   pinned(keys, "layers") ? "layers" : "stage_tp"));
  const nlohmann::json* stages = f.optional_array("stages");
  if (!stages || stages->empty())
    f.fail("stages",
           "is missing or empty; give one {\"layers\": N, \"replicas\": [...]} per "
           "pipeline stage");
  for (size_t i = 0; i < stages->size(); ++i) {
    const std::string at = fmt::format("{} stages[{}]", where, i);
    const nlohmann::json& sj = (*stages)[i];
    JsonFields sf(sj, at);
    known_keys(sj, at, {"layers", "replicas"});
    StagePlan stage;
    stage.layers = sf.required_int("layers", 0);  // 0: the embedding's or the head's alone
    const nlohmann::json* replicas = sf.optional_array("replicas");
    if (!replicas || replicas->empty())
      sf.fail("replicas",
              "is missing or empty; give each data-parallel replica as "
              "{\"group\": \"g0\", \"tp\": 8}");
    for (size_t r = 0; r < replicas->size(); ++r) {
      const std::string rat = fmt::format("{} replicas[{}]", at, r);
      const nlohmann::json& rj = (*replicas)[r];
      JsonFields rf(rj, rat);
      known_keys(rj, rat, {"group", "tp"});
      Replica rep;
      if (auto g = rf.optional_string("group")) {
        rep.group = *g;
      } else if (c.groups.size() == 1) {
        rep.group = c.groups.front().name;
      } else {
        rf.fail("group", "is missing; name the cluster group this replica runs on");
      }
      if (!c.group(rep.group))
        rf.fail("group", fmt::format("names '{}', which the cluster does not have; its groups are "
                                     "{}",
                                     rep.group, c.group_names()));
      const auto tp = rf.optional_int("tp", 1);
      if (!tp && !pinned(keys, "tp"))
        rf.fail("tp", "is missing; give the replica's tensor-parallel size");
      rep.tp = tp.value_or(s.tp);
      stage.replicas.push_back(rep);
    }
    if (!plan.stages.empty() && stage.replicas.size() != plan.stages.front().replicas.size())
      throw InputError(
          fmt::format("{}: {} replicas where stage 0 has {}; stages with different "
                      "data-parallel sizes are not priced yet (one dp for all)",
                      at, stage.replicas.size(), plan.stages.front().replicas.size()));
    plan.stages.push_back(std::move(stage));
  }

  // Replicas may differ in tensor-parallel degree (the heterogeneous planner prices each on
  // its own and reshards between them); a tp the strategy pins is every replica's.
  const Replica& first = plan.stages.front().replicas.front();
  for (size_t i = 0; i < plan.stages.size(); ++i)
    for (size_t r = 0; r < plan.stages[i].replicas.size(); ++r)
      if (pinned(keys, "tp") && plan.stages[i].replicas[r].tp != s.tp)
        throw InputError(
            fmt::format("{} stages[{}] replicas[{}]: tp={} where the strategy says tp={}; drop "
                        "tp from the strategy (each replica gives its own) or make them agree",
                        where, i, r, plan.stages[i].replicas[r].tp, s.tp));
  const int pp = static_cast<int>(plan.stages.size());
  const int dp = static_cast<int>(plan.stages.front().replicas.size());
  auto agree = [&](const char* key, int given, int from_stages) {
    if (pinned(keys, key) && given != from_stages)
      f.fail("strategy", fmt::format("says {}={} but the stages give {}={}; drop the key or make "
                                     "them agree",
                                     key, given, key, from_stages));
  };
  agree("pp", s.pp, pp);
  agree("dp", s.dp, dp);
  s.tp = first.tp;
  s.pp = pp;
  s.dp = dp;
  // A degree per stage that all its replicas share is the strategy's stage_tp (what
  // --strategy can say too); replicas of one stage that differ only a plan file can give.
  bool per_stage = true, differ = false;
  for (const StagePlan& st : plan.stages)
    for (const Replica& r : st.replicas) {
      per_stage = per_stage && r.tp == st.replicas.front().tp;
      differ = differ || r.tp != first.tp;
    }
  if (differ && per_stage)
    for (const StagePlan& st : plan.stages) s.stage_tp.push_back(st.replicas.front().tp);
  if (!pinned(keys, "gbs")) s.gbs = s.mbs * s.dp;
  for (const StagePlan& st : plan.stages) plan.stage_layers.push_back(st.layers);
  const int sum = std::accumulate(plan.stage_layers.begin(), plan.stage_layers.end(), 0);
  if (sum != layers)
    f.fail("stages", fmt::format("hold {} layers in all but the model has {}; make the stages' "
                                 "layers add up",
                                 sum, layers));
  return plan;
}

Plan load_plan(std::string_view path, const Cluster& c, int layers) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::path(path), ec))
    throw InputError(
        fmt::format("cannot open plan file '{}': no such file; give the path of a "
                    "plan JSON file (format in docs/architecture.md)",
                    path));
  return parse_plan_json(read_text_file(path, "plan file"), fmt::format("plan file '{}'", path), c,
                         layers);
}

}  // namespace shardcost
