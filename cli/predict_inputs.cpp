#include "predict_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "shardcost/embeddings.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {
namespace {

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ls(line);
  std::string cell;
  while (std::getline(ls, cell, ',')) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
    out.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Reads a CSV with a header; calls row(values by column name, line number) for each row of
// the wanted columns, each a positive integer.
template <class Row>
void read_csv(const std::string& path, const std::vector<std::string>& required,
              const std::vector<std::string>& optional, Row&& row) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot open '{}': no such file or not readable", path));
  std::string line;
  std::vector<std::string> header;
  int line_no = 0;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line[0] != '#') header = cells(line);
  }
  if (header.empty())
    throw InputError(fmt::format("{}: empty file; give a header line ({}) and rows", path,
                                 fmt::join(required, ",")));
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const auto& r : required)
    if (!column.count(r))
      throw InputError(fmt::format("{}:{}: the header has no column '{}'; it needs {}", path,
                                   line_no, r, fmt::join(required, ",")));
  int rows = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    const auto c = cells(line);
    std::map<std::string, int64_t> values;
    auto take = [&](const std::string& name, bool needed) {
      const auto it = column.find(name);
      if (it == column.end()) return;
      if (it->second >= c.size()) {
        if (!needed) return;
        throw InputError(fmt::format("{}:{}: column '{}' is missing; the row has {} of {} columns",
                                     path, line_no, name, c.size(), header.size()));
      }
      const std::string& text = c[it->second];
      int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size() || v < 1)
        throw InputError(fmt::format("{}:{}: column '{}' is '{}'; it must be a positive integer",
                                     path, line_no, name, text));
      values[name] = v;
    };
    for (const auto& r : required) take(r, true);
    for (const auto& o : optional) take(o, false);
    row(values);
    ++rows;
  }
  if (rows == 0) throw InputError(fmt::format("{}: no rows after the header", path));
}

}  // namespace

GemmShape parse_shape(const std::string& text) {
  std::vector<int64_t> v;
  std::string rest = text;
  for (size_t x; (x = rest.find('x')) != std::string::npos; rest = rest.substr(x + 1))
    v.push_back(bench::parse_size(rest.substr(0, x)));
  v.push_back(bench::parse_size(rest));
  if (v.size() != 3 && v.size() != 4)
    throw InputError(fmt::format("--shape '{}' must be MxNxK or MxNxKxBATCH", text));
  return {v[0], v[1], v[2], v.size() == 4 ? v[3] : 1};
}

int64_t positive_int(const std::string& s, const char* flag) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{} '{}' must be a positive integer", flag, s));
}

std::vector<int64_t> size_sweep_of(const std::string& begin, const std::string& end,
                                   const std::string& factor, const char* default_begin,
                                   const char* default_end) {
  const int64_t b = bench::parse_size(begin.empty() ? default_begin : begin);
  const int64_t e =
      end.empty() ? (begin.empty() ? bench::parse_size(default_end) : b) : bench::parse_size(end);
  return bench::size_sweep(b, e, positive_int(factor, "-f"));
}

std::vector<GemmShape> read_shapes_csv(const std::string& path) {
  std::vector<GemmShape> out;
  read_csv(path, {"m", "n", "k"}, {"batch"}, [&](const std::map<std::string, int64_t>& v) {
    const auto b = v.find("batch");
    out.push_back({v.at("m"), v.at("n"), v.at("k"), b == v.end() ? 1 : b->second});
  });
  return out;
}

std::vector<int64_t> read_sizes_csv(const std::string& path) {
  std::vector<int64_t> out;
  read_csv(path, {"bytes"}, {},
           [&](const std::map<std::string, int64_t>& v) { out.push_back(v.at("bytes")); });
  return out;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int64_t> size_list(const std::string& spec, const char* flag) {
  // A value that is not a positive count says which flag and how to write one.
  auto count = [&](const std::string& text) {
    try {
      return bench::parse_size(text);
    } catch (const InputError&) {
      throw InputError(fmt::format(
          "{} '{}': give positive whole numbers (K, M, G: times 1024), as lists like 1K,64K or "
          "ranges like 1K:4M:4",
          flag, text));
    }
  };
  std::vector<int64_t> out;
  for (const auto& part : split_commas(spec)) {
    const auto c1 = part.find(':');
    if (c1 == std::string::npos) {
      out.push_back(count(part));
      continue;
    }
    const auto c2 = part.find(':', c1 + 1);
    const int64_t b = count(part.substr(0, c1));
    const int64_t e =
        count(part.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1));
    const int64_t f = c2 == std::string::npos ? 2 : positive_int(part.substr(c2 + 1), flag);
    for (const int64_t v : bench::size_sweep(b, e, f)) out.push_back(v);
  }
  return out;
}

