#!/usr/bin/env bash
# Packs the built binaries, plus the shared libraries a bare CUDA image lacks (fmt, sqlite, MPI,
# BLAS, ...), into ./pack/ to carry to a GPU machine. There: LD_LIBRARY_PATH=pack/lib pack/bin/shardcost
# Usage: scripts/pack-gpu.sh [BUILD_DIR]   (default build-gpu, else build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-}
[ -n "$build" ] || { [ -x build-gpu/shardcost ] && build=build-gpu || build=build; }
[ -x "$build/shardcost" ] || { echo "pack-gpu: no $build/shardcost; build first (scripts/build.sh)" >&2; exit 2; }
rm -rf pack && mkdir -p pack/bin pack/lib pack/scripts
cp "$build/shardcost" pack/bin/
# The CUPTI injection library lives next to the binary (shardcost trace finds it there).
for f in "$build"/libshardcost_inject.so; do [ -f "$f" ] && cp "$f" pack/bin/; done
for t in profiler/profiler_tests profiler/profiler_gpu_tests profiler/trace/trace_tests bench/bench_trace; do
  [ -x "$build/$t" ] && cp "$build/$t" pack/bin/
done
cp scripts/gpu-check.sh scripts/trace-gpu-check.sh scripts/learned-gpu-check.sh \
  scripts/device-session.sh scripts/attention-gpu-check.py pack/scripts/
# Everything the binaries link except the C runtime and the CUDA/driver libraries, which the
# GPU image provides (libcuda comes with the driver; cublasLt and nccl with the CUDA image).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libcuda\.so|libcublas|libnccl|libcudart)'
for bin in pack/bin/*; do
  ldd "$bin" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    cp -Ln "$path" pack/lib/ 2>/dev/null || true
  done
done
# OpenBLAS is loaded on use (profiler/blas.cpp), so ldd of the binaries does not name it. Only
# the CPU benchmarks use it, and Debian's build is 35 MB of the device tool's 64 MiB: it travels
# (under its SONAME, with what it links: libgfortran) only with PACK_BLAS=1.
blas=""
[ "${PACK_BLAS:-0}" = 1 ] && blas=$(ldconfig -p | awk '/libopenblas\.so\.0 .*x86-64/{print $NF; exit}')
if [ -n "$blas" ]; then
  cp -L "$blas" pack/lib/libopenblas.so.0
  ldd "$blas" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    cp -Ln "$path" pack/lib/ 2>/dev/null || true
  done
fi
# Open MPI loads its components at run time from its own tree; single-process GPU checks do
# not initialise MPI, so the components travel only on request (they are large).
if [ "${PACK_MPI_PLUGINS:-0}" = 1 ]; then
  ompi=$(dirname "$(ldd pack/bin/shardcost | awk '/libmpi\.so/{print $3}')" 2>/dev/null || true)
  [ -n "$ompi" ] && [ -d "$ompi/openmpi" ] && cp -rL "$ompi/openmpi" pack/lib/ 2>/dev/null || true
fi
# Debug symbols stay home: the device tool carries at most 64 MiB.
strip --strip-unneeded pack/bin/* pack/lib/*.so* 2>/dev/null || true
echo "pack-gpu: $(ls pack/bin | wc -l) binaries and $(ls pack/lib | wc -l) libraries in ./pack ($(du -sh pack | cut -f1))"
# The device tool carries at most 64 MiB with the working tree.
size=$(du -sm pack | cut -f1)
[ "$size" -le 60 ] || echo "pack-gpu: warning: ./pack is $size MiB; the device tool carries 64 MiB in all" >&2
