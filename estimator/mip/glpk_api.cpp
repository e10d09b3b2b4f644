// GLPK calls, checked: every return code is read, and arguments are validated before GLPK sees
// them (GLPK aborts the process on invalid ones).
#include "glpk_api.h"

#include <fmt/format.h>
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "shardcost/error.h"

namespace shardcost::mip {

struct MipProblem::Impl {
  glp_prob* p = nullptr;
  int rows = 0, cols = 0;
  std::vector<int> ia{0}, ja{0};  // GLPK's arrays start at index 1
  std::vector<double> ar{0};
  bool infeasible = false;
  std::vector<double> start;  // index 0 unused, as GLPK's
  bool start_offered = false;
  std::vector<std::pair<double, double>> row_bounds{{0, 0}}, col_bounds{{0, 0}};
  std::vector<bool> binary{false};
};

namespace {

// Branch and cut's callback: offers the known solution once, at the first heuristic point.
void offer_start(glp_tree* tree, void* info) {
  auto* impl = static_cast<MipProblem::Impl*>(info);
  if (glp_ios_reason(tree) != GLP_IHEUR || impl->start_offered || impl->start.empty()) return;
  impl->start_offered = true;
  (void)glp_ios_heur_sol(tree, impl->start.data());  // non-zero: rejected, nothing lost
}

}  // namespace

void MipProblem::set_start(std::vector<double> values) {
  if (static_cast<int>(values.size()) != impl_->cols)
    throw Error(
        fmt::format("GLPK: a start of {} values for {} columns", values.size(), impl_->cols));
  values.insert(values.begin(), 0.0);
  // GLPK takes a heuristic solution without checking its rows: an infeasible one would prune
  // the search and come back as "optimal". Kept only when every bound holds.
  const Impl& m = *impl_;
  auto off = [](double v, double lo, double hi) {
    const double tol = 1e-7 * std::max(1.0, std::abs(v));
    return (std::isfinite(lo) && v < lo - tol) || (std::isfinite(hi) && v > hi + tol);
  };
  for (int c = 1; c <= m.cols; ++c) {
    const double v = values[static_cast<size_t>(c)];
    if (off(v, m.col_bounds[static_cast<size_t>(c)].first,
            m.col_bounds[static_cast<size_t>(c)].second) ||
        (m.binary[static_cast<size_t>(c)] && v != 0 && v != 1))
      return;
  }
  std::vector<double> activity(static_cast<size_t>(m.rows) + 1, 0);
  for (size_t k = 1; k < m.ia.size(); ++k)
    activity[static_cast<size_t>(m.ia[k])] += m.ar[k] * values[static_cast<size_t>(m.ja[k])];
  for (int r = 1; r <= m.rows; ++r)
    if (off(activity[static_cast<size_t>(r)], m.row_bounds[static_cast<size_t>(r)].first,
            m.row_bounds[static_cast<size_t>(r)].second))
      return;
  impl_->start = std::move(values);
  impl_->start_offered = false;
}

MipProblem::MipProblem() : impl_(std::make_unique<Impl>()) {
  glp_term_out(GLP_OFF);
  impl_->p = glp_create_prob();
  if (!impl_->p) throw Error("GLPK: glp_create_prob returned no problem");
  glp_set_obj_dir(impl_->p, GLP_MIN);
}

MipProblem::~MipProblem() {
  if (impl_ && impl_->p) glp_delete_prob(impl_->p);
}

namespace {

int bound_kind(double lo, double hi) {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi) return lo == hi ? GLP_FX : GLP_DB;
  if (has_lo) return GLP_LO;
  if (has_hi) return GLP_UP;
  return GLP_FR;
}

}  // namespace

int MipProblem::add_column(double lo, double hi, bool binary, double objective) {
  if (std::isfinite(lo) && std::isfinite(hi) && lo > hi)
    throw Error(fmt::format("GLPK: column bounds [{}, {}] are empty", lo, hi));
  const int c = glp_add_cols(impl_->p, 1);
  impl_->cols = c;
  impl_->col_bounds.emplace_back(binary ? 0.0 : lo, binary ? 1.0 : hi);
  impl_->binary.push_back(binary);
  if (binary) {
    glp_set_col_kind(impl_->p, c, GLP_BV);
  } else {
    glp_set_col_bnds(impl_->p, c, bound_kind(lo, hi), std::isfinite(lo) ? lo : 0,
                     std::isfinite(hi) ? hi : 0);
  }
  glp_set_obj_coef(impl_->p, c, objective);
  return c;
}

