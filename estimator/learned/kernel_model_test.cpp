// Traced-kernel durations: classes, the fit per class, held-out launches and records.
#include "kernel_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shardcost/error.h"

namespace shardcost::learned {
namespace {

TEST(KernelClass, TemplateArgumentsAndParametersAreNotTheClass) {
  EXPECT_EQ(
      kernel_class(
          "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"),
      "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(kernel_class("void f<a<b>, c>(float*, int)"), "f");
  EXPECT_EQ(kernel_class("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"),
            "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn");
  EXPECT_EQ(kernel_class("<>"), "<>");  // nothing left: the name itself
}

// An elementwise kernel: 3 us of launch plus 1 ns per 64 threads, at several launches.
std::vector<KernelSample> elementwise(const std::string& name, double per_thread_s) {
  std::vector<KernelSample> out;
  for (double threads = 1 << 12; threads <= (1 << 26); threads *= 4)
    out.push_back({name, threads, 10, 3e-6 + threads * per_thread_s});
  return out;
}

TEST(KernelFit, ClassesFitDurationOnThreadsAndSayWhatTheyDidNotSee) {
  auto samples = elementwise("void add_kernel<float>(float*)", 1e-9 / 64);
  for (auto& s : elementwise("void add_kernel<half>(half*)", 0.5e-9 / 64)) samples.push_back(s);
  samples.push_back({"void softmax<float>()", 0, 5, 8e-6});  // launch not traced
  const KernelFit fit = fit_kernels("NVIDIA H100 80GB HBM3", samples);
  EXPECT_EQ(fit.rows, 2u * 8 * 10 + 5);
  ASSERT_EQ(fit.classes.size(), 2u);
  const auto& add = fit.classes[0];
  EXPECT_EQ(add.cls, "add_kernel");
  EXPECT_GT(add.b, 0.3);
  EXPECT_LE(add.b, 1.0);
  // A measured launch is itself; another inside the traced range is the class's fit.
  const auto exact = fit.predict("void add_kernel<float>(float*)", 1 << 20);
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->inside);
  EXPECT_DOUBLE_EQ(exact->seconds, 3e-6 + (1 << 20) * 1e-9 / 64);
  const auto between = fit.predict("void add_kernel<float>(float*)", 3 << 20);
  ASSERT_TRUE(between);
  EXPECT_TRUE(between->inside);
  EXPECT_GT(between->seconds, exact->seconds);
  EXPECT_FALSE(fit.predict("void add_kernel<float>(float*)", 1e12)->inside);
  // A launch of unknown shape: the class's median launch, extrapolated.
  EXPECT_FALSE(fit.predict("void softmax<double>()", 0)->inside);
  EXPECT_DOUBLE_EQ(fit.predict("void softmax<double>()", 0)->seconds, 8e-6);
  EXPECT_FALSE(fit.predict("never_ran", 1024));
  // Held out: each launch of the add class, and each of its names from the other.
  ASSERT_EQ(fit.cv.size(), 2u);
  EXPECT_EQ(fit.cv[0].split, "each launch configuration held out");
  EXPECT_EQ(fit.cv[0].rows, 16u);
  EXPECT_EQ(fit.cv[1].split, "each kernel name held out of its class");
  // The half kernel runs at twice the rate: predicting one name from the other misses.
  EXPECT_GT(fit.cv[1].median, 0.1);
  EXPECT_THROW(fit_kernels("x", {{"k", 0, 3, 1e-6}}), InputError);
}

TEST(KernelFit, RecordsRoundTripAndDamagedOnesAreRefused) {
  const KernelFit fit = fit_kernels("gpu", elementwise("k<1>", 1e-11));
  const KernelFit back = KernelFit::from_json(fit.to_json());
  EXPECT_EQ(back.classes.size(), 1u);
  EXPECT_DOUBLE_EQ(back.predict("k<2>", 5e5)->seconds, fit.predict("k<2>", 5e5)->seconds);
  std::string j = fit.to_json();
  const std::string b = "\"b\":";
  const size_t at = j.find(b);
  ASSERT_NE(at, std::string::npos);
  EXPECT_THROW(KernelFit::from_json(j.substr(0, at) + "\"b\":7," + j.substr(j.find(',', at) + 1)),
               InputError);
  EXPECT_THROW(KernelFit::from_json("{\"fitter\":\"kernel-class-0\"}"), InputError);
  EXPECT_THROW(KernelFit::from_json("[]"), InputError);
}

}  // namespace
}  // namespace shardcost::learned
