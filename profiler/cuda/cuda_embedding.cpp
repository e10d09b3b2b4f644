// CUDA embedding bags: the pooled gather (forward) and the sort-based gradient scatter with its
// sparse update (backward) of one table on one GPU, timed with CUDA events. What is measured
// and checked is host_embedding.cpp's: the same bags, indices, table, gradients and update.
#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "backends.h"
#include "cuda/cuda_api.h"
#include "cuda/embedding_kernels.h"
#include "embedding_inputs.h"
#include "harness.h"
#include "host_buffers.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "stop.h"

namespace shardcost::bench {
namespace {

using cuda::DeviceBuffer;
using cuda::WeightType;

// Index sets rotated between iterations, as on the host: an iteration does not find the rows
// the last one touched in L2 (a training step looks up a new batch).
constexpr int kIndexSets = 4;
// The forward check stops adding bags past this many lookups: each distinct row it reads is a
// download, and a bag may hold 100000 lookups.
constexpr int64_t kMaxCheckedLookups = 1 << 14;

WeightType weight_type(const std::string& dtype) {
  if (dtype == "fp32") return WeightType::f32;
  if (dtype == "fp16") return WeightType::f16;
  if (dtype == "bf16") return WeightType::bf16;
  throw InputError(
      fmt::format("--dtype {}: CUDA embedding bags run fp32, fp16 or bf16 weights", dtype));
}

// A stored weight as fp32.
float stored_to_float(const std::byte* p, WeightType t) {
  if (t == WeightType::f32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  if (t == WeightType::bf16) return bf16_to_float(bits);
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

// An fp32 value rounded to nearest even as the table stores it, back in fp32.
float round_as_stored(float v, WeightType t) {
  if (t == WeightType::bf16) return bf16_to_float(float_to_bf16(v));
  if (t == WeightType::f16) return __half2float(__float2half_rn(v));
  return v;
}

class CudaEmbedding final : public Benchmark {
 public:
  CudaEmbedding(const EmbeddingShape& s, const std::string& pass, WeightType type, bool adagrad,
                uint64_t seed)
      : s_(s),
        forward_(pass == "forward"),
        type_(type),
        adagrad_(adagrad),
        offsets_(bag_offsets(s)),
        lookups_(offsets_.back()),
        dim_(s.dim),
        row_bytes_(s.dim * cuda::bytes_of(type)) {
    const int64_t table = s.rows * row_bytes_;
    const int64_t out = s.batch * s.dim * 4;  // the pooled output, or the gradient of it
    const int64_t backward = forward_
                                 ? 0
                                 : (adagrad_ ? s.rows * 4 : 0) +
                                       cuda::EmbeddingBackward::scratch_bytes(s.rows, lookups_);
    const std::string what = fmt::format("embedding {} of {} x {} ({:.2f} GiB)", pass, s.rows,
                                         s.dim, static_cast<double>(table) / (1 << 30));
    check_room(table + kIndexSets * lookups_ * 8 + (s.batch + 1) * 8 + out + backward,
               cuda::free_bytes(), what, "device");
    // Host: the first index set (kept for the checks) and one more, the gradient, the bag ids.
    check_room(2 * lookups_ * 8 + lookups_ * 4 + out, host_available_bytes(), what, "host");

    weights_ = cuda::device_alloc(table);
    cuda::launch_embedding_fill(weights_.get(), type_, s.rows, s.dim, stream_.get());
    offsets_dev_ = upload(offsets_);
    for (int i = 0; i < kIndexSets; ++i) {
      std::vector<int64_t> idx =
          draw_indices(s, lookups_, seed * 1000003 + static_cast<uint64_t>(i));
      indices_.push_back(upload(idx));
      if (i == 0) first_ = std::move(idx);
    }
    if (forward_) {
      out_ = cuda::device_alloc(out);
    } else {
      grad_.resize(static_cast<size_t>(s.batch * s.dim));
      for (size_t i = 0; i < grad_.size(); ++i)
        grad_[i] =
            static_cast<float>(static_cast<int64_t>((i * 2654435761u) % 2001) - 1000) * 1e-4f;
      grad_dev_ = upload(grad_);
      if (adagrad_) {
        state_ = cuda::device_alloc(s.rows * 4);
        cuda::set_async(state_.get(), 0, s.rows * 4, stream_.get());
      }
      backward_.emplace(s.rows, offsets_, stream_.get());
    }
    stream_.sync();
  }

  cudaStream_t stream() const { return stream_.get(); }
  void prepare(int i) override { set_ = static_cast<size_t>(i) % indices_.size(); }
  void run(int) override {
    const auto* idx = reinterpret_cast<const int64_t*>(indices_[set_].get());
    if (forward_)
      cuda::launch_embedding_forward(weights_.get(), type_, dim_, idx,
                                     reinterpret_cast<const int64_t*>(offsets_dev_.get()), s_.batch,
                                     reinterpret_cast<float*>(out_.get()), stream_.get());
    else
      backward_->run(idx, reinterpret_cast<const float*>(grad_dev_.get()), weights_.get(), type_,
                     dim_, reinterpret_cast<float*>(state_.get()), stream_.get());
  }
  void finish() override { stream_.sync(); }
  int64_t check() override { return forward_ ? check_forward() : check_backward(); }
  int64_t checked_elements() const override { return checked_; }

 private:
  // Enqueued on the stream; pageable memory is staged before the call returns.
  template <typename T>
  DeviceBuffer upload(const std::vector<T>& v) {
    const auto bytes = static_cast<int64_t>(v.size() * sizeof(T));
    DeviceBuffer b = cuda::device_alloc(bytes);
    cuda::copy_async(b.get(), v.data(), bytes, stream_.get());
    return b;
  }

  std::vector<float> download_row(int64_t row) const {
    std::vector<std::byte> raw(static_cast<size_t>(row_bytes_));
    cuda::copy(raw.data(), weights_.get() + row * row_bytes_, row_bytes_);
    std::vector<float> w(static_cast<size_t>(dim_));
    const int64_t elem = cuda::bytes_of(type_);
    for (int64_t d = 0; d < dim_; ++d)
      w[static_cast<size_t>(d)] = stored_to_float(raw.data() + d * elem, type_);
    return w;
  }
  float download_state(int64_t row) const {
    float v;
    cuda::copy(&v, state_.get() + row * 4, 4);
    return v;
  }

  // Every k-th bag's pooled sum, recomputed on the host from the rows downloaded. The GPU adds
  // in the same order, but fp32 need not match to the last bit: a tolerance relative to the
  // sum of magnitudes.
  int64_t check_forward() {
    set_ = 0;
    run(0);
    stream_.sync();
    const int64_t step = std::max<int64_t>(1, s_.batch / 256);
    std::map<int64_t, std::vector<float>> rows;  // each distinct row downloaded once
    std::vector<float> want(static_cast<size_t>(dim_)), size(want.size()), got(want.size());
    int64_t wrong = 0, looked = 0;
    checked_ = 0;
    for (int64_t b = 0; b < s_.batch && looked < kMaxCheckedLookups; b += step) {
      std::fill(want.begin(), want.end(), 0.0f);
      std::fill(size.begin(), size.end(), 0.0f);
      const int64_t begin = offsets_[static_cast<size_t>(b)];
      const int64_t end = offsets_[static_cast<size_t>(b) + 1];
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = first_[static_cast<size_t>(i)];
        auto [at, fresh] = rows.try_emplace(row);
        if (fresh) at->second = download_row(row);
        for (size_t d = 0; d < want.size(); ++d) {
          want[d] += at->second[d];
          size[d] += std::fabs(at->second[d]);
        }
      }
      looked += end - begin;
      cuda::copy(got.data(), out_.get() + b * dim_ * 4, dim_ * 4);
      for (size_t d = 0; d < want.size(); ++d, ++checked_)
        wrong += std::fabs(want[d] - got[d]) > 1e-5f * (1 + size[d]);
    }
    return wrong;
  }

  // Up to 64 touched rows, downloaded: their gradients summed on the host in bag order, the
  // update applied to the copy, against what the backward wrote.
  int64_t check_backward() {
    const std::vector<int64_t> rows = checked_rows(first_);
    std::vector<std::vector<float>> before;
    std::vector<float> state_before;
    for (int64_t row : rows) {
      before.push_back(download_row(row));
      state_before.push_back(adagrad_ ? download_state(row) : 0);
    }
    const auto grads = summed_gradients(offsets_, first_, rows, grad_, dim_);
    set_ = 0;
    run(0);
    stream_.sync();
    int64_t wrong = 0;
    checked_ = 0;
    for (size_t j = 0; j < rows.size(); ++j) {
      const auto& g = grads[j];
      float st = state_before[j];
      const float step_size = optimizer_step(g.data(), dim_, adagrad_, &st);
      if (adagrad_) wrong += std::fabs(st - download_state(rows[j])) > 1e-5f * (1 + std::fabs(st));
      const std::vector<float> after = download_row(rows[j]);
      for (size_t d = 0; d < g.size(); ++d, ++checked_) {
        const float want = round_as_stored(before[j][d] - step_size * g[d], type_);
        wrong += std::fabs(want - after[d]) > 1e-5f * (1 + std::fabs(want));
      }
    }
    return wrong;
  }

  EmbeddingShape s_;
  bool forward_;
  WeightType type_;
  bool adagrad_;
  std::vector<int64_t> offsets_;
  int64_t lookups_, dim_, row_bytes_;
  cuda::Stream stream_;
  DeviceBuffer weights_, offsets_dev_, out_, grad_dev_, state_;
  std::vector<DeviceBuffer> indices_;
  std::vector<int64_t> first_;  // index set 0 on the host, for the checks
  std::vector<float> grad_;     // the output gradient on the host (backward)
  std::optional<cuda::EmbeddingBackward> backward_;
  size_t set_ = 0;
  int64_t checked_ = 0;
};

}  // namespace

EmbeddingReport cuda_bench_embedding(const EmbeddingOptions& o, const Progress& progress) {
  const WeightType type = weight_type(o.dtype);
  EmbeddingReport report;
  report.device = cuda_device_record(o.gpu);
  report.planned = o.shapes.size() * o.passes.size();
  for (const auto& s : o.shapes) {
    for (const auto& pass : o.passes) {
      if (stop_before_next(report, false)) return report;
      if (progress)
        progress(fmt::format("embedding {} {} {}x{} pooling {} batch {} zipf {}", pass, o.dtype,
                             s.rows, s.dim, s.pooling, s.batch, s.zipf));
      CudaEmbedding bench(s, pass, type, o.optimizer == "rowwise_adagrad", o.seed);
      cuda::EventTimer timer({{o.gpu, bench.stream()}});
      const Measured m = measure(bench, timer, o.timing);
      report.results.push_back(embedding_result(s, pass, o, m));
      checkpoint_last(o.checkpoint, report);
    }
  }
  return report;
}

}  // namespace shardcost::bench
