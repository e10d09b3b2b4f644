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
    // Row by row: a table of any size in constant memory (600,000 kernel events held whole
    // took 737 MB).
    std::vector<std::string> columns;
    size_t rows = 0;
    store.each_row(
        a->table, a->filter,
        [&](const std::vector<std::string>& c) {
          columns = c;
          if (f == Format::csv) fmt::print("{}", db::csv_header(c));
        },
        [&](const std::vector<db::Cell>& r) {
          if (f == Format::csv)
            fmt::print("{}", db::csv_row(r));
          else
            fmt::print("{}{}", rows == 0 ? "[\n" : ",\n", db::json_row(columns, r));
          ++rows;
        });
    if (f == Format::json) fmt::print("{}", rows == 0 ? "[]\n" : "\n]\n");
  });
}

}  // namespace shardcost::cli