std::vector<double> number_list(const std::string& spec, const char* flag) {
  std::vector<double> out;
  for (const auto& part : split_commas(spec)) {
    size_t used = 0;
    double v = -1;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || !(v >= 0) || !std::isfinite(v))
      throw InputError(
          fmt::format("{} '{}': give non-negative numbers separated by commas, e.g. {} 0,1.05",
                      flag, part, flag));
    out.push_back(v);
  }
  return out;
}

std::vector<bench::EmbeddingShape> embedding_grid(const EmbeddingGrid& g) {
  std::vector<bench::EmbeddingShape> out;
  const auto batches = size_list(g.batch, "--batch");
  if (!g.tables.empty()) {
    for (const auto& t : load_tables(g.tables))
      for (int64_t b : batches) out.push_back({t.rows, t.dim, t.pooling, b, t.zipf, t.histogram});
    return out;
  }
  const auto rows = size_list(g.rows, "--rows"), dims = size_list(g.dim, "--dim");
  const auto pooling = number_list(g.pooling, "--pooling"), zipf = number_list(g.zipf, "--zipf");
  if (g.sample > 0) {
    auto range = [](const auto& v) { return std::minmax_element(v.begin(), v.end()); };
    if (rows.empty() || dims.empty() || pooling.empty() || zipf.empty() || batches.empty())
      throw InputError(
          "--sample draws between the values of --rows, --dim, --pooling, --batch "
          "and --zipf; give each");
    // A Latin hypercube: per dimension, one draw in each of the N strata of its range, the
    // first and last at the range's ends, the strata shuffled dimension by dimension.
    std::mt19937_64 rng(g.seed);
    std::uniform_real_distribution<double> unit(0, 1);
    auto strata = [&] {
      std::vector<double> t(static_cast<size_t>(g.sample));
      for (size_t k = 0; k < t.size(); ++k) t[k] = (static_cast<double>(k) + unit(rng)) / t.size();
      t.front() = 0;
      if (t.size() > 1) t.back() = 1;
      std::shuffle(t.begin(), t.end(), rng);
      return t;
    };
    auto log_between = [](double lo, double hi, double t) {
      return std::exp2(std::log2(lo) + t * (std::log2(hi) - std::log2(lo)));
    };
    const auto [r0, r1] = range(rows);
    const auto [d0, d1] = range(dims);
    const auto [p0, p1] = range(pooling);
    const auto [b0, b1] = range(batches);
    const auto [z0, z1] = range(zipf);
    if (*p0 <= 0)
      throw InputError("--sample draws pooling factors in log scale: give them above 0");
    const auto tr = strata(), td = strata(), tp = strata(), tb = strata(), tz = strata();
    for (size_t i = 0; i < tr.size(); ++i) {
      const double d = log_between(static_cast<double>(*d0), static_cast<double>(*d1), td[i]);
      // Widths in fours, as embedding dims are (within the range); pooling in quarters; the
      // skew in hundredths.
      const int64_t dim = std::clamp<int64_t>(std::llround(d / 4) * 4, *d0, *d1);
      out.push_back(
          {std::llround(log_between(static_cast<double>(*r0), static_cast<double>(*r1), tr[i])),
           dim,
           std::clamp(std::round(log_between(*p0, *p1, tp[i]) * 4) / 4, *p0, *p1),
           std::llround(log_between(static_cast<double>(*b0), static_cast<double>(*b1), tb[i])),
           std::round((*z0 + tz[i] * (*z1 - *z0)) * 100) / 100,
           {}});
    }
    return out;
  }
  for (int64_t r : rows)
    for (int64_t d : dims)
      for (double p : pooling)
        for (int64_t b : batches)
          for (double z : zipf) out.push_back({r, d, p, b, z, {}});
  return out;
}

}  // namespace shardcost::cli
