// L-BFGS and its strong Wolfe line search, ported step for step from libtorch's lbfgs.cpp
// (same branches, constants and order of evaluations), on ember tensors.
#include "ember/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "optim/state_dict_io.h"

namespace ember::optim {
namespace {

constexpr const char* kStrongWolfe = "strong_wolfe";

double val(const Tensor& t) { return t.item<double>(); }
Tensor inner(const Tensor& a, const Tensor& b) { return (a * b).sum(); }

// A copy of dict.tensors[key] as `dtype` (flat history tensors have no parameter's shape).
Tensor load_flat(const OptimizerStateDict& in, const std::string& key, ScalarType dtype) {
  auto it = in.tensors.find(key);
  EMBER_CHECK(it != in.tensors.end(), "LBFGS::load_state_dict", "the state dict lacks '", key, "'");
  NoGradGuard no_grad;
  return it->second.to(dtype).clone();
}

void save_deque(OptimizerStateDict& out, const std::string& key, const std::deque<Tensor>& values) {
  for (size_t k = 0; k < values.size(); ++k) detail::save_state_tensor(out, key + "." + std::to_string(k), values[k]);
}

std::deque<Tensor> load_deque(const OptimizerStateDict& in, const std::string& key, ScalarType dtype) {
  std::deque<Tensor> values;
  while (in.tensors.count(key + "." + std::to_string(values.size())))
    values.push_back(load_flat(in, key + "." + std::to_string(values.size()), dtype));
  return values;
}

// Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds` (default:
// between x1 and x2); the middle of the bounds when the cubic has no minimum.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  auto [xmin_bound, xmax_bound] = bounds.has_value() ? *bounds : std::minmax({x1, x2});
  const double d1 = (g1 + g2) - (3 * (f1 - f2) / (x1 - x2));
  const double d2_square = std::pow(d1, 2) - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    double min_pos = 0;
    if (x1 <= x2) {
      min_pos = x2 - ((x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2)));
    } else {
      min_pos = x1 - ((x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2)));
    }
    return std::min(std::max(min_pos, xmin_bound), xmax_bound);
  }
  return (xmin_bound + xmax_bound) / 2;
}

using ObjectiveFunction =
    std::function<std::tuple<double, Tensor>(const std::vector<Tensor>& x, double t, const Tensor& d)>;

struct LineSearchResult {
  double loss;
  Tensor flat_grad;
  double t;
  int64_t func_evals;
};

