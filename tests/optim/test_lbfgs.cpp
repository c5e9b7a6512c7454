// LBFGS: the Rosenbrock function's minimum (1, 1) reached with the strong Wolfe line search;
// every step of both variants (line search, fixed step) matching a float64 reference of
// PyTorch's algorithm written here over plain doubles; options, errors and state_dict resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <optional>

#include <unistd.h>

#include <filesystem>

#include "core/testing.h"
#include "ember/ember.h"
#include "ember/io/checkpoint.h"

namespace ember {
namespace {

namespace optim = ember::optim;
using testutil::all_close;
using testutil::throws_error;
using testutil::values;
using Vec = std::vector<double>;
// f(x) and its gradient at x.
using Objective = std::function<double(const Vec& x, Vec& grad)>;

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
double abs_max(const Vec& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}
double abs_sum(const Vec& a) {
  double s = 0;
  for (double v : a) s += std::abs(v);
  return s;
}
Vec axpy(const Vec& x, double a, const Vec& y) {  // x + a * y
  Vec out = x;
  for (size_t i = 0; i < x.size(); ++i) out[i] += a * y[i];
  return out;
}

// ---- the reference: torch/optim/lbfgs.py over doubles -------------------------------------------

double cubic_min(double x1, double f1, double g1, double x2, double f2, double g2,
                 std::optional<std::pair<double, double>> bounds = {}) {
  const double lo = bounds ? bounds->first : std::min(x1, x2), hi = bounds ? bounds->second : std::max(x1, x2);
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

struct ReferenceLBFGS {
  double lr = 1;
  int max_iter = 20, max_eval = 25;
  double tolerance_grad = 1e-7, tolerance_change = 1e-9;
  size_t history_size = 100;
  bool strong_wolfe = false;
  Objective f;
  Vec x;
  // state
  int func_evals = 0, n_iter = 0;
  double t = 0, prev_loss = 0, h_diag = 1;
  Vec d, prev_flat_grad;
  std::deque<Vec> old_dirs, old_stps;
  std::deque<double> ro;

  double evaluate(const Vec& at, Vec& grad) const { return f(at, grad); }

  // Returns (loss, grad, t, evaluations) of the strong Wolfe search from x along d.
  std::tuple<double, Vec, double, int> line_search(double t0, double f0, const Vec& g0, double gtd) const {
    const double c1 = 1e-4, c2 = 0.9, tol = 1e-9;
    const int max_ls = 25;
    double step = t0;
    const double d_norm = abs_max(d);
    Vec g_new;
    double f_new = evaluate(axpy(x, step, d), g_new);
    int evals = 1;
    double gtd_new = dot(g_new, d);
    double t_prev = 0, f_prev = f0, gtd_prev = gtd;
    Vec g_prev = g0;
    bool done = false;
    int ls_iter = 0;
    std::vector<double> br, br_f, br_gtd;
    std::vector<Vec> br_g;
    while (ls_iter < max_ls) {
      if (f_new > f0 + c1 * step * gtd || (ls_iter > 1 && f_new >= f_prev)) {
        br = {t_prev, step}, br_f = {f_prev, f_new}, br_g = {g_prev, g_new}, br_gtd = {gtd_prev, gtd_new};
        break;
      }
      if (std::abs(gtd_new) <= -c2 * gtd) {
        br = {step, step}, br_f = {f_new, f_new}, br_g = {g_new, g_new};
        done = true;
        break;
      }
      if (gtd_new >= 0) {
        br = {t_prev, step}, br_f = {f_prev, f_new}, br_g = {g_prev, g_new}, br_gtd = {gtd_prev, gtd_new};
        break;
      }
      const double next = cubic_min(t_prev, f_prev, gtd_prev, step, f_new, gtd_new,
                                    std::make_pair(step + 0.01 * (step - t_prev), step * 10));
      t_prev = step, f_prev = f_new, g_prev = g_new, gtd_prev = gtd_new;
      step = next;
      f_new = evaluate(axpy(x, step, d), g_new);
      evals += 1;
      gtd_new = dot(g_new, d);
      ls_iter += 1;
    }
    if (ls_iter == max_ls) br = {0, step}, br_f = {f0, f_new}, br_g = {g0, g_new};
    bool insufficient = false;
    size_t low = br_f[0] <= br_f[1] ? 0 : 1, high = 1 - low;
    while (!done && ls_iter < max_ls) {
      step = cubic_min(br[0], br_f[0], br_gtd[0], br[1], br_f[1], br_gtd[1]);
      const double bmax = std::max(br[0], br[1]), bmin = std::min(br[0], br[1]), eps = 0.1 * (bmax - bmin);
      if (std::min(bmax - step, step - bmin) < eps) {
        if (insufficient || step >= bmax || step <= bmin) {
          step = std::abs(step - bmax) < std::abs(step - bmin) ? bmax - eps : bmin + eps;
          insufficient = false;
        } else {
          insufficient = true;
        }
      } else {
        insufficient = false;
      }
      f_new = evaluate(axpy(x, step, d), g_new);
      evals += 1;
      gtd_new = dot(g_new, d);
      ls_iter += 1;
      if (f_new > f0 + c1 * step * gtd || f_new >= br_f[low]) {
        br[high] = step, br_f[high] = f_new, br_g[high] = g_new, br_gtd[high] = gtd_new;
        low = br_f[0] <= br_f[1] ? 0 : 1, high = 1 - low;
      } else {
        if (std::abs(gtd_new) <= -c2 * gtd) {
          done = true;
        } else if (gtd_new * (br[high] - br[low]) >= 0) {
          br[high] = br[low], br_f[high] = br_f[low], br_g[high] = br_g[low], br_gtd[high] = br_gtd[low];
        }
        br[low] = step, br_f[low] = f_new, br_g[low] = g_new, br_gtd[low] = gtd_new;
      }
      if (std::abs(br[1] - br[0]) * d_norm < tol) break;
    }
    return {br_f[low], br_g[low], br[low], evals};
  }

  double step() {
    Vec flat_grad;
    const double orig_loss = evaluate(x, flat_grad);
    double loss = orig_loss;
    int current_evals = 1;
    func_evals += 1;
    bool opt_cond = abs_max(flat_grad) <= tolerance_grad;
    if (opt_cond) return orig_loss;
    for (int iter = 1; iter <= max_iter; ++iter) {
      n_iter += 1;
      if (n_iter == 1) {
        d = axpy(Vec(flat_grad.size(), 0.0), -1, flat_grad);
        h_diag = 1;
        old_dirs.clear(), old_stps.clear(), ro.clear();
      } else {
        const Vec y = axpy(flat_grad, -1, prev_flat_grad);
        const Vec s = axpy(Vec(d.size(), 0.0), t, d);
        const double ys = dot(y, s);
        if (ys > 1e-10) {
          if (old_dirs.size() == history_size) old_dirs.pop_front(), old_stps.pop_front(), ro.pop_front();
          old_dirs.push_back(y), old_stps.push_back(s), ro.push_back(1. / ys);
          h_diag = ys / dot(y, y);
        }
        std::vector<double> al(old_dirs.size());
        Vec q = axpy(Vec(flat_grad.size(), 0.0), -1, flat_grad);
        for (size_t i = old_dirs.size(); i-- > 0;) {
          al[i] = dot(old_stps[i], q) * ro[i];
          q = axpy(q, -al[i], old_dirs[i]);
        }
        d = axpy(Vec(q.size(), 0.0), h_diag, q);
        for (size_t i = 0; i < old_dirs.size(); ++i) d = axpy(d, al[i] - dot(old_dirs[i], d) * ro[i], old_stps[i]);
      }
      prev_flat_grad = flat_grad;
      prev_loss = loss;
      t = n_iter == 1 ? std::min(1., 1. / abs_sum(flat_grad)) * lr : lr;
      const double gtd = dot(flat_grad, d);
      if (gtd > -tolerance_change) break;
      int ls_evals = 0;
      if (strong_wolfe) {
        std::tie(loss, flat_grad, t, ls_evals) = line_search(t, loss, flat_grad, gtd);
        x = axpy(x, t, d);
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
      } else {
        x = axpy(x, t, d);
        if (iter != max_iter) {
          loss = evaluate(x, flat_grad);
          opt_cond = abs_max(flat_grad) <= tolerance_grad;
          ls_evals = 1;
        }
      }
      current_evals += ls_evals;
      func_evals += ls_evals;
      if (iter == max_iter || current_evals >= max_eval || opt_cond) break;
      if (abs_max(d) * std::abs(t) <= tolerance_change) break;
      if (std::abs(loss - prev_loss) < tolerance_change) break;
    }
    return orig_loss;
  }
};

// ---- objectives ---------------------------------------------------------------------------------

double rosenbrock(const Vec& x, Vec& grad) {
  const double a = 1 - x[0], b = x[1] - x[0] * x[0];
  grad = {-2 * a - 400 * x[0] * b, 200 * b};
  return a * a + 100 * b * b;
}

// 0.5 x^T A x - c^T x with A symmetric positive definite (3 x 3).
const double kA[3][3] = {{4, 1, 0.5}, {1, 3, -0.4}, {0.5, -0.4, 2}};
const double kC[3] = {1, -2, 0.5};
double quadratic(const Vec& x, Vec& grad) {
  grad.assign(3, 0);
  double value = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) grad[i] += kA[i][j] * x[j];
    value += 0.5 * x[i] * grad[i] - kC[i] * x[i];
    grad[i] -= kC[i];
  }
  return value;
}

// The same objectives on ember tensors, over parameters split in two tensors.
Tensor rosenbrock_loss(const Tensor& x, const Tensor& y) {
  Tensor a = 1 - x, b = y - x * x;
  return (a * a + b * b * 100).sum();
}

Tensor quadratic_loss(const Tensor& head, const Tensor& tail) {
  Tensor v = cat({head, tail});
  Tensor a = testutil::make({4, 1, 0.5, 1, 3, -0.4, 0.5, -0.4, 2}, {3, 3}, kFloat64);
  Tensor c = testutil::make({1, -2, 0.5}, {3}, kFloat64);
  return (v * a.matmul(v)).sum() * 0.5 - (c * v).sum();
}

struct Problem {
  std::vector<Tensor> params;
  std::function<Tensor()> loss;
};

Problem rosenbrock_problem(double x0, double y0) {
  Tensor x = testutil::make({x0}, {1}, kFloat64).requires_grad_();
  Tensor y = testutil::make({y0}, {1}, kFloat64).requires_grad_();
  return {{x, y}, [x, y] { return rosenbrock_loss(x, y); }};
}

Problem quadratic_problem() {
  Tensor head = testutil::make({1.5, -0.5}, {2}, kFloat64).requires_grad_();
  Tensor tail = testutil::make({2.0}, {1}, kFloat64).requires_grad_();
  return {{head, tail}, [head, tail] { return quadratic_loss(head, tail); }};
}

Vec flat_values(const std::vector<Tensor>& params) {
  Vec out;
  for (const Tensor& p : params)
    for (double v : values(p)) out.push_back(v);
  return out;
}

optim::LossClosure closure_of(optim::Optimizer& opt, const Problem& problem) {
  return [&opt, &problem] {
    opt.zero_grad();
    Tensor loss = problem.loss();
    loss.backward();
    return loss;
  };
}

// Runs `steps` step() calls of ember's LBFGS and of the reference, comparing every step.
void expect_matches_reference(Problem problem, ReferenceLBFGS reference, optim::LBFGSOptions options, int steps,
                              const std::string& what) {
  optim::LBFGS opt(problem.params, options);
  auto closure = closure_of(opt, problem);
  reference.x = flat_values(problem.params);
  for (int s = 0; s < steps; ++s) {
    const double loss = opt.step(closure).item<double>();
    const double expected_loss = reference.step();
    ASSERT_NEAR(loss, expected_loss, 1e-9 * (1 + std::abs(expected_loss))) << what << " step " << s;
    const Vec got = flat_values(problem.params);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], reference.x[i], 1e-9 * (1 + std::abs(reference.x[i]))) << what << " step " << s << " x" << i;
    const auto& state = static_cast<const optim::LBFGSParamState&>(*opt.state().begin()->second);
    EXPECT_EQ(state.func_evals(), reference.func_evals) << what << " step " << s;
    EXPECT_EQ(state.n_iter(), reference.n_iter) << what << " step " << s;
  }
}

