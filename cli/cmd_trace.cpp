// trace -- CMD: run any program under the CUPTI injection library and store what its GPUs ran;
// trace summary / trace export: read a traced run back as a summary or a Perfetto timeline.
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "output_file.h"
#include "run_info.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"
#include "shardcost/trace.h"

namespace shardcost::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kTraceCommandPrefix = "shardcost trace -- ";

struct TraceArgs {
  std::string db = "shardcost.db";
  std::string perfetto;
  std::string kinds;
  std::string steps = "ProfilerStep#";
  std::vector<std::string> command;
  std::string run;
  std::string format = "text";
  size_t top = 10;
};

// A scratch folder for the per-process files, removed when the trace is stored.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/shardcost-trace-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw Error("cannot create a scratch folder under " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// $SHARDCOST_INJECT_LIBRARY, else next to the binary, else ../lib (installed layout).
std::string find_injection_library() {
  if (const char* env = std::getenv("SHARDCOST_INJECT_LIBRARY"); env && *env) {
    if (!fs::exists(env))
      throw InputError(fmt::format("SHARDCOST_INJECT_LIBRARY={} does not exist", env));
    return fs::absolute(env).string();
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const fs::path& p : {self.parent_path() / "libshardcost_inject.so",
                            self.parent_path().parent_path() / "lib" / "libshardcost_inject.so"})
    if (fs::exists(p, ec)) return p.string();
  return {};
}