void MipProblem::add_row(const std::vector<std::pair<int, double>>& terms, double lo, double hi) {
  if (std::isfinite(lo) && std::isfinite(hi) && lo > hi)
    throw Error(fmt::format("GLPK: row bounds [{}, {}] are empty", lo, hi));
  const int r = glp_add_rows(impl_->p, 1);
  impl_->rows = r;
  impl_->row_bounds.emplace_back(lo, hi);
  glp_set_row_bnds(impl_->p, r, bound_kind(lo, hi), std::isfinite(lo) ? lo : 0,
                   std::isfinite(hi) ? hi : 0);
  for (const auto& [col, coef] : terms) {
    if (col < 1 || col > impl_->cols) throw Error(fmt::format("GLPK: no column {}", col));
    impl_->ia.push_back(r);
    impl_->ja.push_back(col);
    impl_->ar.push_back(coef);
  }
}

MipProblem::Status MipProblem::minimise(double time_limit_s, std::string& why) {
  glp_load_matrix(impl_->p, static_cast<int>(impl_->ia.size()) - 1, impl_->ia.data(),
                  impl_->ja.data(), impl_->ar.data());
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;  // solves the LP relaxation itself
  parm.msg_lev = GLP_MSG_OFF;
  // GLPK aborts on a negative limit: at least a millisecond, at most an hour.
  const double limit = std::isfinite(time_limit_s) ? std::clamp(time_limit_s, 1e-3, 3600.0) : 3600;
  parm.tm_lim = static_cast<int>(limit * 1000);
  // Cuts and pseudo-cost branching close the big-M relaxation's gap far sooner.
  parm.gmi_cuts = GLP_ON;
  parm.mir_cuts = GLP_ON;
  parm.cov_cuts = GLP_ON;
  parm.clq_cuts = GLP_ON;
  parm.br_tech = GLP_BR_PCH;
  parm.bt_tech = GLP_BT_BLB;
  if (!impl_->start.empty()) {
    // The callback sees the problem as given only without the presolver.
    parm.presolve = GLP_OFF;
    parm.cb_func = offer_start;
    parm.cb_info = impl_.get();
  }
  glp_scale_prob(impl_->p, GLP_SF_AUTO);  // rows of seconds beside rows of bytes
  if (parm.presolve == GLP_OFF) {
    // Branch and cut then starts from the LP relaxation's optimal basis, solved here.
    glp_smcp lp;
    glp_init_smcp(&lp);
    lp.msg_lev = GLP_MSG_OFF;
    lp.presolve = GLP_ON;
    lp.tm_lim = parm.tm_lim;
    const int lp_rc = glp_simplex(impl_->p, &lp);
    if (lp_rc != 0 || glp_get_status(impl_->p) != GLP_OPT) {
      // With its presolver, simplex reports an infeasible relaxation as GLP_ENOPFS.
      impl_->infeasible =
          lp_rc == GLP_ENOPFS || (lp_rc == 0 && glp_get_status(impl_->p) == GLP_NOFEAS);
      why = impl_->infeasible ? "no solution meets every constraint"
            : lp_rc == GLP_ETMLIM
                ? fmt::format("no solution within the solver's {:.0f} s", time_limit_s)
                : fmt::format("GLPK glp_simplex failed (code {})", lp_rc);
      return Status::none;
    }
  }
  const int rc = glp_intopt(impl_->p, &parm);
  const int status = glp_mip_status(impl_->p);
  // GLP_ENODFS (the relaxation unbounded) proves no solution is infeasible, so it is not one.
  impl_->infeasible = rc == GLP_ENOPFS || (rc == 0 && status == GLP_NOFEAS);
  if (status == GLP_OPT && rc == 0) return Status::optimal;
  if (status == GLP_FEAS || (status == GLP_OPT && rc != 0)) return Status::feasible;
  switch (rc) {
    case GLP_ETMLIM:
      why = fmt::format("no solution within the solver's {:.0f} s", time_limit_s);
      break;
    case GLP_ENOPFS:
    case GLP_ENODFS:
      why = "no solution meets every constraint";
      break;
    case 0:
      why = status == GLP_NOFEAS ? "no solution meets every constraint"
                                 : "GLPK ended without a solution";
      break;
    default:
      why = fmt::format("GLPK glp_intopt failed (code {})", rc);
  }
  return Status::none;
}

bool MipProblem::proven_infeasible() const {
  return impl_->infeasible;
}

double MipProblem::value(int column) const {
  if (column < 1 || column > impl_->cols) throw Error(fmt::format("GLPK: no column {}", column));
  return glp_mip_col_val(impl_->p, column);
}

}  // namespace shardcost::mip
