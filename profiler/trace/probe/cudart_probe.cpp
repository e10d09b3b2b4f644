// A tiny CUDA program for the end-to-end tests: asks the runtime for devices and prints the
// answer. Run with and without CUDA_INJECTION64_PATH, its output and exit code must match.
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  int count = -1;
  const cudaError_t err = cudaGetDeviceCount(&count);
  std::printf("cudaGetDeviceCount: %s, %d device(s)\n", cudaGetErrorName(err),
              err == cudaSuccess ? count : 0);
  return err == cudaSuccess ? 0 : 7;
}
