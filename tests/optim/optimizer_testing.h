// Shared by the optimizer suites: parameters with a deterministic gradient sequence, the
// float64 references' starting point, and the save -> load -> continue check.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/testing.h"
#include "ember/ember.h"

namespace ember::optim_testing {

using testutil::all_close;
using testutil::values;
using Params = std::vector<std::vector<double>>;

inline constexpr int kSteps = 20;

// The gradient at step t of element i of parameter k: a quadratic pull towards a target
// plus a deterministic wiggle, so that every step's gradient differs.
inline double gradient_of(double p, size_t k, size_t i, int t) {
  const double target = 0.3 * static_cast<double>(i) - 0.2 * static_cast<double>(k);
  return 2 * (p - target) * (1 + 0.1 * static_cast<double>(k)) + 0.05 * std::sin(1.3 * t + static_cast<double>(i));
}

inline Params initial_values() { return {{0.5, -1.0, 2.0, 0.25, -0.75, 1.5}, {1.0, -2.0, 0.1, 0.0}}; }

inline std::vector<Tensor> make_params() {
  Params init = initial_values();
  return {testutil::make(init[0], {3, 2}, kFloat64).requires_grad_(), testutil::make(init[1], {4}, kFloat64).requires_grad_()};
}

inline void set_gradients(const std::vector<Tensor>& params, int t) {
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<double> g;
    const auto p = values(params[k]);
    for (size_t i = 0; i < p.size(); ++i) g.push_back(gradient_of(p[i], k, i, t));
    Tensor param = params[k];
    param.set_grad(testutil::make(g, params[k].sizes(), kFloat64));
  }
}

inline void expect_params(const std::vector<Tensor>& params, const Params& expected, const std::string& what,
                          double tolerance = 1e-6) {
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_TRUE(all_close(params[k], expected[k], {tolerance, tolerance})) << what;
}

// Runs `steps` steps from step `first` on params with `opt`.
inline void run_steps(optim::Optimizer& opt, const std::vector<Tensor>& params, int first, int steps) {
  for (int t = first; t < first + steps; ++t) {
    set_gradients(params, t);
    opt.step();
  }
}

inline std::vector<Tensor> clone_params(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

template <typename Make>
void expect_resume_is_bit_identical(Make make_optimizer, const std::string& what) {
  auto params = make_params();
  auto uninterrupted = make_optimizer(params);
  run_steps(*uninterrupted, params, 0, 10);
  optim::OptimizerStateDict saved = uninterrupted->state_dict();
  auto resumed_params = clone_params(params);
  run_steps(*uninterrupted, params, 10, 10);

  auto fresh_params = make_params();  // different state, replaced by the load
  for (size_t k = 0; k < fresh_params.size(); ++k) {
    NoGradGuard no_grad;
    fresh_params[k].copy_(resumed_params[k]);
  }
  auto resumed = make_optimizer(fresh_params);
  run_steps(*resumed, fresh_params, 0, 1);  // state that the load must replace
  {
    NoGradGuard no_grad;
    for (size_t k = 0; k < fresh_params.size(); ++k) fresh_params[k].copy_(resumed_params[k]);
  }
  resumed->load_state_dict(saved);
  run_steps(*resumed, fresh_params, 10, 10);
  for (size_t k = 0; k < params.size(); ++k) EXPECT_TRUE(ember::equal(params[k], fresh_params[k])) << what << " param " << k;
}

}  // namespace ember::optim_testing
