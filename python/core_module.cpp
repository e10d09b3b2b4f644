// shardcost._core: the one door to pybind11. Requests in as JSON text, reports out as the JSON
// text the command line prints (shardcost/request.h); the store's tables as columns and typed
// rows. The package around it (python/shardcost/__init__.py) makes these Python objects.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/planner_requests.h"
#include "shardcost/request.h"

namespace py = pybind11;

namespace shardcost {
namespace {

// What a run returns to Python: the report's JSON text, how it ends, and its warnings.
struct RunResult {
  std::string json;
  int exit_code = 0;
  std::string message;
  std::vector<std::string> warnings;
};

template <typename Report>
RunResult result_of(const Report& r) {
  return {json_text(to_json(r)), r.verdict.exit_code, r.verdict.message, r.warnings};
}

// A request (JSON text, as plan_request_from_json reads it) run without holding the GIL.
RunResult run(const std::string& request_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(request_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(std::string("request: not JSON (") + e.what() + ")");
  }
  // The sibling planners (place, split-learning, shard-tables, schedule).
  if (j.is_object() && j.contains("command") && j["command"].is_string() &&
      is_planner_command(j["command"].get<std::string>())) {
    PlannerRun r;
    {
      py::gil_scoped_release unlocked;
      r = run_planner_json(j, "from Python");
    }
    return {json_text(r.report), r.verdict.exit_code, r.verdict.message, r.warnings};
  }
  const PlanRequest request = plan_request_from_json(j, "from Python");
  py::gil_scoped_release unlocked;
  if (request.command == "rank") return result_of(run_rank(request));
  return result_of(run_estimate(request));
}

// A request file or an estimate's or rank's --format json output, as request JSON.
std::string request_file(const std::string& path) {
  return json_text(to_json(load_plan_request(path)));
}

// validate: every published row priced, from a store's costs where one is named; the store's
// warnings beside the rows.
py::tuple validate_rows(const std::string& db) {
  ValidationReport report;
  std::vector<std::string> warnings;
  {
    py::gil_scoped_release unlocked;
    const auto costs = load_cost_sources(db);
    warnings = costs->warnings;
    EstimateOptions base;
    base.costs = costs->source();
    report = validate(base);
  }
  py::list rows;
  for (const ValidationRow& r : report.rows) {
    py::dict d;
    d["table"] = r.table;
    d["label"] = r.label;
    d["model"] = r.model.name;
    d["cluster"] = r.cluster;
    d["gpus"] = r.gpus;
    d["strategy"] = to_string(r.strategy);
    d["published_s"] = r.published_s;
    d["predicted_s"] = r.predicted_s;
    d["error"] = r.error();
    d["fits"] = r.fits;
    rows.append(std::move(d));
  }
  return py::make_tuple(rows, warnings);
}

py::object cell(const db::Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return py::int_(*i);
  if (const auto* d = std::get_if<double>(&c)) return py::float_(*d);
  if (const auto* s = std::get_if<std::string>(&c))
    return py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(s->data(), static_cast<Py_ssize_t>(s->size()), "replace"));
  return py::none();
}

// One table of a store as `shardcost export --table` reads it: (columns, rows).
py::tuple store_table(const std::string& path, const std::string& name, const std::string& device,
                      const std::string& op) {
  db::CostTable t;
  {
    py::gil_scoped_release unlocked;
    const db::Store store = db::Store::open(path, db::Store::Mode::read_only);
    t = store.table(name, {device, op});
  }
  py::list rows;
  for (const auto& row : t.rows) {
    py::tuple out(row.size());
    for (size_t i = 0; i < row.size(); ++i) out[i] = cell(row[i]);
    rows.append(std::move(out));
  }
  return py::make_tuple(t.columns, rows);
}

// Each table's row count.
std::vector<std::pair<std::string, int64_t>> store_counts(const std::string& path) {
  const db::Store store = db::Store::open(path, db::Store::Mode::read_only);
  std::vector<std::pair<std::string, int64_t>> out;
  for (const db::TableCount& c : store.info().counts) out.emplace_back(c.table, c.rows);
  return out;
}

}  // namespace
}  // namespace shardcost

PYBIND11_MODULE(_core, m) {
  using namespace shardcost;
  m.doc() = "shardcost's compiled core; use the shardcost package";
  // Errors carry the command line's one-line messages: InputError for what the caller can fix
  // (the command line's exit 2), Error for the rest.
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<InputError> input_error(m, "InputError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(e.exit_code() == 2 ? input_error.ptr() : error.ptr(), e.what());
    }
  });
  py::class_<RunResult>(m, "RunResult")
      .def_readonly("json", &RunResult::json)
      .def_readonly("exit_code", &RunResult::exit_code)
      .def_readonly("message", &RunResult::message)
      .def_readonly("warnings", &RunResult::warnings);
  m.def("run", &run, py::arg("request_json"),
        "Runs a request (JSON text: estimate, rank or a sibling planner's); the report as the "
        "command line prints it");
  m.def("request_file", &request_file, py::arg("path"),
        "A saved request or --format json output, as request JSON text");
  m.def("validate_rows", &validate_rows, py::arg("db") = "",
        "Every published training row priced (table, label, model, ..., error), and the store's "
        "warnings");
  m.def("catalog_json", &catalog_json, "The built-in catalog: devices, systems, models");
  m.def("software_presets", &software_presets, "The software presets' names");
  m.def("store_table", &store_table, py::arg("path"), py::arg("table"), py::arg("device") = "",
        py::arg("op") = "", "One table of a store: (columns, rows)");
  m.def("store_tables", &db::table_names, "The tables a store exports");
  m.def("store_counts", &store_counts, py::arg("path"), "Each table's rows in a store");
}