// Finds a step t along d satisfying the strong Wolfe conditions (sufficient decrease c1,
// curvature c2): bracketing, then zooming by cubic interpolation.
LineSearchResult strong_wolfe(const ObjectiveFunction& obj_func, const std::vector<Tensor>& x, double t,
                              const Tensor& d, double f, Tensor g, const Tensor& gtd, double c1 = 1e-4,
                              double c2 = 0.9, double tolerance_change = 1e-9, int64_t max_ls = 25) {
  const double d_norm = val(d.abs().max());
  g = g.clone();
  auto [f_new, g_new] = obj_func(x, t, d);
  int64_t ls_func_evals = 1;
  Tensor gtd_new = inner(g_new, d);

  // bracket an interval containing a point satisfying the Wolfe criteria
  double t_prev = 0;
  double f_prev = f;
  Tensor g_prev = g;
  Tensor gtd_prev = gtd;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f;
  std::vector<Tensor> bracket_g, bracket_gtd;

  while (ls_iter < max_ls) {
    if ((f_new > (f + c1 * t * val(gtd))) || (ls_iter > 1 && (f_new >= f_prev))) {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(val(gtd_new)) <= (-c2 * val(gtd))) {
      bracket = {t, t};
      bracket_f = {f_new, f_new};
      bracket_g = {g_new, g_new};
      done = true;
      break;
    }
    if (val(gtd_new) >= 0) {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    // interpolate
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10;
    const double previous_t = t;
    t = cubic_interpolate(t_prev, f_prev, val(gtd_prev), t, f_new, val(gtd_new), std::make_pair(min_step, max_step));
    t_prev = previous_t;
    f_prev = f_new;
    g_prev = g_new.clone();
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj_func(x, t, d);
    ls_func_evals += 1;
    gtd_new = inner(g_new, d);
    ls_iter += 1;
  }
  if (ls_iter == max_ls) {
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  // zoom: refine the bracket until a point satisfies the criteria
  bool insuf_progress = false;
  auto [low_pos, high_pos] = bracket_f[0] <= bracket_f[1] ? std::make_tuple(0, 1) : std::make_tuple(1, 0);
  while (!done && ls_iter < max_ls) {
    t = cubic_interpolate(bracket[0], bracket_f[0], val(bracket_gtd[0]), bracket[1], bracket_f[1],
                          val(bracket_gtd[1]));
    // When t lands within 10% of the bracket's length from an end, twice in a row or
    // outside, move it to 10% from the nearer end.
    const double bracket_max = std::max(bracket[0], bracket[1]);
    const double bracket_min = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (bracket_max - bracket_min);
    if (std::min(bracket_max - t, t - bracket_min) < eps) {
      if (insuf_progress || (t >= bracket_max) || (t <= bracket_min)) {
        t = (std::abs(t - bracket_max) < std::abs(t - bracket_min)) ? bracket_max - eps : bracket_min + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }

    std::tie(f_new, g_new) = obj_func(x, t, d);
    ls_func_evals += 1;
    gtd_new = inner(g_new, d);
    ls_iter += 1;

    if ((f_new > (f + c1 * t * val(gtd))) || (f_new >= bracket_f[low_pos])) {
      // Armijo condition not satisfied or not lower than lowest point
      bracket[high_pos] = t;
      bracket_f[high_pos] = f_new;
      bracket_g[high_pos] = g_new.clone();
      bracket_gtd[high_pos] = gtd_new;
      std::tie(low_pos, high_pos) = bracket_f[0] <= bracket_f[1] ? std::make_tuple(0, 1) : std::make_tuple(1, 0);
    } else {
      if (std::abs(val(gtd_new)) <= (-c2 * val(gtd))) {
        done = true;  // Wolfe conditions satisfied
      } else if ((val(gtd_new) * (bracket[high_pos] - bracket[low_pos])) >= 0) {
        // old high becomes new low
        bracket[high_pos] = bracket[low_pos];
        bracket_f[high_pos] = bracket_f[low_pos];
        bracket_g[high_pos] = bracket_g[low_pos];
        bracket_gtd[high_pos] = bracket_gtd[low_pos];
      }
      // new point becomes new low
      bracket[low_pos] = t;
      bracket_f[low_pos] = f_new;
      bracket_g[low_pos] = g_new.clone();
      bracket_gtd[low_pos] = gtd_new;
    }
    if ((std::abs(bracket[1] - bracket[0]) * d_norm) < tolerance_change) break;  // bracket too small
  }
  return {bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals};
}

}  // namespace

std::map<std::string, double> LBFGSOptions::hyperparameters() const {
  return {{"lr", lr()},
          {"max_iter", static_cast<double>(max_iter())},
          {"max_eval", static_cast<double>(max_eval().value_or(max_iter() * 5 / 4))},
          {"tolerance_grad", tolerance_grad()},
          {"tolerance_change", tolerance_change()},
          {"history_size", static_cast<double>(history_size())},
          {"line_search_fn", line_search_fn() == kStrongWolfe ? 1.0 : 0.0}};
}

void LBFGSOptions::set_hyperparameters(const std::map<std::string, double>& values) {
  const char* op = "LBFGS::load_state_dict";
  lr(detail::require_scalar(values, "lr", op));
  max_iter(static_cast<int64_t>(detail::require_scalar(values, "max_iter", op)));
  max_eval(static_cast<int64_t>(detail::require_scalar(values, "max_eval", op)));
  tolerance_grad(detail::require_scalar(values, "tolerance_grad", op));
  tolerance_change(detail::require_scalar(values, "tolerance_change", op));
  history_size(static_cast<int64_t>(detail::require_scalar(values, "history_size", op)));
  if (detail::require_scalar(values, "line_search_fn", op) != 0) {
    line_search_fn(kStrongWolfe);
  } else {
    line_search_fn(std::nullopt);
  }
}

std::unique_ptr<OptimizerParamState> LBFGSParamState::clone() const {
  auto copy = std::make_unique<LBFGSParamState>(*this);
  auto deep = [](Tensor& t) {
    if (t.defined()) t = t.clone();
  };
  deep(copy->d());
  deep(copy->H_diag());
  deep(copy->prev_flat_grad());
  for (auto* values : {&copy->old_dirs(), &copy->old_stps(), &copy->ro()})
    for (Tensor& t : *values) deep(t);
  if (copy->al())
    for (Tensor& t : *copy->al()) deep(t);
  return copy;
}

void LBFGSParamState::save(const std::string& prefix, OptimizerStateDict& out) const {
  out.scalars[prefix + "func_evals"] = static_cast<double>(func_evals());
  out.scalars[prefix + "n_iter"] = static_cast<double>(n_iter());
  out.scalars[prefix + "t"] = t();
  out.scalars[prefix + "prev_loss"] = prev_loss();
  detail::save_state_tensor(out, prefix + "d", d());
  detail::save_state_tensor(out, prefix + "H_diag", H_diag());
  detail::save_state_tensor(out, prefix + "prev_flat_grad", prev_flat_grad());
  save_deque(out, prefix + "old_dirs", old_dirs());
  save_deque(out, prefix + "old_stps", old_stps());
  save_deque(out, prefix + "ro", ro());
  if (al()) {
    out.scalars[prefix + "al_size"] = static_cast<double>(al()->size());
    for (size_t k = 0; k < al()->size(); ++k)
      detail::save_state_tensor(out, prefix + "al." + std::to_string(k), (*al())[k]);
  }
}

void LBFGSParamState::load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) {
  const char* op = "LBFGS::load_state_dict";
  const ScalarType dtype = param.scalar_type();
  func_evals(static_cast<int64_t>(detail::require_scalar(in.scalars, prefix + "func_evals", op)));
  n_iter(static_cast<int64_t>(detail::require_scalar(in.scalars, prefix + "n_iter", op)));
  t(detail::require_scalar(in.scalars, prefix + "t", op));
  prev_loss(detail::require_scalar(in.scalars, prefix + "prev_loss", op));
  using Field = std::pair<const char*, Tensor*>;
  for (auto [name, field] :
       {Field{"d", &d()}, Field{"H_diag", &H_diag()}, Field{"prev_flat_grad", &prev_flat_grad()}}) {
    if (in.tensors.count(prefix + name)) *field = load_flat(in, prefix + name, dtype);
  }
  old_dirs(load_deque(in, prefix + "old_dirs", dtype));
  old_stps(load_deque(in, prefix + "old_stps", dtype));
  ro(load_deque(in, prefix + "ro", dtype));
  EMBER_CHECK(old_dirs().size() == old_stps().size() && old_stps().size() == ro().size(), op,
              "the history lists differ in length: old_dirs ", old_dirs().size(), ", old_stps ", old_stps().size(),
              ", ro ", ro().size());
  if (auto it = in.scalars.find(prefix + "al_size"); it != in.scalars.end()) {
    std::vector<Tensor> values(static_cast<size_t>(it->second));
    for (size_t k = 0; k < values.size(); ++k) {
      const std::string key = prefix + "al." + std::to_string(k);
      if (in.tensors.count(key)) values[k] = load_flat(in, key, dtype);
    }
    al(std::move(values));
  }
}

LBFGS::LBFGS(std::vector<OptimizerParamGroup> param_groups, LBFGSOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<LBFGSOptions>(defaults)) {
  EMBER_CHECK(param_groups_.size() == 1, "LBFGS",
              "LBFGS doesn't support per-parameter options (parameter groups), got ", param_groups_.size(), " groups");
  if (!defaults.max_eval()) {
    const int64_t max_eval = defaults.max_iter() * 5 / 4;
    static_cast<LBFGSOptions&>(param_groups_[0].options()).max_eval(max_eval);
    static_cast<LBFGSOptions&>(*defaults_).max_eval(max_eval);
  }
  validate_all();
}

void LBFGS::validate(const OptimizerOptions& base) const {
  const auto& o = static_cast<const LBFGSOptions&>(base);
  EMBER_CHECK(o.lr() >= 0, "LBFGS", "invalid learning rate: ", o.lr());
  EMBER_CHECK(o.max_iter() > 0, "LBFGS", "invalid max_iter value: ", o.max_iter());
  EMBER_CHECK(!o.max_eval() || *o.max_eval() > 0, "LBFGS", "invalid max_eval value: ", o.max_eval().value_or(0));
  EMBER_CHECK(o.tolerance_grad() >= 0, "LBFGS", "invalid tolerance_grad value: ", o.tolerance_grad());
  EMBER_CHECK(o.tolerance_change() >= 0, "LBFGS", "invalid tolerance_change value: ", o.tolerance_change());
  EMBER_CHECK(o.history_size() > 0, "LBFGS", "invalid history_size value: ", o.history_size());
  EMBER_CHECK(!o.line_search_fn() || *o.line_search_fn() == kStrongWolfe, "LBFGS",
              "invalid line_search_fn '", o.line_search_fn().value_or(""), "': only 'strong_wolfe' is supported");
}

std::unique_ptr<OptimizerParamState> LBFGS::make_param_state() const { return std::make_unique<LBFGSParamState>(); }

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const Tensor& p : param_groups_.at(0).params()) {
    views.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, p.scalar_type()));
  }
  return cat(views, 0);
}

