// GLPK calls, checked: every return code is read, and arguments are validated before GLPK sees
// them (GLPK aborts the process on invalid ones).
#include "glpk_api.h"

#include <fmt/format.h>
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "shardcost/error.h"

namespace shardcost::jobs {

struct MipProblem::Impl {
  glp_prob* p = nullptr;
  int rows = 0, cols = 0;
  std::vector<int> ia{0}, ja{0};  // GLPK's arrays start at index 1
  std::vector<double> ar{0};
};

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
  const int rc = glp_intopt(impl_->p, &parm);
  const int status = glp_mip_status(impl_->p);
  if (status == GLP_OPT && rc == 0) return Status::optimal;
  if (status == GLP_FEAS || (status == GLP_OPT && rc != 0)) return Status::feasible;
  switch (rc) {
    case GLP_ETMLIM:
      why = fmt::format("no schedule within the exact solver's {:.0f} s", time_limit_s);
      break;
    case GLP_ENOPFS:
    case GLP_ENODFS:
      why = "no schedule meets every deadline";
      break;
    case 0:
      why = status == GLP_NOFEAS ? "no schedule meets every deadline"
                                 : "GLPK ended without a schedule";
      break;
    default:
      why = fmt::format("GLPK glp_intopt failed (code {})", rc);
  }
  return Status::none;
}

double MipProblem::value(int column) const {
  if (column < 1 || column > impl_->cols) throw Error(fmt::format("GLPK: no column {}", column));
  return glp_mip_col_val(impl_->p, column);
}

}  // namespace shardcost::jobs