TEST(LBFGS, DefaultsAreLibtorchs) {
  optim::LBFGSOptions o;
  EXPECT_DOUBLE_EQ(o.lr(), 1);
  EXPECT_EQ(o.max_iter(), 20);
  EXPECT_FALSE(o.max_eval().has_value());
  EXPECT_DOUBLE_EQ(o.tolerance_grad(), 1e-7);
  EXPECT_DOUBLE_EQ(o.tolerance_change(), 1e-9);
  EXPECT_EQ(o.history_size(), 100);
  EXPECT_FALSE(o.line_search_fn().has_value());
  Problem problem = quadratic_problem();
  optim::LBFGS opt(problem.params, optim::LBFGSOptions().max_iter(8));
  EXPECT_EQ(*static_cast<const optim::LBFGSOptions&>(opt.param_groups()[0].options()).max_eval(), 10);  // 8 * 5 / 4
}

TEST(LBFGS, StrongWolfeReachesTheRosenbrockMinimum) {
  // With the default tolerance_change (1e-9) a step ends once the directional derivative is
  // above -1e-9, near loss 1e-10, as in PyTorch: tighter tolerances go to the minimum.
  Problem problem = rosenbrock_problem(-1.5, 2.0);
  optim::LBFGS opt(problem.params,
                   optim::LBFGSOptions(1).tolerance_change(1e-20).tolerance_grad(1e-12).line_search_fn("strong_wolfe"));
  auto closure = closure_of(opt, problem);
  for (int s = 0; s < 5; ++s) opt.step(closure);
  EXPECT_LT(problem.loss().item<double>(), 1e-20);
  EXPECT_NEAR(values(problem.params[0])[0], 1.0, 1e-10);
  EXPECT_NEAR(values(problem.params[1])[0], 1.0, 1e-10);
}

