// bench gemm|memory|collective|p2p: measure, print, and write the figures to the cost store.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <fstream>
#include <memory>
#include <set>

#include "bench_print.h"
#include "bench_store.h"
#include "commands.h"
#include "embedding_check.h"
#include "predict_inputs.h"
#include "run_info.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/profiler.h"
#include "shardcost/signals.h"

namespace shardcost::cli {
namespace {

struct BenchArgs {
  std::string device = "cpu", backend = "mpi", dtype, redop = "sum", format = "text", db;
  std::string begin, end, factor = "2";
  std::string ops;
  std::vector<std::string> shapes, m, n, k;
  std::string shapes_from, tp = "1", mbs = "1";
  // bench embedding's grid: lists or ranges of each dimension
  std::string rows = "1K,32K,1M,4M", dim = "16,64,256", pooling = "1,8,64", batch = "512,4096",
              zipf = "0,1.1", passes = "forward,backward", optimizer = "rowwise_adagrad";
  std::string tables, plan;
  std::string cpus;  // host memory and embedding: where their threads run
  int64_t seed = 1;
  int sample = 0, rounds = 1;
  int gpu = 0, gpus = 0, root = 0, threads = 0, stall_rank = -1;
  bool in_place = false, compare_baseline = false;
  double timeout_s = 300;
  bench::Timing timing;
};

// Lists like "1024,4096" or ranges "1K:8K:2" (begin:end:factor) of one GEMM dimension.
std::vector<int64_t> dims(const std::vector<std::string>& specs, const char* flag) {
  std::vector<int64_t> out;
  for (const auto& spec : specs)
    for (int64_t v : size_list(spec, flag)) out.push_back(v);
  return out;
}

std::vector<bench::GemmShapeSpec> gemm_shapes_of(const BenchArgs& a) {
  std::vector<bench::GemmShapeSpec> shapes;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> seen;
  auto add = [&](bench::GemmShapeSpec s) {
    // BLAS (cuBLAS, OpenBLAS) takes 32-bit sizes and leading dimensions.
    for (const auto& [dim, v] : {std::pair{"M", s.m}, {"N", s.n}, {"K", s.k}, {"batch", s.batch}})
      if (v > INT32_MAX)
        throw InputError(
            fmt::format("GEMM shape '{}': {} = {} is past 2^31 - 1, the largest size "
                        "BLAS takes; use smaller sizes",
                        s.name, dim, v));
    if (seen.insert({s.m, s.n, s.k, s.batch}).second) shapes.push_back(std::move(s));
  };
  for (const auto& spec : a.shapes) {
    const GemmShape g = parse_shape(spec);
    add({spec, g.m, g.n, g.k, g.batch});
  }
  if (!a.m.empty() || !a.n.empty() || !a.k.empty()) {
    if (a.m.empty() || a.n.empty() || a.k.empty())
      throw InputError("give all of -m, -n and -k (lists like 1024,2048 or ranges like 1K:8K:2)");
    for (int64_t m : dims(a.m, "-m"))
      for (int64_t n : dims(a.n, "-n"))
        for (int64_t k : dims(a.k, "-k")) add({fmt::format("{}x{}x{}", m, n, k), m, n, k, 1});
  }
  if (!a.shapes_from.empty()) {
    const Model model = load_model(a.shapes_from);
    for (const auto& tp : split_commas(a.tp)) {
      for (const auto& mbs : split_commas(a.mbs)) {
        const int t = static_cast<int>(positive_int(tp, "--tp"));
        const Strategy s =
            parse_strategy(fmt::format("tp={},mbs={}", t, positive_int(mbs, "--mbs")), t);
        std::vector<NamedGemm> named;
        try {
          named = gemm_shapes(model, s);
        } catch (const InputError& e) {
          throw InputError(
              fmt::format("--shapes-from {} --tp {} --mbs {}: {}; use sizes the model "
                          "splits into",
                          a.shapes_from, tp, mbs, e.what()));
        }
        for (const auto& g : named)
          add({fmt::format("{} tp={} mbs={}", g.name, tp, mbs), g.shape.m, g.shape.n, g.shape.k,
               g.shape.batch});
      }
    }
  }
  if (shapes.empty())
    throw InputError("no GEMM shapes: give --shape MxNxK, -m/-n/-k, or --shapes-from MODEL");
  return shapes;
}

std::vector<int64_t> sizes_of(const BenchArgs& a, const char* default_begin,
                              const char* default_end) {
  return size_sweep_of(a.begin, a.end, a.factor, default_begin, default_end);
}

bench::Progress progress() {
  if (!isatty(STDERR_FILENO)) return {};
  auto count = std::make_shared<int>(0);
  return [count](const std::string& what) { fmt::print(stderr, "[{}] {}\n", ++*count, what); };
}

// Every configuration `rounds` times, round after round: drift on a noisy machine spreads over
// all of them instead of moving a few (fit and --plan take each one's median).
bench::EmbeddingReport embedding_rounds(const bench::EmbeddingOptions& o, int rounds) {
  bench::EmbeddingReport all;
  for (int round = 0; round < rounds && !all.interrupted; ++round) {
    bench::EmbeddingReport r = bench::bench_embedding(o, progress());
    all.device = r.device;
    all.binding = r.binding;
    all.planned += r.planned;
    all.interrupted = r.interrupted;
    all.results.insert(all.results.end(), r.results.begin(), r.results.end());
  }
  return all;
}

// The store once, at the end: bench embedding --plan reads what the store predicts before its
// measurements join it.
std::optional<int64_t> store(const BenchArgs& a, const db::Measurements& m) {
  const std::string path = store_path(a.db, 0);
  if (path.empty()) return std::nullopt;
  db::Store s = db::Store::open(path, db::Store::Mode::read_write);
  return s.write(m).run_id;
}

void fail_on_wrong(int64_t wrong, int64_t results) {
  if (wrong > 0)
    throw Error(
        fmt::format("{} of {} results failed their correctness check (see the check "
                    "column); the figures are not trustworthy",
                    wrong, results));
}

// Ctrl-C (or SIGTERM) while a benchmark runs: the first asks it to stop after the current
// measurement, keeping what it measured; a second stops the process at once.
extern "C" void on_stop_signal(int sig) {
  if (bench::stop_requested()) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  bench::request_stop();
  static const char kNote[] =
      "\nshardcost: stopping after the current measurement; what was measured is kept (again to "
      "stop at once)\n";
  if (::write(STDERR_FILENO, kNote, sizeof kNote - 1) < 0) return;  // nothing to do about it
}

// After a benchmark: its measurements are in the store already (stored one by one as they
// finished; an interrupted benchmark's too, and one that finished nothing stored nothing).
template <typename Report>
void finish(const BenchArgs& a, const BenchStore& stored, const Report& r, std::string_view table,
            Format f, int rank, int ranks, int64_t start, const std::string& v,
            const std::string& rev) {
  const std::optional<int64_t> run_id = stored.finish();
  db::Measurements m;
  bench::append(m, r);
  describe_run(m.run, rank, ranks, start, v, rev);
  if (!stored.uuid().empty()) m.run.uuid = stored.uuid();
  // CSV is the export's layout (it imports as one); text and JSON say more (spread, checks).
  if (rank == 0)
    fmt::print("{}",
               f == Format::csv ? db::to_csv(db::export_table(m, table, run_id)) : render(r, f));
  int64_t bad = 0;
  for (const auto& x : r.results) bad += x.wrong > 0;
  fail_on_wrong(bad, static_cast<int64_t>(r.results.size()));
  if (r.interrupted) {
    if (rank == 0) {
      std::fflush(stdout);
      fmt::print(stderr, "shardcost: interrupted: {} of {} measurements {}\n", r.results.size(),
                 r.planned,
                 a.db.empty() ? "printed (no --db, nothing stored)"
                 : run_id     ? fmt::format("stored in {} as run {}", a.db, *run_id)
                              : "made; nothing stored");
    }
    throw ExitStatus{130};  // 128 + SIGINT, as a shell reports Ctrl-C
  }
}

std::string cpus_of(const BenchArgs& a) {
  if (!a.cpus.empty() && a.device != "cpu")
    throw InputError(fmt::format(
        "--cpus binds a host benchmark's threads; --device {} runs on the GPU (bind the "
        "process with taskset or numactl instead)",
        a.device));
  return a.cpus;
}

void add_cpus(CLI::App* c, BenchArgs& a) {
  c->add_option("--cpus", a.cpus,
                "cpu: the CPUs threads are bound to, one each: a list (0-7,16), NUMA nodes "
                "(numa:0,1), or none (not bound); default: every CPU the process may use, one "
                "thread per core first (shardcost devices shows the node)");
}

void add_common(CLI::App* c, BenchArgs& a) {
  c->add_option("--iters", a.timing.iterations, "timed iterations per measurement (default 20)");
  c->add_option("--warmup", a.timing.warmup, "untimed warm-up iterations (default 5)");
  c->add_option("--time-budget", a.timing.time_budget_s,
                "seconds per measurement; sets the iteration count from the warm-up");
  c->add_option("--db", a.db,
                "cost store to write (SQLite); {rank} in the name: one file per rank");
  c->add_option("--format", a.format, "text, csv or json");
}

void add_sizes(CLI::App* c, BenchArgs& a) {
  c->add_option("-b,--minbytes", a.begin, "smallest size, e.g. 8, 64K, 1M");
  c->add_option("-e,--maxbytes", a.end, "largest size");
  c->add_option("-f,--stepfactor", a.factor, "multiply the size by this between steps (default 2)");
}

void add_collective_options(CLI::App* c, BenchArgs& a) {
  c->add_option("--backend", a.backend, "mpi (processes launched by mpirun/srun) or nccl");
  c->add_option("--timeout", a.timeout_s,
                "abort when one size point takes longer (seconds, default 300)");
  c->add_option("--debug-stall-rank", a.stall_rank, "tests only: this rank stalls")->group("");
}

bench::CollectiveOptions collective_options(const BenchArgs& a, std::vector<std::string> ops) {
  bench::CollectiveOptions o;
  o.backend = a.backend;
  o.ops = std::move(ops);
  o.dtype = a.dtype.empty() ? "float" : a.dtype;
  o.redop = a.redop;
  o.root = a.root;
  o.in_place = a.in_place;
  o.timing = a.timing;
  o.gpus = a.gpus;
  o.timeout_s = a.timeout_s;
  o.debug_stall_rank = a.stall_rank;
  o.on_timeout = [](const std::string& message) {
    fmt::print(stderr, "shardcost: {}\n", message);
    std::fflush(stderr);
  };
  return o;
}

}  // namespace

void add_bench_commands(CLI::App& app, const std::string& version, const std::string& revision) {
  auto* bench_cmd = app.add_subcommand(
      "bench", "Measure GEMMs, memory, embedding bags, collectives and point-to-point");
  bench_cmd->require_subcommand(1);

  auto ga = std::make_shared<BenchArgs>();
  auto* gemm = bench_cmd->add_subcommand("gemm", "GEMM throughput (cuBLASLt on cuda, BLAS on cpu)");
  gemm->add_option("--device", ga->device, "cpu or cuda (default cpu)");
  gemm->add_option("--gpu", ga->gpu, "CUDA device ordinal (default 0)");
  gemm->add_option("--dtype", ga->dtype, "fp32 (default), tf32, bf16, fp16, fp8");
  gemm->add_option("--shape", ga->shapes, "MxNxK or MxNxKxBATCH; repeatable");
  gemm->add_option("-m", ga->m, "M values: 1024,2048 or a range 1K:8K:2");
  gemm->add_option("-n", ga->n, "N values");
  gemm->add_option("-k", ga->k, "K values");
  gemm->add_option("--shapes-from", ga->shapes_from,
                   "model (catalog name or JSON): the GEMMs the estimator prices");
  gemm->add_option("--tp", ga->tp, "tensor-parallel sizes for --shapes-from, e.g. 1,2,4,8");
  gemm->add_option("--mbs", ga->mbs, "micro-batch sizes for --shapes-from, e.g. 1,2,4");
  gemm->add_option("--threads", ga->threads, "cpu: BLAS threads, 1-1024 (default: all)")
      ->check(CLI::Range(1, 1024));
  gemm->add_flag("--compare-baseline", ga->compare_baseline,
                 "also time a plain BLAS loop of each shape");
  add_common(gemm, *ga);
  gemm->callback([ga, version, revision] {
    const BenchArgs& a = *ga;
    const Format f = parse_format(a.format, {Format::text, Format::csv, Format::json});
    bench::GemmOptions o;
    o.device = a.device;
    o.gpu = a.gpu;
    o.dtype = a.dtype.empty() ? "fp32" : a.dtype;
    o.shapes = gemm_shapes_of(a);
    o.timing = a.timing;
    o.threads = a.threads;
    o.compare_baseline = a.compare_baseline;
    const int64_t start = now_ns();
    BenchStore stored(a.db, start, version, revision);
    o.checkpoint = stored.checkpoint();
    const ScopedSignals stop_on_signal(SIGINT, SIGTERM, on_stop_signal);
    finish(a, stored, bench::bench_gemm(o, progress()), "gemm", f, 0, 1, start, version, revision);
  });

  auto ma = std::make_shared<BenchArgs>();
  auto* mem =
      bench_cmd->add_subcommand("memory", "Memory bandwidth: copies, memset, read and write");
  mem->add_option("--device", ma->device, "cpu or cuda (default cpu)");
  mem->add_option("--gpu", ma->gpu, "CUDA device ordinal (default 0)");
  mem->add_option(
      "--op", ma->ops,
      "cpu: copy,read,write; cuda: copy_d2d,copy_h2d,copy_d2h,memset,read,write (default all)");
  mem->add_option("--threads", ma->threads, "cpu: threads, 1-1024 (default: one per CPU)")
      ->check(CLI::Range(1, 1024));
  add_cpus(mem, *ma);
  mem->add_flag("--compare-baseline", ma->compare_baseline,
                "cpu: also time a plain multi-threaded loop of each kind (copy: memcpy; "
                "read: a running sum; write: a store loop)");
  add_sizes(mem, *ma);
  add_common(mem, *ma);
  mem->callback([ma, version, revision] {
    const BenchArgs& a = *ma;
    const Format f = parse_format(a.format, {Format::text, Format::csv, Format::json});
    bench::MemoryOptions o;
    o.device = a.device;
    o.gpu = a.gpu;
    o.kinds = a.ops.empty() ? bench::memory_kinds(a.device) : split_commas(a.ops);
    o.sizes = sizes_of(a, "1M", "256M");
    o.timing = a.timing;
    o.threads = a.threads;
    o.cpus = cpus_of(a);
    o.compare_baseline = a.compare_baseline;
    const int64_t start = now_ns();
    BenchStore stored(a.db, start, version, revision);
    o.checkpoint = stored.checkpoint();
    const ScopedSignals stop_on_signal(SIGINT, SIGTERM, on_stop_signal);
    finish(a, stored, bench::bench_memory(o, progress()), "memory", f, 0, 1, start, version,
           revision);
  });

  auto ea = std::make_shared<BenchArgs>();
  auto* emb = bench_cmd->add_subcommand(
      "embedding",
      "Embedding bags: pooled lookups (forward), gradient scatter and sparse update (backward)");
  emb->add_option("--device", ea->device, "cpu or cuda (default cpu)");
  emb->add_option("--gpu", ea->gpu, "CUDA device ordinal (default 0)");
  emb->add_option("--dtype", ea->dtype, "weights: fp32 (default), bf16; cuda also fp16");
  emb->add_option("--pass", ea->passes, "forward,backward (default both)");
  emb->add_option("--optimizer", ea->optimizer,
                  "the backward's sparse update: rowwise_adagrad (default) or sgd");
  emb->add_option("--rows", ea->rows,
                  "table rows: a list or a range 1K:4M:4 (default 1K,32K,1M,4M)");
  emb->add_option("--dim", ea->dim, "columns (default 16,64,256)");
  emb->add_option("--pooling", ea->pooling, "mean lookups per bag (default 1,8,64)");
  emb->add_option("--batch", ea->batch, "bags per batch (default 512,4096)");
  emb->add_option("--zipf", ea->zipf, "access skew exponents; 0 is uniform (default 0,1.1)");
  emb->add_option("--tables", ea->tables,
                  "a tables file (docs/embeddings.md): each table at each --batch, not the grid");
  emb->add_option("--plan", ea->plan,
                  "a plan of shard-tables --format json: run each GPU's shards and set them "
                  "beside what --db's fitted lookup models predict");
  emb->add_option("--sample", ea->sample,
                  "draw this many configurations between the lists' ends instead of the grid "
                  "(a Latin hypercube, log scale, seeded by --seed)")
      ->check(CLI::Range(1, 100000));
  emb->add_option("--rounds", ea->rounds,
                  "measure every configuration this many times, round after round (fit takes "
                  "each one's median: drift on a noisy machine is spread over the design)")
      ->check(CLI::Range(1, 100));
  emb->add_option("--seed", ea->seed, "seed of the indices and --sample's draws (default 1)");
  emb->add_option("--threads", ea->threads, "cpu: threads, 1-1024 (default: one per CPU)")
      ->check(CLI::Range(1, 1024));
  add_cpus(emb, *ea);
  add_common(emb, *ea);
  emb->callback([ea, version, revision] {
    const BenchArgs& a = *ea;
    const Format f = parse_format(a.format, {Format::text, Format::csv, Format::json});
    bench::EmbeddingOptions o;
    o.device = a.device;
    o.gpu = a.gpu;
    o.dtype = a.dtype.empty() ? "fp32" : a.dtype;
    o.optimizer = a.optimizer;
    o.passes = split_commas(a.passes);
    o.timing = a.timing;
    o.threads = a.threads;
    o.cpus = cpus_of(a);
    if (a.seed < 0) throw InputError("--seed must not be negative");
    o.seed = static_cast<uint64_t>(a.seed);
    const int64_t start = now_ns();
    const ScopedSignals stop_on_signal(SIGINT, SIGTERM, on_stop_signal);
    if (a.plan.empty()) {
      o.shapes = embedding_grid({a.rows, a.dim, a.pooling, a.batch, a.zipf, a.tables, a.sample,
                                 static_cast<uint64_t>(a.seed)});
      BenchStore stored(a.db, start, version, revision);
      o.checkpoint = stored.checkpoint();
      finish(a, stored, embedding_rounds(o, a.rounds), "embedding", f, 0, 1, start, version,
             revision);
      return;
    }
    // A plan's shards: each distinct one measured once, both passes; what the store predicts
    // is read before the measurements join it.
    if (f == Format::csv) throw InputError("bench embedding --plan prints text or json");
    const auto shards = read_plan_shards(a.plan);
    o.shapes = plan_shapes(shards);
    o.passes = {"forward", "backward"};
    const bench::EmbeddingReport r = embedding_rounds(o, a.rounds);
    const PlanCheck check = check_plan(shards, r, a.db);
    db::Measurements m;
    bench::append(m, r);
    describe_run(m.run, 0, 1, start, version, revision);
    if (!r.results.empty()) (void)store(a, m);
    fmt::print("{}", render(check, f == Format::json));
    int64_t bad = 0;
    for (const auto& x : r.results) bad += x.wrong > 0;
    fail_on_wrong(bad, static_cast<int64_t>(r.results.size()));
    if (r.interrupted) throw ExitStatus{130};
  });

  auto ca = std::make_shared<BenchArgs>();
  auto* coll =
      bench_cmd->add_subcommand("collective", "Collectives with nccl-tests' algbw and busbw");
  add_collective_options(coll, *ca);
  coll->add_option(
      "--op", ca->ops,
      "all_reduce (default), all_gather, reduce_scatter, broadcast, reduce, all_to_all, "
      "send_recv (alltoall, sendrecv too), or all");
  coll->add_option("--dtype", ca->dtype,
                   "float (default), double, int32, int64; nccl also half, bfloat16");
  coll->add_option("--redop", ca->redop, "sum (default), prod, max, min");
  coll->add_option("--root", ca->root, "root rank of broadcast and reduce (default 0)");
  coll->add_flag("--in-place", ca->in_place, "operate in place");
  coll->add_option("--gpus", ca->gpus, "nccl: one process drives this many local GPUs");
  add_sizes(coll, *ca);
  add_common(coll, *ca);
  coll->callback([ca, version, revision] {
    const BenchArgs& a = *ca;
    const Format f = parse_format(a.format, {Format::text, Format::csv, Format::json});
    std::vector<std::string> ops =
        a.ops.empty() ? std::vector<std::string>{"all_reduce"} : split_commas(a.ops);
    if (ops.size() == 1 && ops[0] == "all") ops = bench::collective_ops();
    for (auto& op : ops) op = bench::canonical_collective(op);
    bench::CollectiveOptions run = collective_options(a, ops);
    run.sizes = sizes_of(a, "1K", "16M");
    const int64_t start = now_ns();
    BenchStore stored(a.db, start, version, revision);
    run.checkpoint = stored.checkpoint();
    const ScopedSignals stop_on_signal(SIGINT, SIGTERM, on_stop_signal);
    const bench::CollectiveReport r = bench::bench_collective(run, progress());
    finish(a, stored, r, "collective", f, r.rank, r.ranks, start, version, revision);
  });

  auto pa = std::make_shared<BenchArgs>();
  auto* p2p = bench_cmd->add_subcommand(
      "p2p", "Send/recv bandwidth and latency between rank 0 and every other rank");
  add_collective_options(p2p, *pa);
  add_sizes(p2p, *pa);
  add_common(p2p, *pa);
  p2p->callback([pa, version, revision] {
    const BenchArgs& a = *pa;
    const Format f = parse_format(a.format, {Format::text, Format::csv, Format::json});
    bench::CollectiveOptions o = collective_options(a, {"send_recv"});
    o.sizes = sizes_of(a, "8", "16M");
    const int64_t start = now_ns();
    BenchStore stored(a.db, start, version, revision);
    o.checkpoint = stored.checkpoint();
    const ScopedSignals stop_on_signal(SIGINT, SIGTERM, on_stop_signal);
    const bench::P2pReport r = bench::bench_p2p(o, progress());
    finish(a, stored, r, "collective", f, r.rank, r.ranks, start, version, revision);
  });
}

}  // namespace shardcost::cli
