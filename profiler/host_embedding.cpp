// Host embedding bags: the pooled gather (forward) and the gradient scatter with its sparse
// update (backward) of one table, multi-threaded as a CPU training step runs them. The
// backward is the sort-based one FBGEMM runs on GPUs: lookups partitioned by the thread that
// owns their row, sorted by row, each distinct row's gradients summed once and the optimizer
// applied once per row.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends.h"
#include "cpu_binding.h"
#include "embedding_inputs.h"
#include "harness.h"
#include "host_buffers.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "stop.h"
#include "thread_pool.h"

namespace shardcost::bench {
namespace {

// Index sets rotated between iterations, so an iteration does not find the rows the last one
// touched in cache (a training step looks up a new batch).
constexpr int kIndexSets = 4;

class HostEmbedding final : public Benchmark {
 public:
  HostEmbedding(const EmbeddingShape& s, std::string pass, const std::string& dtype,
                std::string optimizer, uint64_t seed, ThreadPool& pool)
      : s_(s),
        pass_(std::move(pass)),
        bf16_(dtype == "bf16"),
        adagrad_(optimizer == "rowwise_adagrad"),
        pool_(pool),
        offsets_(bag_offsets(s)),
        lookups_(offsets_.back()),
        dim_(s.dim) {
    const int64_t elem = bf16_ ? 2 : 4;
    const int64_t table = s.rows * s.dim * elem;
    const int64_t needed = table + s.rows * 4 + kIndexSets * lookups_ * 8 +
                           2 * s.batch * s.dim * 4 + (pass_ == "backward" ? 2 * lookups_ * 8 : 0);
    check_room(needed, host_available_bytes(),
               fmt::format("embedding {} of {} x {} ({:.2f} GiB)", pass_, s.rows, s.dim,
                           static_cast<double>(table) / (1 << 30)),
               "host");
    weights_ = allocate_host(table);
    state_ = allocate_host(s.rows * 4);
    out_.assign(static_cast<size_t>(s.batch * s.dim), 0.0f);
    grad_.resize(static_cast<size_t>(s.batch * s.dim));
    for (size_t i = 0; i < grad_.size(); ++i)
      grad_[i] = static_cast<float>(static_cast<int64_t>((i * 2654435761u) % 2001) - 1000) * 1e-4f;
    // First touch from the threads that use the pages, with small values.
    pool_.run([&](int t) {
      const Range r = share(s_.rows, t, pool_.size(), 1);
      for (int64_t row = r.begin; row < r.end; ++row) {
        for (int64_t d = 0; d < dim_; ++d) {
          const auto v = static_cast<float>((row * 131 + d * 7) % 997) * 1e-4f - 0.05f;
          if (bf16_)
            w16()[row * dim_ + d] = float_to_bf16(v);
          else
            w32()[row * dim_ + d] = v;
        }
        state()[row] = 0;
      }
    });
    for (int i = 0; i < kIndexSets; ++i)
      indices_.push_back(draw_indices(s, lookups_, seed * 1000003 + static_cast<uint64_t>(i)));
    const int T = pool_.size();
    buckets_.assign(static_cast<size_t>(T * T), {});
    mine_.assign(static_cast<size_t>(T), {});
    scratch_.assign(static_cast<size_t>(T), std::vector<float>(static_cast<size_t>(dim_)));
  }

  void prepare(int i) override { set_ = static_cast<size_t>(i) % indices_.size(); }
  void run(int) override {
    if (pass_ == "forward")
      forward(set_);
    else
      backward(set_);
  }
  int64_t check() override { return pass_ == "forward" ? check_forward() : check_backward(); }
  int64_t checked_elements() const override { return checked_; }