TEST(LBFGS, StrongWolfeMatchesTheReferenceStepByStep) {
  ReferenceLBFGS reference;
  reference.f = rosenbrock;
  reference.strong_wolfe = true;
  expect_matches_reference(rosenbrock_problem(-1.5, 2.0), reference, optim::LBFGSOptions(1).line_search_fn("strong_wolfe"),
                           4, "rosenbrock");
  // A short history (entries dropped), fewer iterations per step, a smaller lr.
  reference.history_size = 3;
  reference.max_iter = 5;
  reference.max_eval = 6;
  reference.lr = 0.5;
  expect_matches_reference(
      rosenbrock_problem(0.3, -0.8), reference,
      optim::LBFGSOptions(0.5).history_size(3).max_iter(5).line_search_fn("strong_wolfe"), 8, "short history");
}

TEST(LBFGS, FixedStepMatchesTheReferenceStepByStep) {
  ReferenceLBFGS reference;
  reference.f = quadratic;
  reference.lr = 0.8;
  reference.history_size = 2;
  reference.max_iter = 4;
  reference.max_eval = 5;
  expect_matches_reference(quadratic_problem(), reference, optim::LBFGSOptions(0.8).history_size(2).max_iter(4), 6,
                           "quadratic");
  // The minimum of the quadratic solves A x = c.
  Problem problem = quadratic_problem();
  optim::LBFGS opt(problem.params, optim::LBFGSOptions(1));
  auto closure = closure_of(opt, problem);
  for (int s = 0; s < 5; ++s) opt.step(closure);
  const Vec x = flat_values(problem.params);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(kA[i][0] * x[0] + kA[i][1] * x[1] + kA[i][2] * x[2], kC[i], 1e-7) << i;
}

