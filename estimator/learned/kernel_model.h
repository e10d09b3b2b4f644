#pragma once
// Learned durations of traced kernels: per device, per kernel class (the name without its
// template arguments and parameter list), duration from the launch configuration.
// docs/learned-models.md has the model and its figures.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "curve_model.h"
#include "records.h"
#include "shardcost/hardware.h"

namespace shardcost::learned {

// "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(...)"
// -> "at::native::vectorized_elementwise_kernel"; a name without templates stays itself.
std::string kernel_class(std::string_view name);

// One kernel name at one launch configuration, as traced: its mean duration.
struct KernelSample {
  std::string name;
  double threads = 0;  // blocks x threads per block; 0: not known
  int64_t count = 0;
  double seconds = 0;
};

struct KernelClassModel {
  std::string cls;
  std::vector<KernelSample> samples;  // the measured launches, by name then threads
  // log2 seconds = a + b log2 threads over the launches whose configuration is known, b in
  // [0, 1] (more threads never take less time, nor more than proportionally more).
  double a = 0, b = 0;
  bool sized = false;     // some launch's configuration is known
  double lo = 0, hi = 0;  // log2 threads the fit saw
  double median_s = 0;    // the class's median launch: what a launch of unknown shape costs
};

inline constexpr size_t kMinKernelEvents = 20;
inline constexpr const char* kKernelFitterVersion = "kernel-class-1";

struct KernelFit {
  std::string device;  // catalog device, or the stored name (kernels need no specs)
  size_t rows = 0;     // traced events
  std::vector<KernelClassModel> classes;  // by class
  std::vector<CrossValidation> cv;
  // nullopt: a class the trace never ran. The measured launch itself is inside (look_up
  // false: priced by its class's fit instead); a launch of the class within the thread
  // counts it ran is inside; the rest extrapolated.
  std::optional<CurveAnswer> predict(std::string_view name, double threads,
                                     bool look_up = true) const;
  std::string to_json() const;
  static KernelFit from_json(const std::string&);
};

// Throws InputError when the samples hold fewer than kMinKernelEvents events.
KernelFit fit_kernels(const std::string& device, std::vector<KernelSample>);

}  // namespace shardcost::learned
