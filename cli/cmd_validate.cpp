#include <fmt/format.h>

#include <cmath>

#include "commands.h"
#include "format.h"
#include "shardcost/calibration.h"
#include "shardcost/db.h"
#include "shardcost/estimator.h"
#include "shardcost/request.h"

namespace shardcost::cli {

void add_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "validate", "Reproduce published training results and print the error row by row");
  auto format = std::make_shared<std::string>("text");
  auto db = std::make_shared<std::string>();
  cmd->add_option("--format", *format,
                  "text, json, csv, or runs: every published row as a measured run, the table "
                  "'shardcost import runs' reads (docs/calibration.md)");
  cmd->add_option("--db", *db,
                  "price every table from this cost store's measurements (and models fitted on "
                  "it) where it has them, the catalog elsewhere; with its step calibrations "
                  "(fit --table step), each row calibrated where one covers it");
  cmd->callback([format, db] {
    const bool runs = *format == "runs";
    const Format f =
        runs ? Format::csv : parse_format(*format, {Format::text, Format::json, Format::csv});
    const auto costs = load_cost_sources(*db);
    say_warnings(costs->warnings);
    EstimateOptions base;
    base.costs = costs->source();
    const ValidationReport r = validate(base);
    // A store's step calibrations, applied to every row they cover (validate --db).
    std::vector<CalibratedRow> calibrated;
    if (!db->empty() && !runs) {
      const auto calibrations = load_step_calibrations(*db);
      if (!calibrations.empty()) {
        std::vector<db::MeasuredStepRecord> store_runs;
        for (auto& m : db::Store::open(*db, db::Store::Mode::read_only).measured_steps())
          store_runs.push_back(std::move(m.record));
        calibrated = calibrate_rows(r, calibrations, store_runs, costs->source());
      }
    }
    // A table's calibrated rows: their mean |error|, how many, how many in-sample.
    struct CalibratedSummary {
      double error = 0;
      int rows = 0, in_sample = 0;
    };
    const auto summary = [&](std::string_view table) {
      CalibratedSummary out;
      for (size_t i = 0; i < calibrated.size(); ++i) {
        if (r.rows[i].table != table || !calibrated[i].step_s) continue;
        out.error += std::abs(*calibrated[i].step_s / r.rows[i].published_s - 1);
        ++out.rows;
        out.in_sample += calibrated[i].in_sample;
      }
      if (out.rows > 0) out.error /= out.rows;
      return out;
    };
    if (runs) {
      // Each published run once, with the plan it was priced as (the fixed rule's rows are the
      // same runs as Narayanan's searched ones).
      std::vector<db::MeasuredStepRecord> records;
      for (const auto& row : r.rows) {
        if (row.table == "megatron2021_fixed_rule") continue;
        MeasuredFigures figures;
        figures.step_s = row.published_s;
        records.push_back(measured_record(row.model, row.cluster,
                                          run_cluster(row.cluster, row.gpus), row.strategy,
                                          row.software, figures, row.table + ": " + row.label));
      }
      fmt::print("{}", runs_table_csv(records));
      return;
    }
    // Each table with the title its text output gives it.
    const std::pair<const char*, const char*> tables[] = {
        {"korthikanti2022", "Korthikanti et al. 2022, Table 5 (DGX A100, given strategies)"},
        {"megatron2021",
         "Narayanan et al. 2021, Table 1 (DGX A100; tp, pp, dp given, mbs/vpp/zero searched)"},
        {"megatron2021_fixed_rule",
         "Narayanan et al. 2021, Table 1 under a fixed rule (mbs=1, no interleaving, as the "
         "example scripts ran)"},
        {"megatron_core_h100_2024",
         "Megatron-core r0.8 weak scaling, DGX H100, BF16 (TFLOP/s per GPU as Megatron counts "
         "them; tp, pp, dp given, mbs/vpp/recompute searched)"},
        {"nemo_2407_h100_fp8",
         "NeMo 24.07, DGX H100, FP8 (tokens/s per GPU; every size given, recompute searched)"},
        {"deepseek_v3_h800_2024",
         "DeepSeek-V3 technical report, 2,048 H800, FP8, DualPipe (GPU-hours per trillion "
         "tokens; strategy, schedule and recomputation as published)"},
        {"megatron_bridge_h100",
         "Megatron-Bridge 25.09-26.08, DGX H100 (tokens/s per GPU; every size given, recompute "
         "searched)"},
        {"megatron_bridge_b200", "Megatron-Bridge 25.09-26.08, DGX B200 (the same)"},
        {"megatron_bridge_b300", "Megatron-Bridge 25.09-26.08, DGX B300 (the same)"},
        {"megatron_bridge_gb200", "Megatron-Bridge 25.09-26.08, GB200 NVL72 (the same)"},
        {"megatron_bridge_gb300", "Megatron-Bridge 25.09-26.08, GB300 NVL72 (the same)"}};
    if (f == Format::json) {
      nlohmann::json j;
      for (const auto& [t, title] : tables) {
        nlohmann::json rows = nlohmann::json::array();
        for (size_t i = 0; i < r.rows.size(); ++i) {
          const auto& row = r.rows[i];
          if (row.table != t) continue;
          nlohmann::json o = {{"label", row.label},
                              {"strategy", to_json(row.strategy)},
                              {"published_s", row.published_s},
                              {"predicted_s", std::round(row.predicted_s * 1000) / 1000},
                              {"fits", row.fits},
                              {"error", std::round(row.error() * 10000) / 10000}};
          if (!calibrated.empty() && calibrated[i].step_s) {
            o["calibrated_s"] = std::round(*calibrated[i].step_s * 1000) / 1000;
            o["in_sample"] = calibrated[i].in_sample;
          }
          rows.push_back(o);
        }
        j[t] = {{"rows", rows},
                {"mean_abs_error", std::round(r.mean_abs_error(t) * 10000) / 10000},
                {"max_abs_error", std::round(r.max_abs_error(t) * 10000) / 10000}};
        if (const CalibratedSummary c = summary(t); c.rows > 0)
          j[t]["calibrated"] = {{"mean_abs_error", std::round(c.error * 10000) / 10000},
                                {"rows", c.rows},
                                {"in_sample_rows", c.in_sample}};
      }
      nlohmann::json counts = nlohmann::json::array();
      for (const auto& c : r.counts)
        counts.push_back({{"model", c.model},
                          {"published", c.published},
                          {"computed", c.computed},
                          {"error", c.error()},
                          {"published_active", c.published_active},
                          {"computed_active", c.computed_active}});
      j["released_checkpoints"] = counts;
      nlohmann::json flops = nlohmann::json::array();
      for (const auto& row : r.flops)
        flops.push_back({{"model", row.model},
                         {"seq_len", row.seq_len},
                         {"published", row.published},
                         {"computed_causal", row.computed_causal},
                         {"computed_full", row.computed_full},
                         {"error", row.error()}});
      j["published_flops"] = flops;
      fmt::print("{}\n", json_text(j));
      return;
    }
    if (f == Format::csv) {
      fmt::print("table,label,published_s,predicted_s,error,strategy\n");
      for (const auto& row : r.rows)
        fmt::print("{},{},{},{:.3f},{:.4f},{}\n", row.table, row.label, row.published_s,
                   row.predicted_s, row.error(), csv_escape(to_string(row.strategy)));
      return;
    }
    const bool with_calibration = !calibrated.empty();
    for (const auto& [table, title] : tables) {
      std::vector<std::string> header{"row", "published s", "predicted s", "error"};
      std::vector<bool> right{false, true, true, true};
      if (with_calibration) {
        header.insert(header.end(), {"calibrated s", "error", "fitted on"});
        right.insert(right.end(), {true, true, false});
      }
      header.emplace_back("strategy");
      right.push_back(false);
      Table t(header, right);
      for (size_t i = 0; i < r.rows.size(); ++i) {
        const auto& row = r.rows[i];
        if (row.table != table) continue;
        std::vector<std::string> cells{row.fits ? row.label : row.label + " (does not fit)",
                                       fmt::format("{:.2f}", row.published_s),
                                       fmt::format("{:.2f}", row.predicted_s),
                                       fmt::format("{:+.1f} %", 100 * row.error())};
        if (with_calibration) {
          const auto& k = calibrated[i];
          cells.push_back(k.step_s ? fmt::format("{:.2f}", *k.step_s) : "-");
          cells.push_back(
              k.step_s ? fmt::format("{:+.1f} %", 100 * (*k.step_s / row.published_s - 1)) : "-");
          cells.emplace_back(k.step_s && k.in_sample ? "in-sample" : "");
        }
        cells.push_back(to_string(row.strategy));
        t.add(cells);
      }
      fmt::print("{}\n{}mean absolute error {:.2f} %, worst {:.2f} %\n", title, t.render(2),
                 100 * r.mean_abs_error(table), 100 * r.max_abs_error(table));
      if (with_calibration) {
        const CalibratedSummary c = summary(table);
        if (c.rows > 0)
          fmt::print(
              "calibrated: mean absolute error {:.2f} % on the {} row{} a calibration covers, "
              "{} of them among the runs it was fitted on (in-sample: how well it fits, not how "
              "it predicts; fit --table step gives the held-out error)\n",
              100 * c.error, c.rows, c.rows == 1 ? "" : "s", c.in_sample);
        else
          fmt::print("calibrated: no calibration in the store covers these rows\n");
      }
      fmt::print("\n");
    }
    Table counts({"model", "checkpoint", "computed", "error", "activated", "computed", "error"},
                 {false, true, true, true, true, true, true});
    for (const auto& c : r.counts)
      counts.add({c.model, fmt::format("{:.0f}", c.published), fmt::format("{:.0f}", c.computed),
                  fmt::format("{:+.4f} %", 100 * c.error()),
                  fmt::format("{:.0f}B", c.published_active / 1e9),
                  fmt::format("{:.2f}B", c.computed_active / 1e9),
                  fmt::format("{:+.1f} %", 100 * c.active_error())});
    fmt::print(
        "Parameters against the released checkpoints (every stored element; activated per "
        "token as published, rounded)\n{}\n",
        counts.render(2));
    Table flops({"model", "seq", "published GFLOP", "causal", "error", "whole square"},
                {false, true, true, true, true, true});
    for (const auto& row : r.flops)
      flops.add({row.model, fmt::format("{}", row.seq_len),
                 fmt::format("{:.0f}", row.published / 1e9),
                 fmt::format("{:.1f}", row.computed_causal / 1e9),
                 fmt::format("{:+.1f} %", 100 * row.error()),
                 fmt::format("{:.1f}", row.computed_full / 1e9)});
    fmt::print(
        "Training FLOPs per token as published (Zhao et al., ISCA '25, Table 2: causal "
        "attention, no MTP) against this count\n{}",
        flops.render(2));
  });
}

}  // namespace shardcost::cli