void check_kinds(const std::string& kinds) {
  if (kinds.empty()) return;
  size_t pos = 0;
  while (pos <= kinds.size()) {
    const size_t end = std::min(kinds.find(',', pos), kinds.size());
    const std::string k = kinds.substr(pos, end - pos);
    if (k != "kernel" && k != "memcpy" && k != "memset" && k != "sync" && k != "runtime" &&
        k != "nvtx")
      throw InputError(fmt::format(
          "unknown --kinds entry '{}'; use kernel, memcpy, memset, sync, runtime, nvtx", k));
    pos = end + 1;
  }
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Everything after the command ended: collect, store, export. Returns nothing; throws.
void store_trace(const TraceArgs& a, const std::string& dir, db::Run run, bool have_library) {
  trace::Collected c = trace::collect_directory(dir, a.steps);
  for (const auto& w : c.warnings) fmt::print(stderr, "shardcost: warning: {}\n", w);
  if (c.dropped_records > 0)
    fmt::print(stderr, "shardcost: warning: CUPTI dropped {} records (buffers full)\n",
               c.dropped_records);
  if (c.truncated_files > 0)
    fmt::print(stderr,
               "shardcost: warning: {} process(es) ended mid-write; kept what was complete\n",
               c.truncated_files);
  if (c.trace.kernels.empty()) {
    fmt::print(stderr, "shardcost: no GPU activity was recorded{}; nothing written to {}\n",
               have_library ? (c.processes == 0 ? " (no process initialised CUDA)" : "")
                            : " (the injection library was not found)",
               a.db);
    return;
  }
  c.trace.run = std::move(run);
  c.trace.run.end_time_ns = now_ns();
  const trace::Summary s = trace::summarize(c.trace, 0);
  auto store = db::Store::open(a.db, db::Store::Mode::read_write);
  const db::WriteResult w = store.write(c.trace);
  fmt::print(
      stderr,
      "shardcost: traced {} process(es): {} kernels, {} copies, {} sets, {} syncs on {} device(s) "
      "-> {} run {}\n",
      c.processes, s.kernels, s.copies, s.sets, s.syncs, c.trace.devices.size(), a.db, w.run_id);
  fmt::print(stderr,
             "shardcost: GPU time {:.3f} ms, busy {:.1f} %, communication overlapped {:.1f} %; "
             "'shardcost trace summary --db {} --run {}' for more\n",
             s.gpu_time_ns / 1e6, 100 * s.busy_fraction(), 100 * s.overlap_fraction(), a.db,
             w.run_id);
  if (!c.trace.steps.empty()) {
    double sum = 0;
    for (const auto& st : c.trace.steps) sum += static_cast<double>(st.duration_ns);
    fmt::print(stderr,
               "shardcost: {} training steps ('{}N' NVTX ranges), mean {:.3f} ms; 'shardcost "
               "report --db {}' sets them beside a predicted distribution\n",
               c.trace.steps.size(), a.steps, sum / 1e6 / static_cast<double>(c.trace.steps.size()),
               a.db);
  } else if (c.ranges > 0) {
    fmt::print(stderr,
               "shardcost: {} NVTX ranges, none named '{}N'; --steps PREFIX names the ranges "
               "that mark training steps\n",
               c.ranges, a.steps);
  }
  if (!a.perfetto.empty()) write_whole(a.perfetto, trace::to_perfetto_json(c.trace));
}

int run_trace(const TraceArgs& a, const std::string& recorded_by) {
  check_kinds(a.kinds);
  // Checked before the program runs: a training run is not lost to a mistyped output path.
  if (!a.perfetto.empty()) check_output_path(a.perfetto, "--perfetto");
  if (!a.db.empty()) check_output_path(a.db, "--db");
  if (a.command.empty())
    throw InputError("no command to trace; put it after '--': shardcost trace -- CMD ARGS");
  const std::string library = find_injection_library();
  ScratchDir dir;
  trace::Launch launch{a.command, {{"SHARDCOST_TRACE_DIR", dir.path()}}};
  if (!library.empty()) launch.env["CUDA_INJECTION64_PATH"] = library;
  if (!a.kinds.empty()) launch.env["SHARDCOST_TRACE_KINDS"] = a.kinds;
  db::Run run;
  run.tool = "shardcost";
  run.recorded_by = recorded_by;
  run.host = host_info().hostname;
  run.command_line = std::string(kTraceCommandPrefix) + join_command(a.command);
  run.start_time_ns = now_ns();
  std::fflush(stdout);
  const int code = trace::run_command(launch);
  // Said after the command ran, so a command that cannot start gets its one error line alone.
  if (library.empty())
    fmt::print(stderr,
               "shardcost: warning: libshardcost_inject.so not found next to the binary "
               "(built without CUDA?) or in SHARDCOST_INJECT_LIBRARY; the command ran untraced\n");
  // The command's exit code wins; our own failure only shows when the command succeeded.
  try {
    store_trace(a, dir.path(), std::move(run), !library.empty());
  } catch (const Error& e) {
    fmt::print(stderr, "shardcost: {}\n", e.what());
    return code != 0 ? code : e.exit_code();
  }
  return code;
}

// --run: an id or a uuid; default the newest traced run: recorded by `shardcost trace`, or an
// imported trace (a PyTorch profiler trace, an Nsight Systems export).
db::Run pick_run(const db::StoreInfo& info, const std::string& wanted) {
  auto traced = [](const db::Run& r) {
    return r.command_line.starts_with(kTraceCommandPrefix) || r.tool == "kineto" ||
           r.tool == "nsys";
  };
  for (auto it = info.runs.rbegin(); it != info.runs.rend(); ++it) {
    if (wanted.empty() ? traced(*it) : (std::to_string(it->id) == wanted || it->uuid == wanted))
      return *it;
  }
  if (wanted.empty())
    throw InputError(fmt::format(
        "{} holds no traced run; record one with 'shardcost trace --db {} -- CMD', or import a "
        "trace (import kineto, import nsys)",
        info.path, info.path));
  throw InputError(fmt::format("{} has no run '{}'; 'shardcost db info {}' lists them", info.path,
                               wanted, info.path));
}

// The run's own events, devices and launch configurations, read back by run id.
db::Measurements load_run(const std::string& path, const std::string& wanted) {
  if (!fs::exists(path)) throw InputError(fmt::format("store {} does not exist", path));
  auto store = db::Store::open(path, db::Store::Mode::read_only);
  return store.kernel_events(pick_run(store.info(), wanted).id);
}

std::string ms(int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}
std::string pct(double f) {
  return fmt::format("{:.1f}", 100 * f);
}
std::string shorten(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

// A device by its CUDA ordinal where the trace gave one (a rank's trace of GPU 3 says 3), else
// its place in the run's device list.
std::string device_label(const db::Measurements& m, int d) {
  if (d < 0 || static_cast<size_t>(d) >= m.devices.size()) return "?";
  const db::DeviceRecord& r = m.devices[static_cast<size_t>(d)];
  return fmt::format("{} {}", r.index >= 0 ? r.index : d, r.name);
}

void print_summary_text(const db::Measurements& m, const trace::Summary& s) {
  fmt::print(
      "{} kernels, {} copies, {} sets on {} device(s); {} synchronisations ({} ms waiting)\n",
      s.kernels, s.copies, s.sets, m.devices.size(), s.syncs, ms(s.sync_time_ns));
  fmt::print(
      "GPU time {} ms; busy {} % of the active span; communication overlapped by compute {} %\n\n",
      ms(s.gpu_time_ns), pct(s.busy_fraction()), pct(s.overlap_fraction()));
  Table classes({"class", "count", "time ms", "share %"}, {false, true, true, true});
  for (const auto& c : s.classes)
    classes.add(
        {std::string(trace::to_string(c.cls)), std::to_string(c.count), ms(c.time_ns),
         pct(s.gpu_time_ns ? static_cast<double>(c.time_ns) / static_cast<double>(s.gpu_time_ns)
                           : 0)});
  fmt::print("time by class\n{}\n", classes.render(2));
  Table streams({"device", "stream", "count", "time ms"}, {false, true, true, true});
  for (const auto& st : s.streams)
    streams.add({device_label(m, st.device), std::to_string(st.stream), std::to_string(st.count),
                 ms(st.time_ns)});
  fmt::print("time by stream\n{}\n", streams.render(2));
  Table devices({"device", "span ms", "busy %", "comm ms", "overlap %"},
                {false, true, true, true, true});
  for (const auto& d : s.devices)
    devices.add(
        {device_label(m, d.device), ms(d.span_ns),
         pct(d.span_ns ? static_cast<double>(d.busy_ns) / static_cast<double>(d.span_ns) : 0),
         ms(d.communication_ns),
         pct(d.communication_ns ? static_cast<double>(d.overlapped_communication_ns) /
                                      static_cast<double>(d.communication_ns)
                                : 0)});
  fmt::print("devices\n{}\n", devices.render(2));
  Table top({"kernel", "class", "count", "total ms", "mean us"}, {false, false, true, true, true});
  for (const auto& k : s.top)
    top.add({shorten(k.name, 72), std::string(trace::to_string(k.cls)), std::to_string(k.count),
             ms(k.time_ns),
             fmt::format("{:.3f}",
                         static_cast<double>(k.time_ns) / 1e3 / static_cast<double>(k.count))});
  fmt::print("top kernels by total time\n{}", top.render(2));
}

nlohmann::json summary_json(const db::Measurements& m, const trace::Summary& s) {
  nlohmann::json j;
  j["run"] = m.run.uuid;
  j["kernels"] = s.kernels, j["copies"] = s.copies, j["sets"] = s.sets, j["syncs"] = s.syncs;
  j["gpu_time_ns"] = s.gpu_time_ns, j["sync_time_ns"] = s.sync_time_ns;
  j["busy_fraction"] = s.busy_fraction(), j["overlap_fraction"] = s.overlap_fraction();
  j["classes"] = nlohmann::json::array();
  for (const auto& c : s.classes)
    j["classes"].push_back(
        {{"class", trace::to_string(c.cls)}, {"count", c.count}, {"time_ns", c.time_ns}});
  j["streams"] = nlohmann::json::array();
  for (const auto& st : s.streams)
    j["streams"].push_back({{"device", device_label(m, st.device)},
                            {"stream", st.stream},
                            {"count", st.count},
                            {"time_ns", st.time_ns}});
  j["devices"] = nlohmann::json::array();
  for (const auto& d : s.devices)
    j["devices"].push_back({{"device", device_label(m, d.device)},
                            {"span_ns", d.span_ns},
                            {"busy_ns", d.busy_ns},
                            {"communication_ns", d.communication_ns},
                            {"overlapped_communication_ns", d.overlapped_communication_ns}});
  j["top"] = nlohmann::json::array();
  for (const auto& k : s.top)
    j["top"].push_back({{"name", k.name},
                        {"class", trace::to_string(k.cls)},
                        {"count", k.count},
                        {"time_ns", k.time_ns}});
  return j;
}

// One table of sections: the run (named by its uuid, to join the store's exports), time per
// class, stream and kernel, and each device's span, busy time and overlapped communication.
void print_summary_csv(const db::Measurements& m, const trace::Summary& s) {
  fmt::print(
      "section,name,class,device,stream,count,time_ns,span_ns,busy_ns,communication_ns,"
      "overlapped_communication_ns\n");
  fmt::print("run,{},,,,{},{},,,,\n", csv_escape(m.run.uuid), s.kernels + s.copies + s.sets,
             s.gpu_time_ns);
  for (const auto& c : s.classes)
    fmt::print("class,,{},,,{},{},,,,\n", trace::to_string(c.cls), c.count, c.time_ns);
  for (const auto& st : s.streams)
    fmt::print("stream,,,{},{},{},{},,,,\n", csv_escape(device_label(m, st.device)), st.stream,
               st.count, st.time_ns);
  for (const auto& d : s.devices)
    fmt::print("device,,,{},,,,{},{},{},{}\n", csv_escape(device_label(m, d.device)), d.span_ns,
               d.busy_ns, d.communication_ns, d.overlapped_communication_ns);
  for (const auto& k : s.top)
    fmt::print("kernel,{},{},,,{},{},,,,\n", csv_escape(k.name), trace::to_string(k.cls), k.count,
               k.time_ns);
}

}  // namespace

void add_trace_commands(CLI::App& app, const std::string& recorded_by) {
  auto a = std::make_shared<TraceArgs>();
  auto* cmd = app.add_subcommand(
      "trace", "Run any CUDA program unmodified under CUPTI and store its GPU activity");
  cmd->add_option("--db", a->db, "store file (created when missing; default shardcost.db)");
  cmd->add_option("--perfetto", a->perfetto, "also write a Perfetto/Chrome trace JSON here");
  cmd->add_option("--kinds", a->kinds,
                  "activities to record: kernel,memcpy,memset,sync,runtime,nvtx (default all)");
  cmd->add_option("--steps", a->steps,
                  "NVTX ranges named PREFIX<number> are training steps (default ProfilerStep#)");
  cmd->add_option("command", a->command, "the command and its arguments, after '--'");
  cmd->require_subcommand(0, 1);

  auto* summary = cmd->add_subcommand(
      "summary", "Time per class, stream and kernel; busy and overlap of a traced run");
  summary->add_option("--db", a->db, "store file")->required();
  summary->add_option("--run", a->run, "run id or uuid (default the newest traced run)");
  summary->add_option("--format", a->format, "text (default), csv or json");
  summary->add_option("--top", a->top, "kernels to list (default 10)")
      ->check(CLI::Range(1, 1000000));
  summary->callback([a] {
    const Format f = parse_format(a->format, {Format::text, Format::csv, Format::json});
    const db::Measurements m = load_run(a->db, a->run);
    const trace::Summary s = trace::summarize(m, a->top);
    if (f == Format::json)
      fmt::print("{}\n", json_text(summary_json(m, s)));
    else if (f == Format::csv)
      print_summary_csv(m, s);
    else
      print_summary_text(m, s);
  });

  auto* exp = cmd->add_subcommand("export", "Write a traced run as a Perfetto/Chrome trace JSON");
  exp->add_option("--db", a->db, "store file")->required();
  exp->add_option("--run", a->run, "run id or uuid (default the newest traced run)");
  exp->add_option("--perfetto", a->perfetto, "output file (open in ui.perfetto.dev)")->required();
  exp->callback([a] {
    const db::Measurements m = load_run(a->db, a->run);
    write_whole(a->perfetto, trace::to_perfetto_json(m));
    fmt::print(stderr, "shardcost: wrote {} events to {}\n", m.kernels.size(), a->perfetto);
  });

  cmd->callback([a, summary, exp, recorded_by] {
    if (summary->parsed() || exp->parsed()) return;
    const int code = run_trace(*a, recorded_by);
    if (code != 0) {
      std::fflush(stdout);
      std::fflush(stderr);
      std::exit(code);  // the traced command's exit code, passed through
    }
  });
}

}  // namespace shardcost::cli