 private:
  float* w32() { return reinterpret_cast<float*>(weights_.get()); }
  uint16_t* w16() { return reinterpret_cast<uint16_t*>(weights_.get()); }
  float* state() { return reinterpret_cast<float*>(state_.get()); }
  float weight(int64_t row, int64_t d) {
    return bf16_ ? bf16_to_float(w16()[row * dim_ + d]) : w32()[row * dim_ + d];
  }
  int owner(int64_t row) const { return static_cast<int>(row * pool_.size() / s_.rows); }

  void pool_bag(const std::vector<int64_t>& idx, int64_t b, float* o) {
    std::fill(o, o + dim_, 0.0f);
    for (int64_t i = offsets_[static_cast<size_t>(b)]; i < offsets_[static_cast<size_t>(b) + 1];
         ++i) {
      const int64_t row = idx[static_cast<size_t>(i)];
      if (bf16_) {
        const uint16_t* w = w16() + row * dim_;
        for (int64_t d = 0; d < dim_; ++d) o[d] += bf16_to_float(w[d]);
      } else {
        const float* w = w32() + row * dim_;
        for (int64_t d = 0; d < dim_; ++d) o[d] += w[d];
      }
    }
  }

  void forward(size_t set) {
    const auto& idx = indices_[set];
    pool_.run([&](int t) {
      const Range r = share(s_.batch, t, pool_.size(), 1);
      for (int64_t b = r.begin; b < r.end; ++b) pool_bag(idx, b, out_.data() + b * dim_);
    });
  }

  // The summed gradient g of one row, applied once.
  void update(int64_t row, const float* g) {
    const float step = optimizer_step(g, dim_, adagrad_, state() + row);
    if (bf16_) {
      uint16_t* w = w16() + row * dim_;
      for (int64_t d = 0; d < dim_; ++d) w[d] = float_to_bf16(bf16_to_float(w[d]) - step * g[d]);
    } else {
      float* w = w32() + row * dim_;
      for (int64_t d = 0; d < dim_; ++d) w[d] -= step * g[d];
    }
  }

  void backward(size_t set) {
    const auto& idx = indices_[set];
    const int T = pool_.size();
    // 1: each thread's bags' lookups, bucketed by the thread owning the row: (row << 32) | bag.
    pool_.run([&](int t) {
      for (int o = 0; o < T; ++o) buckets_[static_cast<size_t>(t * T + o)].clear();
      const Range r = share(s_.batch, t, T, 1);
      for (int64_t b = r.begin; b < r.end; ++b)
        for (int64_t i = offsets_[static_cast<size_t>(b)]; i < offsets_[static_cast<size_t>(b) + 1];
             ++i) {
          const int64_t row = idx[static_cast<size_t>(i)];
          buckets_[static_cast<size_t>(t * T + owner(row))].push_back(
              (static_cast<uint64_t>(row) << 32) | static_cast<uint64_t>(b));
        }
    });
    // 2: each owner sorts its lookups by row and updates each distinct row once.
    pool_.run([&](int o) {
      auto& keys = mine_[static_cast<size_t>(o)];
      keys.clear();
      for (int t = 0; t < T; ++t) {
        const auto& from = buckets_[static_cast<size_t>(t * T + o)];
        keys.insert(keys.end(), from.begin(), from.end());
      }
      std::sort(keys.begin(), keys.end());
      float* g = scratch_[static_cast<size_t>(o)].data();
      for (size_t i = 0; i < keys.size();) {
        const uint64_t row = keys[i] >> 32;
        std::fill(g, g + dim_, 0.0f);
        for (; i < keys.size() && (keys[i] >> 32) == row; ++i) {
          const float* go = grad_.data() + static_cast<int64_t>(keys[i] & 0xffffffffu) * dim_;
          for (int64_t d = 0; d < dim_; ++d) g[d] += go[d];
        }
        update(static_cast<int64_t>(row), g);
      }
    });
  }