int64_t LBFGS::numel() const {
  int64_t total = 0;
  for (const Tensor& p : param_groups_.at(0).params()) total += p.numel();
  return total;
}

void LBFGS::add_grad(double step_size, const Tensor& update) {
  int64_t offset = 0;
  for (Tensor& p : param_groups_.at(0).params()) {
    const int64_t n = p.numel();
    p.add_(update.slice(0, offset, offset + n).view_as(p), step_size);
    offset += n;
  }
}

void LBFGS::set_param(const std::vector<Tensor>& values) {
  auto& params = param_groups_.at(0).params();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

std::vector<Tensor> LBFGS::clone_param() const {
  std::vector<Tensor> out;
  for (const Tensor& p : param_groups_.at(0).params()) out.push_back(p.clone());
  return out;
}

std::tuple<double, Tensor> LBFGS::directional_evaluate(const LossClosure& closure, const std::vector<Tensor>& x,
                                                       double t, const Tensor& d) {
  add_grad(t, d);
  const double loss = val(run_closure(closure));
  Tensor flat_grad = gather_flat_grad();
  set_param(x);
  return {loss, flat_grad};
}

Tensor LBFGS::step(LossClosure closure) {
  refuse_graph_capture("LBFGS");
  NoGradGuard no_grad;
  EMBER_CHECK(closure != nullptr, "LBFGS", "LBFGS requires a closure function");
  EMBER_CHECK(param_groups_.size() == 1, "LBFGS", "LBFGS doesn't support per-parameter options (parameter groups)");
  // Constructed without parameters, it gets them from add_parameters before its first step.
  EMBER_CHECK(!param_groups_[0].params().empty(), "LBFGS", "step() with an empty parameter list");
  const auto& options = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  const double lr = options.lr();
  const int64_t max_iter = options.max_iter();
  const int64_t max_eval = options.max_eval().value_or(max_iter * 5 / 4);
  const double tolerance_grad = options.tolerance_grad();
  const double tolerance_change = options.tolerance_change();
  const auto history_size = static_cast<size_t>(options.history_size());

  // LBFGS's state is global; it lives under the first parameter, as in libtorch.
  auto& state = state_for<LBFGSParamState>(param_groups_[0].params()[0]);
  Tensor orig_loss = run_closure(closure);
  EMBER_CHECK(orig_loss.defined() && orig_loss.numel() == 1, "LBFGS", "the closure must return the loss as one number");
  double loss = val(orig_loss);
  int64_t current_evals = 1;
  state.func_evals(state.func_evals() + 1);
  Tensor flat_grad = gather_flat_grad();
  EMBER_CHECK(!state.d().defined() || state.d().numel() == numel(), "LBFGS", "the state holds vectors of ",
              state.d().numel(), " elements but the parameters have ", numel());
  bool opt_cond = val(flat_grad.abs().max()) <= tolerance_grad;
  if (opt_cond) return orig_loss;

  Tensor& d = state.d();
  double& t = state.t();
  auto& old_dirs = state.old_dirs();
  auto& old_stps = state.old_stps();
  auto& ro = state.ro();
  Tensor& H_diag = state.H_diag();
  Tensor& prev_flat_grad = state.prev_flat_grad();
  double& prev_loss = state.prev_loss();

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    n_iter += 1;
    state.n_iter(state.n_iter() + 1);

    // compute the descent direction
    if (state.n_iter() == 1) {
      d = flat_grad.neg();
      H_diag = ones({}, flat_grad.scalar_type());
      old_dirs = {};
      old_stps = {};
      ro = {};
    } else {
      // update the memory with the last step s and gradient change y
      Tensor y = flat_grad.sub(prev_flat_grad);
      Tensor s = d.mul(t);
      Tensor ys = inner(y, s);
      if (val(ys) > 1e-10) {
        if (old_dirs.size() == history_size) {
          old_dirs.pop_front();
          old_stps.pop_front();
          ro.pop_front();
        }
        old_dirs.push_back(y);
        old_stps.push_back(s);
        ro.push_back(1. / ys);
        H_diag = ys / inner(y, y);  // scale of the initial Hessian approximation
      }
      // two-loop recursion: the approximate inverse Hessian times the gradient
      const size_t num_old = old_dirs.size();
      if (!state.al()) state.al(std::vector<Tensor>(history_size));
      auto& al = *state.al();
      Tensor q = flat_grad.neg();
      for (size_t i = num_old; i-- > 0;) {
        al.at(i) = inner(old_stps[i], q) * ro[i];
        q.add_(old_dirs[i], -val(al[i]));
      }
      Tensor r = q.mul(H_diag);
      d = r;  // r is d: the updates below move d
      for (size_t i = 0; i < num_old; ++i) {
        Tensor be_i = inner(old_dirs[i], r) * ro[i];
        r.add_(old_stps[i], val(al[i] - be_i));
      }
    }

    if (!prev_flat_grad.defined()) {
      prev_flat_grad = flat_grad.clone();
    } else {
      prev_flat_grad.copy_(flat_grad);
    }
    prev_loss = loss;

    // step length: the first iteration scales by the gradient's size
    if (state.n_iter() == 1) {
      t = std::min(1., 1. / val(flat_grad.abs().sum())) * lr;
    } else {
      t = lr;
    }
    Tensor gtd = inner(flat_grad, d);  // directional derivative
    if (val(gtd) > -tolerance_change) break;

    int64_t ls_func_evals = 0;
    if (options.line_search_fn()) {
      const std::vector<Tensor> x_init = clone_param();
      auto obj_func = [&](const std::vector<Tensor>& x, double step, const Tensor& direction) {
        return directional_evaluate(closure, x, step, direction);
      };
      LineSearchResult result = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd);
      loss = result.loss;
      flat_grad = result.flat_grad;
      t = result.t;
      ls_func_evals = result.func_evals;
      add_grad(t, d);
      opt_cond = val(flat_grad.abs().max()) <= tolerance_grad;
    } else {
      // fixed step; re-evaluate except on the last iteration
      add_grad(t, d);
      if (n_iter != max_iter) {
        loss = val(run_closure(closure));
        flat_grad = gather_flat_grad();
        opt_cond = val(flat_grad.abs().max()) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    state.func_evals(state.func_evals() + ls_func_evals);

    // stopping conditions
    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (val(d.mul(t).abs().max()) <= tolerance_change) break;  // lack of progress
    if (std::abs(loss - prev_loss) < tolerance_change) break;
  }
  return orig_loss;
}

}  // namespace ember::optim
