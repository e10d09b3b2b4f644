#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "shardcost/estimator.h"

namespace shardcost {
namespace {

// One set of catalog constants for every row, each paper priced with the Megatron-LM of its
// time. The mean bound is the project's target (issue 2: at most 5 % on each table); the
// worst-row bounds sit a little above today's worst rows (docs/validation.md).
TEST(Validate, KorthikantiTable5StaysWithinItsBound) {
  const ValidationReport r = validate();
  EXPECT_EQ(std::count_if(r.rows.begin(), r.rows.end(),
                          [](const auto& x) { return x.table == "korthikanti2022"; }),
            8);
  EXPECT_LE(r.mean_abs_error("korthikanti2022"), 0.05);
  EXPECT_LE(r.max_abs_error("korthikanti2022"), 0.07);
}

TEST(Validate, Megatron2021Table1StaysWithinItsBound) {
  const ValidationReport r = validate();
  EXPECT_EQ(std::count_if(r.rows.begin(), r.rows.end(),
                          [](const auto& x) { return x.table == "megatron2021"; }),
            10);
  EXPECT_LE(r.mean_abs_error("megatron2021"), 0.05);
  EXPECT_LE(r.max_abs_error("megatron2021"), 0.08);
  for (const auto& row : r.rows) {
    if (row.table != "megatron2021") continue;
    EXPECT_EQ(row.strategy.recompute, Recompute::full) << row.label;
    EXPECT_EQ(row.strategy.zero, 0) << row.label;  // no distributed optimizer in 2021
    EXPECT_GT(row.predicted_s, 0) << row.label;
  }
}

// The searched rows beside a fixed, documented rule (mbs=1, no interleaving): the rule's plan is
// one the search considers, so the search is never slower; the rule's error is reported, not
// bounded (docs/validation.md).
TEST(Validate, Megatron2021UnderAFixedRuleIsShownBesideTheSearch) {
  const ValidationReport r = validate();
  std::map<std::string, double> searched;
  for (const auto& row : r.rows)
    if (row.table == "megatron2021") searched[row.label] = row.predicted_s;
  int fixed = 0;
  for (const auto& row : r.rows) {
    if (row.table != "megatron2021_fixed_rule") continue;
    ++fixed;
    EXPECT_EQ(row.strategy.mbs, 1) << row.label;
    EXPECT_EQ(row.strategy.vpp, 1) << row.label;
    ASSERT_TRUE(searched.count(row.label)) << row.label;
    EXPECT_LE(searched[row.label], row.predicted_s * (1 + 1e-12)) << row.label;
  }
  EXPECT_EQ(fixed, 10);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// The two tables of today's stacks (issue 12, item 15). Every row is priced (a row no plan fits
// would throw), with the published stack's keys pinned. Issue 32's targets are a mean of 8 %
// for both; the bounds below hold today's figures, the Megatron-core table still above its
// target (docs/validation.md says where its 16 % comes from).
TEST(Validate, MegatronCoreH100StaysWithinItsBound) {
  const ValidationReport r = validate();
  int rows = 0;
  for (const auto& row : r.rows) {
    if (row.table != "megatron_core_h100_2024") continue;
    ++rows;
    EXPECT_EQ(row.strategy.precision, DType::bf16) << row.label;
    EXPECT_EQ(row.strategy.zero, 1) << row.label;
    EXPECT_EQ(row.strategy.sp, row.strategy.tp > 1) << row.label;
  }
  EXPECT_EQ(rows, 9);
  EXPECT_LE(r.mean_abs_error("megatron_core_h100_2024"), 0.163);
  EXPECT_LE(r.max_abs_error("megatron_core_h100_2024"), 0.195);
}

TEST(Validate, Nemo2407Fp8StaysWithinItsBound) {
  const ValidationReport r = validate();
  int rows = 0;
  for (const auto& row : r.rows) {
    if (row.table != "nemo_2407_h100_fp8") continue;
    ++rows;
    EXPECT_EQ(row.strategy.precision, DType::fp8) << row.label;
  }
  EXPECT_EQ(rows, 12);
  EXPECT_LE(r.mean_abs_error("nemo_2407_h100_fp8"), 0.05);
  // Every row without full recomputation: NeMo keeps bf16 gradients, so Nemotron-4-340B at
  // dp = 2 and GPT-3 20B fit as they ran (with fp32 gradients they needed full recomputation,
  // a third more compute, +25 %); docs/validation.md.
  for (const auto& row : r.rows)
    if (row.table == "nemo_2407_h100_fp8") {
      EXPECT_NE(row.strategy.recompute, Recompute::full) << row.label;
    }
  EXPECT_LE(r.max_abs_error("nemo_2407_h100_fp8"), 0.10);
}

// The accuracy gate (issue 32): no table's mean error may grow by more than one point over
// the figures recorded here; a change that improves a table lowers its figure here. Raised
// only with a modelling change that its own test and docs/validation.md justify: the MoE
// dispatch as DeepEP and HybridEP run it, with the permute and router passes (2026-12-04),
// took DeepSeek-V3 on H800 from 0.3 to 10.0 % (its flat all-to-all, now one copy per node,
// had been exposed), B300 9.4 -> 10.1 %, GB300 11.6 -> 12.7 %, and B200 17.4 -> 7.3 %; the
// DeepSeek-V3 recipes' own pipeline layout (the last stage one layer with the MTP module and
// the loss, not the even split that made it the slowest) with the all-to-all overlap only
// where Megatron-core runs it (2026-12-05) took B200 7.3 -> 13.8 % and GB200 9.7 -> 10.7 %:
// every DeepSeek-V3 row of B200 now too fast (docs/validation.md). The LM head's all-gather
// exposed, as Megatron's own ColumnParallelLinear runs it (2026-12-06), took Bridge H100
// 7.88 -> 7.98 % (its Llama 3 70B rows too slow already) while the Megatron-core H100 rows,
// every one too fast, went 12.93 -> 12.84 %. B200's FP8 GEMMs at their measured share of
// bf16's efficiency shape by shape (2026-12-06, Device::gemm_fp8_shape) took B200 11.11 ->
// 5.68 %. The loss as Megatron-Bridge's runs compute it, Transformer Engine's fused cross
// entropy (2026-12-06, Software::cross_entropy), took Bridge H100 7.98 -> 5.80 % and GB300
// 6.63 -> 6.12 %, but B200 5.68 -> 8.08 %, B300 6.12 -> 16.04 % and GB200 8.21 -> 10.08 %:
// the DeepSeek-V3 rows' last stage, one layer with the MTP module and two losses, sets their
// pace, and its unfused loss had covered MoE layers priced too fast (docs/validation.md).
// B200's measured FP8 grid on the Blackwell parts without a table (GB200, the same die; B300
// and GB300, Blackwell Ultra with B200's FP8 peak) then took B300 16.04 -> 3.55 % and GB200
// 10.08 -> 7.74 %, and GB300 6.12 -> 9.13 % (its DeepSeek-V3 rows of 26.04-26.08 now too
// slow by 15-22 %, like its Llama FP8 rows). Pricing Megatron-Bridge's rows at the cuDNN its
// 2025-26 images ship (cudnn=9.13: Hopper's 9.19.1 curve) took Bridge H100 5.80 -> 4.54 %.
// GB200 and B300 at B200's measured FP8 efficiency (MAMF, one harness, has both within 6 % of
// B200), Azure's GB200 figure held back: GB200 7.74 -> 5.66 %, B300 3.55 -> 2.25 %; then their
// bf16 efficiency their own MAMF burst times B200's sustained-to-burst ratio: 5.48 and 2.13 %.
TEST(Validate, NoTablesMeanErrorGrowsByMoreThanAPoint) {
  const ValidationReport r = validate();
  const std::pair<const char*, double> recorded[] = {
      {"korthikanti2022", 0.0236},         {"megatron2021", 0.0441},
      {"megatron2021_fixed_rule", 0.1049}, {"megatron_core_h100_2024", 0.1134},
      {"nemo_2407_h100_fp8", 0.0312},      {"deepseek_v3_h800_2024", 0.1004},
      {"megatron_bridge_h100", 0.0454},    {"megatron_bridge_b200", 0.0808},
      {"megatron_bridge_b300", 0.0213},    {"megatron_bridge_gb200", 0.0548},
      {"megatron_bridge_gb300", 0.0913}};
  for (const auto& [table, mean] : recorded) {
    EXPECT_GT(r.max_abs_error(table), 0) << table << ": no rows";
    EXPECT_LE(r.mean_abs_error(table), mean + 0.01) << table;
  }
}

}  // namespace

namespace {

TEST(Validate, TodaysFamiliesCountsAndFlopsAgainstWhatWasPublished) {
  const ValidationReport r = validate();
  ASSERT_EQ(r.counts.size(), 3u);
  for (const CountRow& c : r.counts) {
    EXPECT_DOUBLE_EQ(c.computed, c.published) << c.model;    // every stored element
    EXPECT_LT(std::abs(c.active_error()), 0.03) << c.model;  // against rounded figures
  }
  ASSERT_EQ(r.flops.size(), 2u);
  for (const FlopRow& f : r.flops) {
    EXPECT_LT(std::abs(f.error()), 0.02) << f.model;
    EXPECT_GT(f.computed_full, f.computed_causal);
  }
  // DeepSeek-V3's run is priced and printed; its target is the issue's, not a test's. Its
  // plan ran on 80 GB H800s: with the report's savings the model has, DualPipe's micro-batches
  // per direction, one loss's logits at a time and the MTP layer recomputed as the body's, it
  // needs 79.1 GiB of 79.65 (docs/model-families.md): it fits.
  EXPECT_EQ(r.mean_abs_error("deepseek_v3_h800_2024") > 0, true);
  for (const auto& row : r.rows) {
    if (row.table == "deepseek_v3_h800_2024") {
      EXPECT_TRUE(row.fits) << row.label;
    }
  }
}

// Megatron-Bridge's performance summary (releases 25.09-26.08): every row whose precision is
// stated (101 of 112) is priced with its published sizes, one table per GPU family; issue 32's
// targets (10 % per family, 15 % on DeepSeek-V3) are far off on Blackwell and for DeepSeek-V3
// (docs/validation.md); the gate above holds today's means.
TEST(Validate, MegatronBridgeRowsArePricedWithTheirPublishedSizes) {
  const ValidationReport r = validate();
  int rows = 0, not_fitting = 0;
  std::map<std::string, int> per_family;
  for (const auto& row : r.rows) {
    if (row.table.rfind("megatron_bridge_", 0) != 0) continue;
    ++rows;
    ++per_family[row.table];
    if (!row.fits) ++not_fitting;
    EXPECT_GT(row.published_s, 0) << row.label;
    EXPECT_GT(row.predicted_s, 0) << row.label;
    EXPECT_EQ(row.strategy.sp, row.strategy.tp > 1) << row.label;
  }
  EXPECT_EQ(rows, 101);
  EXPECT_EQ(per_family.size(), 5u);
  // The recipes' memory settings (megatron_bridge_recipes.csv): Llama 3 70B FP8 under FSDP at
  // mbs 2 offloads 40 layers' activations on GB200 and 20 on GB300, without recomputation;
  // no other row takes them.
  int offloaded = 0;
  for (const auto& row : r.rows) {
    if (row.strategy.offload == 0) continue;
    ++offloaded;
    EXPECT_EQ(row.strategy.offload, row.table == "megatron_bridge_gb200" ? 40 : 20) << row.label;
    EXPECT_EQ(row.strategy.recompute, Recompute::none) << row.label;
    EXPECT_NE(row.label.find("llama3-70b fp8"), std::string::npos) << row.label;
  }
  EXPECT_EQ(offloaded, 10);
  // DeepSeek-V3 at a recipe's sizes and release recomputes MLA's up projections where that
  // recipe does (GB200 in 26.02-26.02.01 and from 26.06, and its 25.11 BF16 row; B200 and
  // B300 throughout; GB300 at mbs 2): not GB200's 26.04 rows, whose recipes recompute only the
  // dense layers' MLPs, nor GB300's from 26.06; nothing else recomputes them. The dense MLPs
  // where a recipe recomputes them: GB200's two 26.04 rows, and B200's 26.04.01 one beside MLA's
  // up projections.
  int up_proj = 0, mlp = 0;
  for (const auto& row : r.rows) {
    if (row.table == "deepseek_v3_h800_2024") continue;
    if (row.strategy.recompute_modules & kRecomputeMlp) {
      ++mlp;
      EXPECT_TRUE((row.table == "megatron_bridge_gb200" && row.label.rfind("26.04", 0) == 0) ||
                  (row.table == "megatron_bridge_b200" && row.label.rfind("26.04.01", 0) == 0))
          << row.label;
    }
    if ((row.strategy.recompute_modules & kRecomputeMlaUpProj) == 0) continue;
    ++up_proj;
    EXPECT_EQ(row.strategy.recompute, Recompute::selective) << row.label;
    EXPECT_NE(row.label.find("deepseek-v3"), std::string::npos) << row.label;
    EXPECT_FALSE(row.table == "megatron_bridge_gb200" && row.label.rfind("26.04", 0) == 0)
        << row.label;
  }
  EXPECT_EQ(up_proj, 20);  // 6 on GB200, 5 on B200, 5 on B300, 4 on GB300
  EXPECT_EQ(mlp, 3);
  // DeepSeek-V3's stages as its recipes lay them out (_get_deepseek_v3_pipeline_layout, and
  // GB300's "Et*4|(t*4|)*14tmL"): at pp 16 four layers a stage and one on the last with the MTP
  // module and the loss; at pp 4 (any vp) 16, 16, 16 and 13; at pp 2, vp 8, 32 and 29; the
  // all-to-all overlap only where Megatron-core runs it (no pipeline, or an interleaved one).
  std::vector<int> pp16(15, 4);
  pp16.push_back(1);
  int laid_out = 0;
  for (const auto& row : r.rows) {
    if (row.label.find("deepseek-v3") == std::string::npos || row.table == "deepseek_v3_h800_2024")
      continue;
    const Strategy& s = row.strategy;
    if (s.pp == 16) {
      EXPECT_EQ(s.stage_layers, pp16) << row.label;
    }
    if (s.pp == 4) {
      EXPECT_EQ(s.stage_layers, (std::vector<int>{16, 16, 16, 13})) << row.label;
    }
    if (s.pp == 2 && s.vpp == 8) {
      EXPECT_EQ(s.stage_layers, (std::vector<int>{32, 29})) << row.label;
    }
    if (!s.stage_layers.empty()) ++laid_out;
    if (s.ep_overlap) {
      EXPECT_TRUE(s.pp == 1 || s.vpp > 1) << row.label;
    }
    // The all-to-all overlap where the row's release's recipe turns it on: GB200 and GB300
    // from 26.06, B200's 26.04.01 DeepEP recipe; no Blackwell recipe before.
    const bool from_26_06 = row.label.rfind("26.06", 0) == 0 || row.label.rfind("26.08", 0) == 0;
    const bool overlaps =
        (from_26_06 &&
         (row.table == "megatron_bridge_gb200" || row.table == "megatron_bridge_gb300")) ||
        (row.table == "megatron_bridge_b200" && row.label.rfind("26.04.01", 0) == 0);
    EXPECT_EQ(s.ep_overlap, overlaps) << row.label;
  }
  // 5 on B200, 5 on B300, 8 on GB200, 8 on GB300 (pp 2, vp 8: 32 and 29); pp 8 at vp 4 and
  // pp 2 at vp 4 have no recipe layout.
  EXPECT_EQ(laid_out, 26);
  // Every row fits: GB300's Llama 3 70B NVFP4 row of 26.02.01, published at pp 1 and mbs 2
  // without FSDP (no memory model fits that in 288 GB), runs at its recipe's pp 4, vp 5 and
  // mbs 1 (megatron_bridge_corrections.csv), as does that release's MXFP8 row, and says so.
  EXPECT_EQ(not_fitting, 0);
  int corrected = 0;
  for (const auto& row : r.rows) {
    if (row.label.find("(recipe's sizes)") == std::string::npos) continue;
    ++corrected;
    EXPECT_EQ(row.table, "megatron_bridge_gb300") << row.label;
    EXPECT_EQ(row.label.rfind("26.02.01 llama3-70b", 0), 0u) << row.label;
    EXPECT_EQ(row.strategy.pp, 4) << row.label;
    EXPECT_EQ(row.strategy.vpp, 5) << row.label;
    EXPECT_EQ(row.strategy.mbs, 1) << row.label;
  }
  EXPECT_EQ(corrected, 2);
}

// The recipes' overlaps by release: up to 25.11 (Megatron-Bridge v0.2.x) MXFP8 ran without the
// parameter all-gather's overlap in the Llama recipes on Blackwell and the DeepSeek-V3 ones on
// GB200 and GB300 ("keeping this enabled causes NaN grad norm"), not B200's DeepSeek-V3 one;
// from 26.02 (v0.3.0) MXFP8 keeps it. NVFP4 Llama rows run without the userbuffers overlap.
TEST(Validate, MegatronBridgeRowsTakeTheirReleasesOverlaps) {
  const ValidationReport r = validate();
  int without_gather_overlap = 0, mxfp8 = 0;
  for (const auto& row : r.rows) {
    if (row.table.rfind("megatron_bridge_", 0) != 0) continue;
    const bool before_26_02 = row.label.rfind("25.", 0) == 0;
    const bool deepseek = row.label.find("deepseek-v3") != std::string::npos;
    const bool nvl72 = row.table == "megatron_bridge_gb200" || row.table == "megatron_bridge_gb300";
    if (row.label.find(" mxfp8 ") != std::string::npos) {
      ++mxfp8;
      EXPECT_EQ(row.software.overlap_param_gather, !(before_26_02 && (!deepseek || nvl72)))
          << row.table << " " << row.label;
    }
    if (!row.software.overlap_param_gather) ++without_gather_overlap;
    if (row.label.find(" nvfp4 ") != std::string::npos) {
      EXPECT_FALSE(row.software.tp_comm_overlap) << row.label;
    }
  }
  EXPECT_GT(mxfp8, 30);
  // The 25.11 DeepSeek-V3 MXFP8 rows of GB200 and GB300.
  EXPECT_EQ(without_gather_overlap, 2);
}

}  // namespace
}  // namespace shardcost