TEST(LBFGS, ToleranceGradStopsAtOnce) {
  Problem problem = rosenbrock_problem(1.0, 1.0);  // the gradient is zero
  optim::LBFGS opt(problem.params, optim::LBFGSOptions(1));
  opt.step(closure_of(opt, problem));
  const auto& state = static_cast<const optim::LBFGSParamState&>(*opt.state().begin()->second);
  EXPECT_EQ(state.func_evals(), 1);
  EXPECT_EQ(state.n_iter(), 0);
}

TEST(LBFGS, StateDictResumesBitIdentically) {
  auto make = [](Problem& problem) {
    return std::make_unique<optim::LBFGS>(problem.params,
                                          optim::LBFGSOptions(1).max_iter(3).history_size(4).line_search_fn("strong_wolfe"));
  };
  Problem uninterrupted = rosenbrock_problem(-1.2, 1.0);
  auto opt = make(uninterrupted);
  for (int s = 0; s < 3; ++s) opt->step(closure_of(*opt, uninterrupted));
  const optim::OptimizerStateDict saved = opt->state_dict();
  EXPECT_EQ(saved.scalars.at("param_groups.0.line_search_fn"), 1);
  EXPECT_EQ(saved.tensors.count("state.0.old_dirs.0"), 1u);
  EXPECT_EQ(saved.tensors.count("state.1.d"), 0u);  // the state lives under parameter 0
  const Vec at_save = flat_values(uninterrupted.params);
  for (int s = 0; s < 3; ++s) opt->step(closure_of(*opt, uninterrupted));

  Problem resumed = rosenbrock_problem(at_save[0], at_save[1]);
  auto other = std::make_unique<optim::LBFGS>(resumed.params, optim::LBFGSOptions(0.1));
  other->load_state_dict(saved);
  const auto& options = static_cast<const optim::LBFGSOptions&>(other->param_groups()[0].options());
  EXPECT_EQ(options.line_search_fn(), std::optional<std::string>("strong_wolfe"));
  EXPECT_EQ(options.max_iter(), 3);
  for (int s = 0; s < 3; ++s) other->step(closure_of(*other, resumed));
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(ember::equal(uninterrupted.params[k], resumed.params[k])) << k;
}

