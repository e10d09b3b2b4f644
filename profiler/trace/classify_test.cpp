#include <gtest/gtest.h>

#include "shardcost/trace.h"

namespace shardcost::trace {
namespace {

struct Case {
  const char* name;
  KernelClass cls;
};

TEST(Classify, TableOfRealKernelNames) {
  const Case cases[] = {
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", KernelClass::gemm},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
       KernelClass::gemm},
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", KernelClass::gemm},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>",
       KernelClass::gemm},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float>", KernelClass::gemm},
      // FBGEMM's embedding kernels are no GEMMs (issue 34: 88.8 of 156.8 ms "GEMM" in a
      // recommendation model's trace); its GEMMs say so in their own names. AMD's Tensile GEMMs.
      {"void fbgemm_gpu::(anonymous namespace)::split_embedding_codegen_forward_unweighted_"
       "kernel<float, float, int64_t, 512>(at::PackedTensorAccessor64<float, 1>)",
       KernelClass::other},
      {"void fbgemm_gpu::batch_index_select_dim0_codegen_forward_kernel<float, float, long>",
       KernelClass::other},
      {"void fbgemm_gpu::f8f8bf16_rowwise_gemm_kernel<128, 128>", KernelClass::gemm},
      {"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0", KernelClass::gemm},
      {"void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4>", KernelClass::gemm},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>", KernelClass::attention},
      {"fmha_cutlassF_bf16_aligned_64x64_rf_sm80", KernelClass::attention},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3",
       KernelClass::attention},
      {"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", KernelClass::attention},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       KernelClass::communication},
      {"ncclKernel_AllGather_RING_LL_Sum_int8_t", KernelClass::communication},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>",
       KernelClass::normalization},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>",
       KernelClass::normalization},
      {"rms_norm_kernel<c10::BFloat16>", KernelClass::normalization},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
       KernelClass::set},
      {"void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>", KernelClass::copy},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>",
       KernelClass::reduction},
      {"triton_red_fused_sum_0", KernelClass::reduction},
      {"triton_poi_fused_add_mul_0", KernelClass::elementwise},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
       KernelClass::elementwise},
      {"void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>",
       KernelClass::elementwise},
      {"my_custom_kernel", KernelClass::other},
  };
  for (const auto& c : cases)
    EXPECT_EQ(to_string(classify(c.name).cls), to_string(c.cls)) << c.name;
}

TEST(Classify, RecordKindsOverrideNames) {
  EXPECT_EQ(classify("memcpy HtoD", db::EventKind::memcpy).cls, KernelClass::copy);
  EXPECT_EQ(classify("memset", db::EventKind::memset).cls, KernelClass::set);
  EXPECT_EQ(classify("gemm lookalike", db::EventKind::sync).cls, KernelClass::sync);
}

TEST(Classify, NcclCollectiveAlgorithmProtocolAndType) {
  auto c = classify("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(c.collective, "all_reduce");
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.protocol, "LL");
  EXPECT_EQ(c.dtype, "bf16");
  c = classify("ncclKernel_ReduceScatter_TREE_LL128_Sum_float");
  EXPECT_EQ(c.collective, "reduce_scatter");
  EXPECT_EQ(c.algorithm, "tree");
  EXPECT_EQ(c.protocol, "LL128");
  EXPECT_EQ(c.dtype, "f32");
  c = classify("ncclDevKernel_AllGather_COLLNET_DIRECT_SIMPLE");
  EXPECT_EQ(c.collective, "all_gather");
  EXPECT_EQ(c.algorithm, "collnet_direct");
  EXPECT_EQ(c.protocol, "simple");
  c = classify("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(c.collective, "send_recv");
  EXPECT_EQ(c.algorithm, "");
  c = classify("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(c.cls, KernelClass::communication);
  EXPECT_EQ(c.collective, "");  // NCCL's generic kernel does not say
}

}  // namespace
}  // namespace shardcost::trace