  // Every k-th bag's pooled sum, recomputed serially in the same order.
  int64_t check_forward() {
    set_ = 0;
    forward(0);
    const int64_t step = std::max<int64_t>(1, s_.batch / 256);
    std::vector<float> want(static_cast<size_t>(dim_));
    int64_t wrong = 0;
    checked_ = 0;
    for (int64_t b = 0; b < s_.batch; b += step) {
      pool_bag(indices_[0], b, want.data());
      for (int64_t d = 0; d < dim_; ++d, ++checked_)
        wrong += want[static_cast<size_t>(d)] != out_[static_cast<size_t>(b * dim_ + d)];
    }
    return wrong;
  }

  // Up to 64 touched rows: their gradients summed serially in bag order, the update applied
  // to a copy of the row, against what the backward wrote.
  int64_t check_backward() {
    const auto& idx = indices_[0];
    const std::vector<int64_t> rows = checked_rows(idx);
    std::vector<std::vector<float>> before;
    std::vector<float> state_before;
    for (int64_t row : rows) {
      std::vector<float> w(static_cast<size_t>(dim_));
      for (int64_t d = 0; d < dim_; ++d) w[static_cast<size_t>(d)] = weight(row, d);
      before.push_back(std::move(w));
      state_before.push_back(state()[row]);
    }
    const auto grads = summed_gradients(offsets_, idx, rows, grad_, dim_);
    set_ = 0;
    backward(0);
    int64_t wrong = 0;
    checked_ = 0;
    for (size_t j = 0; j < rows.size(); ++j) {
      float st = state_before[j];
      const float step_size = optimizer_step(grads[j].data(), dim_, adagrad_, &st);
      if (adagrad_) wrong += std::fabs(st - state()[rows[j]]) > 1e-6f * (1 + std::fabs(st));
      for (int64_t d = 0; d < dim_; ++d, ++checked_) {
        float want =
            before[j][static_cast<size_t>(d)] - step_size * grads[j][static_cast<size_t>(d)];
        if (bf16_) want = bf16_to_float(float_to_bf16(want));
        const float got = weight(rows[j], d);
        wrong += std::fabs(want - got) > 1e-5f * (1 + std::fabs(want));
      }
    }
    return wrong;
  }

  EmbeddingShape s_;
  std::string pass_;
  bool bf16_, adagrad_;
  ThreadPool& pool_;
  std::vector<int64_t> offsets_;
  int64_t lookups_;
  int64_t dim_;
  HostBuffer weights_, state_;
  std::vector<std::vector<int64_t>> indices_;
  std::vector<float> out_, grad_;
  std::vector<std::vector<uint64_t>> buckets_, mine_;
  std::vector<std::vector<float>> scratch_;
  size_t set_ = 0;
  int64_t checked_ = 0;
};

}  // namespace

EmbeddingReport host_bench_embedding(const EmbeddingOptions& o, const Progress& progress) {
  if (o.dtype != "fp32" && o.dtype != "bf16")
    throw InputError(
        fmt::format("--dtype {}: host embedding bags run fp32 or bf16 weights", o.dtype));
  const Binding binding = resolve_binding(o.cpus, o.threads);
  ThreadPool pool(binding.threads, binding.cpus);
  EmbeddingReport report;
  report.device = host_device_record();
  report.binding = binding.where;
  report.planned = o.shapes.size() * o.passes.size();
  for (const auto& s : o.shapes) {
    for (const auto& pass : o.passes) {
      if (stop_before_next(report, false)) return report;
      if (progress)
        progress(fmt::format("embedding {} {}x{} pooling {} batch {} zipf {}", pass, s.rows, s.dim,
                             s.pooling, s.batch, s.zipf));
      HostEmbedding bench(s, pass, o.dtype, o.optimizer, o.seed, pool);
      HostTimer timer;
      const Measured m = measure(bench, timer, o.timing);
      report.results.push_back(embedding_result(s, pass, o, m));
      checkpoint_last(o.checkpoint, report);
    }
  }
  return report;
}

}  // namespace shardcost::bench
