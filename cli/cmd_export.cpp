// export: cost tables as CSV or JSON, units in the column names, for pandas and spreadsheets.
#include <fmt/format.h>

#include <fstream>

#include "commands.h"
#include "format.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {

void add_export_command(CLI::App& app) {
  struct Args {
    std::string db, table, format = "csv";
    db::TableFilter filter;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export",
                                 "Write a cost table (gemm, memory, collective, embedding, "
                                 "kernels, measured, runs) as CSV or JSON");
  cmd->add_option("--db", a->db, "store file")->required();
  cmd->add_option("--table", a->table,
                  "gemm, memory, collective, embedding, kernels, measured (training runs) or runs")
      ->required();
  cmd->add_option("--format", a->format, "csv (default) or json");
  cmd->add_option("--device", a->filter.device, "only devices whose name contains this (any case)");
  cmd->add_option("--op", a->filter.op,
                  "only this collective op (collective) or kind (memory, kernels)");
  // -o/--output is every command's (output_file.h): written whole, through a rename.
  cmd->callback([a] {
    const Format f = parse_format(a->format, {Format::csv, Format::json});
    a->filter.op = bench::canonical_collective(a->filter.op);  // alltoall = all_to_all
    const db::Store store = db::Store::open(a->db, db::Store::Mode::read_only);
    const db::CostTable t = store.table(a->table, a->filter);
    const std::string text = f == Format::json ? db::to_json(t) : db::to_csv(t);
    fmt::print("{}", text);
  });
}

}  // namespace shardcost::cli