// A linear regression trained by LBFGS: the checkpoint file carries the flat history
// (deques of vectors, 0-dim ro entries) and the run continues bit for bit.
struct Regression {
  Regression() {
    manual_seed(3);
    model = nn::Linear(3, 1);
    optimizer = std::make_unique<optim::LBFGS>(model->parameters(),
                                               optim::LBFGSOptions(1).max_iter(4).history_size(3).line_search_fn("strong_wolfe"));
  }
  void train(int steps) {
    const Tensor x = testutil::make({1, 2, 0.5, -1, 0.3, 2, 0.7, -0.4, 1.1, 0.2, 0.9, -1.5}, {4, 3}, kFloat32);
    const Tensor y = testutil::make({1.5, -0.5, 0.8, 0.1}, {4, 1}, kFloat32);
    for (int s = 0; s < steps; ++s) {
      optimizer->step([&] {
        optimizer->zero_grad();
        Tensor loss = nn::functional::mse_loss(model->forward(x), y);
        loss.backward();
        return loss;
      });
    }
  }
  nn::Linear model{nullptr};
  std::unique_ptr<optim::LBFGS> optimizer;
};

TEST(LBFGS, CheckpointFileResumesBitIdentically) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ember_lbfgs_" + std::to_string(getpid()) + ".safetensors")).string();
  Regression straight;
  straight.train(4);
  Regression first_half;
  first_half.train(2);
  io::save_checkpoint(path, *first_half.model, *first_half.optimizer, 2);
  Regression resumed;
  EXPECT_EQ(io::load_checkpoint(path, *resumed.model, *resumed.optimizer), 2);
  resumed.train(2);
  std::filesystem::remove(path);
  const auto expected = straight.model->named_parameters(), actual = resumed.model->named_parameters();
  for (const auto& item : expected) EXPECT_TRUE(ember::equal(actual[item.key()], item.value())) << item.key();
  const auto& state = static_cast<const optim::LBFGSParamState&>(*resumed.optimizer->state().begin()->second);
  EXPECT_FALSE(state.old_dirs().empty());
}

TEST(LBFGS, Errors) {
  Problem problem = quadratic_problem();
  EXPECT_TRUE(throws_error([&] { optim::LBFGS(problem.params, optim::LBFGSOptions(-1)); }, {"[LBFGS]", "learning rate"}));
  EXPECT_TRUE(throws_error([&] { optim::LBFGS(problem.params, optim::LBFGSOptions().history_size(0)); },
                           {"[LBFGS]", "history_size"}));
  EXPECT_TRUE(throws_error([&] { optim::LBFGS(problem.params, optim::LBFGSOptions().max_iter(0)); }, {"[LBFGS]", "max_iter"}));
  EXPECT_TRUE(throws_error([&] { optim::LBFGS(problem.params, optim::LBFGSOptions().tolerance_grad(-1)); },
                           {"[LBFGS]", "tolerance_grad"}));
  EXPECT_TRUE(throws_error([&] { optim::LBFGS(problem.params, optim::LBFGSOptions().line_search_fn("backtracking")); },
                           {"[LBFGS]", "line_search_fn", "backtracking", "strong_wolfe"}));
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{problem.params[0]});
  groups.emplace_back(std::vector<Tensor>{problem.params[1]});
  EXPECT_TRUE(throws_error([&] { optim::LBFGS(groups, optim::LBFGSOptions()); }, {"[LBFGS]", "parameter groups"}));
  optim::LBFGS opt(problem.params, optim::LBFGSOptions());
  EXPECT_TRUE(throws_error([&] { opt.step(); }, {"[LBFGS]", "requires a closure"}));
}

}  // namespace
}  // namespace ember
