// The passes a stack makes over its whole gradient buffer once a step before the data-parallel
// reduction (issue 32, item 7: what a real step does around its kernels): Megatron-core's NaN
// check and 1/dp scaling of every bucket, Megatron-LM of 2021-2022's division and its 2021
// flatten and copy back. Hand calculations beside each rule.
#include <gtest/gtest.h>

#include <string>

#include "costs/pricing.h"
#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

using test_models::part;

struct Plan {
  explicit Plan(int n = 16) : gpus(n) {}
  int gpus;
  Model m = load_model("gpt3-1.3b");
  Cluster c = load_cluster("dgx-h100", gpus);
  const NodeGroup& g = c.groups.front();
  Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  double optimizer(const std::string& strategy, const std::string& software) const {
    EstimateOptions o;
    o.software = parse_software(software);
    return part(estimate(m, c, parse_strategy(strategy, gpus), o), "optimizer");
  }
  double parameters() const { return estimate(m, c, parse_strategy("tp=1,gbs=16", 16)).parameters; }
};

// Megatron-core r0.8 with bf16 (Bucket.start_grad_sync): each bucket's fp32 gradients read for
// their norm's NaN check, then read and written scaled by 1/dp: 12 B a parameter of the whole
// buffer, one pass at the framework's bandwidth plus a kernel's gap, on the optimizer's part.
TEST(GradBuffer, MegatronCoreChecksAndScalesItsWholeBufferBeforeTheReduction) {
  const Plan r;
  const double P = r.parameters();
  const std::string off = "megatron-core:grad_nan_check=false,grad_scale_in_place=false";
  const std::string dp16 = "tp=1,pp=1,dp=16,mbs=1,gbs=16,zero=1,precision=bf16";
  const double bandwidth = r.g.device.memory_bandwidth_Bps * r.g.device.memory_efficiency *
                           GemmModel::kFrameworkBandwidthFraction;
  EXPECT_NEAR(r.optimizer(dp16, "megatron-core") - r.optimizer(dp16, off),
              12 * P / bandwidth + GemmModel::kKernelGap_s, 1e-9);
  EXPECT_NEAR(r.optimizer(dp16, "megatron-core") - r.optimizer(dp16, off),
              r.pr.memory_pass(12 * P).seconds, 1e-12);
  // One replica scales by 1 and skips it (gradient_scaling_factor == 1): the check alone.
  const std::string dp1 = "tp=1,pp=1,dp=1,mbs=1,gbs=16,zero=0,precision=bf16";
  const Plan one(1);
  EXPECT_NEAR(one.optimizer(dp1, "megatron-core") - one.optimizer(dp1, off),
              one.pr.memory_pass(4 * P).seconds, 1e-12);
  // fp16 under dynamic loss scaling turns the NaN check off; its fp16 gradients are scaled,
  // 2 + 2 B a parameter.
  const std::string fp16 = "tp=1,pp=1,dp=16,mbs=1,gbs=16,zero=1,precision=fp16";
  EXPECT_NEAR(r.optimizer(fp16, "megatron-core") - r.optimizer(fp16, off),
              r.pr.memory_pass(4 * P).seconds, 1e-12);
  // ZeRO-3 units' gradients are not in such a buffer: none.
  const std::string z3 = "tp=1,pp=1,dp=16,mbs=1,gbs=16,zero=3,precision=bf16";
  EXPECT_DOUBLE_EQ(r.optimizer(z3, "megatron-core"), r.optimizer(z3, off));
}

// Megatron-LM of 2021 (fp16 gradients by autograd, no contiguous buffer): flatten into one
// tensor (read and write), divide by dp (read and write), copy back (read and write), 2 B
// each: 12 B a parameter. Of 2022 (one contiguous fp32 buffer): the division, 8 B. Stacks that
// reduce otherwise (NeMo's recipes, torchtitan, DeepSpeed) make none of these passes.
TEST(GradBuffer, MegatronLmOf2021And2022DivideTheBufferAndFlattenItIn2021) {
  const Plan r;
  const double P = r.parameters();
  const std::string dp16 = "tp=1,pp=1,dp=16,mbs=1,gbs=16,zero=0";
  EXPECT_NEAR(r.optimizer(dp16 + ",precision=fp16", "megatron-lm-2021") -
                  r.optimizer(dp16 + ",precision=fp16",
                              "megatron-lm-2021:grad_scale_in_place=false,"
                              "grad_coalesce_copies=false"),
              r.pr.memory_pass(12 * P).seconds, 1e-12);
  EXPECT_NEAR(
      r.optimizer(dp16 + ",precision=bf16", "megatron-lm-2022") -
          r.optimizer(dp16 + ",precision=bf16", "megatron-lm-2022:grad_scale_in_place=false"),
      r.pr.memory_pass(8 * P).seconds, 1e-12);
  for (const char* name : {"nemo", "torchtitan", "megatron-deepspeed", "pytorch-ddp"}) {
    const Software s = software_preset(name);
    EXPECT_FALSE(s.grad_nan_check || s.grad_scale_in_place || s.grad_coalesce_copies) << name;
  }
}

}  // namespace
}  // namespace shardcost
