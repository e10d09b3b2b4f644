// The layer-wise search: one split per operator minimising the sum of operator costs and
// redistribution costs, by Jia et al.'s node and edge elimination (ICML'18) with the two
// leaf rules of a tree DP; what does not reduce is enumerated when small, else improved one
// node at a time (docs/operator-graphs.md).
#include "layerwise/eliminate.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace shardcost {
namespace {

using Matrix = std::vector<double>;  // rows x cols, row-major
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Record {
  int v = 0, u = -1, w = -1;  // eliminated node; its in- and out-neighbours (-1: none)
  std::vector<int> arg;       // best config of v for each (u, w) pair (or each u, or w)
};

}  // namespace

std::vector<int> eliminate(const std::vector<std::vector<double>>& node_cost,
                           const std::map<std::pair<int, int>, std::vector<double>>& edge_cost) {
  const int count = static_cast<int>(node_cost.size());
  std::vector<std::vector<double>> nc = node_cost;
  std::map<std::pair<int, int>, Matrix> edges = edge_cost;
  std::vector<std::set<int>> in(static_cast<size_t>(count)), out(static_cast<size_t>(count));
  for (const auto& [key, m] : edges) {
    out[static_cast<size_t>(key.first)].insert(key.second);
    in[static_cast<size_t>(key.second)].insert(key.first);
  }
  auto size = [&](int v) { return static_cast<int>(nc[static_cast<size_t>(v)].size()); };
  std::vector<bool> alive(static_cast<size_t>(count), true);
  std::vector<Record> records;
  auto add_edge = [&](int u, int w, Matrix m) {
    auto [it, fresh] = edges.try_emplace({u, w}, std::move(m));
    if (!fresh)
      for (size_t i = 0; i < it->second.size(); ++i) it->second[i] += m[i];  // edge elimination
    out[static_cast<size_t>(u)].insert(w);
    in[static_cast<size_t>(w)].insert(u);
  };
  auto drop_edge = [&](int u, int w) {
    edges.erase({u, w});
    out[static_cast<size_t>(u)].erase(w);
    in[static_cast<size_t>(w)].erase(u);
  };
  std::vector<int> work(static_cast<size_t>(count));
  for (int v = 0; v < count; ++v) work[static_cast<size_t>(v)] = v;
  int remaining = count;
  while (!work.empty() && remaining > 1) {
    const int v = work.back();
    work.pop_back();
    const auto sv = static_cast<size_t>(v);
    if (!alive[sv]) continue;
    const size_t ins = in[sv].size(), outs = out[sv].size();
    Record r;
    r.v = v;
    const Matrix& cv = nc[sv];
    const int nv = size(v);
    if (ins == 1 && outs == 1) {
      // Node elimination: u -> v -> w becomes u -> w.
      const int u = *in[sv].begin(), w = *out[sv].begin();
      const Matrix& a = edges.at({u, v});
      const Matrix& b = edges.at({v, w});
      const int nu = size(u), nw = size(w);
      Matrix m(static_cast<size_t>(nu) * nw, kInf);
      r.arg.assign(m.size(), 0);
      for (int i = 0; i < nu; ++i)
        for (int k = 0; k < nv; ++k) {
          const double head = a[static_cast<size_t>(i) * nv + k] + cv[static_cast<size_t>(k)];
          const double* row = &b[static_cast<size_t>(k) * nw];
          for (int j = 0; j < nw; ++j) {
            const double t = head + row[j];
            const size_t at = static_cast<size_t>(i) * nw + j;
            if (t < m[at]) m[at] = t, r.arg[at] = k;
          }
        }
      r.u = u, r.w = w;
      drop_edge(u, v);
      drop_edge(v, w);
      add_edge(u, w, std::move(m));
      work.push_back(u);
      work.push_back(w);
    } else if ((ins == 1 && outs == 0) || (ins == 0 && outs == 1)) {
      // A leaf (only a producer) or a source (only a consumer): folded into its one
      // neighbour's cost, v's best choice kept for each of the neighbour's.
      const bool leaf = ins == 1;
      const int other = leaf ? *in[sv].begin() : *out[sv].begin();
      const Matrix& e = leaf ? edges.at({other, v}) : edges.at({v, other});
      const int no = size(other);
      (leaf ? r.u : r.w) = other;
      r.arg.assign(static_cast<size_t>(no), 0);
      for (int i = 0; i < no; ++i) {
        double best = kInf;
        for (int k = 0; k < nv; ++k) {
          // The edge's rows are its producer's choices.
          const size_t at =
              leaf ? static_cast<size_t>(i) * nv + k : static_cast<size_t>(k) * no + i;
          const double t = e[at] + cv[static_cast<size_t>(k)];
          if (t < best) best = t, r.arg[static_cast<size_t>(i)] = k;
        }
        nc[static_cast<size_t>(other)][static_cast<size_t>(i)] += best;
      }
      leaf ? drop_edge(other, v) : drop_edge(v, other);
      work.push_back(other);
    } else {
      continue;
    }
    alive[sv] = false;
    --remaining;
    records.push_back(std::move(r));
  }

  // What is left: enumerated when small, else improved one node at a time from each node's
  // own best.
  std::vector<int> left;
  for (int v = 0; v < count; ++v)
    if (alive[static_cast<size_t>(v)]) left.push_back(v);
  std::vector<int> choice(static_cast<size_t>(count), 0);
  auto total = [&] {
    double t = 0;
    for (int v : left)
      t += nc[static_cast<size_t>(v)][static_cast<size_t>(choice[static_cast<size_t>(v)])];
    for (const auto& [key, m] : edges)
      t += m[static_cast<size_t>(choice[static_cast<size_t>(key.first)]) * size(key.second) +
             static_cast<size_t>(choice[static_cast<size_t>(key.second)])];
    return t;
  };
  for (int v : left) {
    const auto& c = nc[static_cast<size_t>(v)];
    choice[static_cast<size_t>(v)] =
        static_cast<int>(std::min_element(c.begin(), c.end()) - c.begin());
  }
  double space = 1;
  for (int v : left) space *= size(v);
  if (left.size() > 1 && space <= 2e6) {
    std::vector<int> at(left.size(), 0), best_choice = choice;
    double best = kInf;
    for (;;) {
      for (size_t i = 0; i < left.size(); ++i) choice[static_cast<size_t>(left[i])] = at[i];
      if (const double t = total(); t < best) best = t, best_choice = choice;
      size_t i = 0;
      while (i < left.size() && ++at[i] == size(left[i])) at[i++] = 0;
      if (i == left.size()) break;
    }
    choice = best_choice;
  } else if (left.size() > 1) {
    double current = total();
    for (int sweep = 0; sweep < 50; ++sweep) {
      bool better = false;
      for (int v : left) {
        int keep = choice[static_cast<size_t>(v)];
        for (int k = 0; k < size(v); ++k) {
          choice[static_cast<size_t>(v)] = k;
          if (const double t = total(); t < current - 1e-15) {
            current = t, better = true, keep = k;
          } else {
            choice[static_cast<size_t>(v)] = keep;
          }
        }
      }
      if (!better) break;
    }
  }
  // Undo the eliminations, last first: each node's best given its neighbours'.
  for (auto r = records.rbegin(); r != records.rend(); ++r) {
    const int cu = r->u >= 0 ? choice[static_cast<size_t>(r->u)] : 0;
    const int cw = r->w >= 0 ? choice[static_cast<size_t>(r->w)] : 0;
    size_t at = 0;
    if (r->u >= 0 && r->w >= 0)
      at = static_cast<size_t>(cu) * size(r->w) + static_cast<size_t>(cw);
    else
      at = static_cast<size_t>(r->u >= 0 ? cu : cw);
    choice[static_cast<size_t>(r->v)] = r->arg[at];
  }
  return choice;
}

double assignment_cost(const std::vector<std::vector<double>>& node_cost,
                       const std::map<std::pair<int, int>, std::vector<double>>& edge_cost,
                       const std::vector<int>& choice) {
  double t = 0;
  for (size_t v = 0; v < node_cost.size(); ++v) t += node_cost[v][static_cast<size_t>(choice[v])];
  for (const auto& [key, m] : edge_cost)
    t += m[static_cast<size_t>(choice[static_cast<size_t>(key.first)]) *
               node_cost[static_cast<size_t>(key.second)].size() +
           static_cast<size_t>(choice[static_cast<size_t>(key.second)])];
  return t;
}

}  // namespace shardcost
