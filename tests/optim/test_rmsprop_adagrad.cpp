// RMSprop and Adagrad: 20 steps of every option against their update formulas written here in
// plain doubles (float64), parameter groups with their own options, invalid options named in
// the error, and state_dict save -> load -> continue being bit-identical.
#include <gtest/gtest.h>

#include <cmath>

#include "optim/optimizer_testing.h"

namespace ember {
namespace {

namespace optim = ember::optim;
using namespace optim_testing;
using testutil::throws_error;

constexpr double kTolerance = 1e-10;

Params zeros_like_params() {
  Params z = initial_values();
  for (auto& row : z) std::fill(row.begin(), row.end(), 0.0);
  return z;
}

// ---- RMSprop ---------------------------------------------------------------------------------

struct RMSpropConfig {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered;
};

Params rmsprop_reference(const RMSpropConfig& c) {
  Params p = initial_values(), square_avg = zeros_like_params(), grad_avg = square_avg, buf = square_avg;
  for (int t = 0; t < kSteps; ++t) {
    for (size_t k = 0; k < p.size(); ++k) {
      for (size_t i = 0; i < p[k].size(); ++i) {
        const double g = gradient_of(p[k][i], k, i, t) + c.weight_decay * p[k][i];
        square_avg[k][i] = c.alpha * square_avg[k][i] + (1 - c.alpha) * g * g;
        double avg;
        if (c.centered) {
          grad_avg[k][i] = c.alpha * grad_avg[k][i] + (1 - c.alpha) * g;
          avg = std::sqrt(square_avg[k][i] - grad_avg[k][i] * grad_avg[k][i]) + c.eps;
        } else {
          avg = std::sqrt(square_avg[k][i]) + c.eps;
        }
        if (c.momentum > 0) {
          buf[k][i] = c.momentum * buf[k][i] + g / avg;
          p[k][i] -= c.lr * buf[k][i];
        } else {
          p[k][i] -= c.lr * g / avg;
        }
      }
    }
  }
  return p;
}

optim::RMSpropOptions options_of(const RMSpropConfig& c) {
  return optim::RMSpropOptions(c.lr)
      .alpha(c.alpha)
      .eps(c.eps)
      .weight_decay(c.weight_decay)
      .momentum(c.momentum)
      .centered(c.centered);
}

TEST(RMSprop, DefaultsAreLibtorchs) {
  optim::RMSpropOptions o;
  EXPECT_DOUBLE_EQ(o.lr(), 1e-2);
  EXPECT_DOUBLE_EQ(o.alpha(), 0.99);
  EXPECT_DOUBLE_EQ(o.eps(), 1e-8);
  EXPECT_DOUBLE_EQ(o.weight_decay(), 0);
  EXPECT_DOUBLE_EQ(o.momentum(), 0);
  EXPECT_FALSE(o.centered());
}

TEST(RMSprop, EveryOptionMatchesTheReference) {
  const std::vector<RMSpropConfig> configs = {
      {0.01, 0.99, 1e-8, 0, 0, false},   {0.02, 0.9, 1e-8, 0, 0, false},   {0.01, 0.99, 1e-2, 0, 0, false},
      {0.01, 0.99, 1e-8, 0.1, 0, false}, {0.005, 0.99, 1e-8, 0, 0.9, false}, {0.01, 0.95, 1e-8, 0, 0, true},
      {0.003, 0.8, 1e-6, 0.05, 0.5, true}, {0.01, 0.0, 1e-8, 0, 0, false},
  };
  for (const auto& c : configs) {
    auto params = make_params();
    optim::RMSprop opt(params, options_of(c));
    run_steps(opt, params, 0, kSteps);
    expect_params(params, rmsprop_reference(c),
                  "lr=" + std::to_string(c.lr) + " alpha=" + std::to_string(c.alpha) + " eps=" + std::to_string(c.eps) +
                      " wd=" + std::to_string(c.weight_decay) + " momentum=" + std::to_string(c.momentum) +
                      " centered=" + std::to_string(c.centered),
                  kTolerance);
  }
}

TEST(RMSprop, StateHoldsOnlyTheBuffersItsOptionsNeed) {
  auto params = make_params();
  optim::RMSprop plain(params, optim::RMSpropOptions(0.01));
  run_steps(plain, params, 0, 2);
  auto dict = plain.state_dict();
  EXPECT_EQ(dict.tensors.count("state.0.square_avg"), 1u);
  EXPECT_EQ(dict.tensors.count("state.0.momentum_buffer"), 0u);
  EXPECT_EQ(dict.tensors.count("state.0.grad_avg"), 0u);
  EXPECT_DOUBLE_EQ(dict.scalars.at("state.1.step"), 2);
  for (const char* key : {"lr", "alpha", "eps", "weight_decay", "momentum", "centered"})
    EXPECT_EQ(dict.scalars.count(std::string("param_groups.0.") + key), 1u) << key;
}

TEST(RMSprop, InvalidOptionsNameTheOption) {
  auto params = make_params();
  EXPECT_TRUE(throws_error([&] { optim::RMSprop(params, optim::RMSpropOptions(-0.1)); }, {"[RMSprop]", "learning rate", "-0.1"}));
  EXPECT_TRUE(throws_error([&] { optim::RMSprop(params, optim::RMSpropOptions().alpha(-0.5)); }, {"[RMSprop]", "alpha", "-0.5"}));
  EXPECT_TRUE(throws_error([&] { optim::RMSprop(params, optim::RMSpropOptions().eps(-1e-8)); }, {"[RMSprop]", "epsilon"}));
  EXPECT_TRUE(throws_error([&] { optim::RMSprop(params, optim::RMSpropOptions().momentum(-1)); }, {"[RMSprop]", "momentum"}));
  EXPECT_TRUE(throws_error([&] { optim::RMSprop(params, optim::RMSpropOptions().weight_decay(-1)); },
                           {"[RMSprop]", "weight_decay"}));
}

// ---- Adagrad ---------------------------------------------------------------------------------

struct AdagradConfig {
  double lr, lr_decay, weight_decay, initial_accumulator_value, eps;
};

Params adagrad_reference(const AdagradConfig& c) {
  Params p = initial_values(), sum = zeros_like_params();
  for (auto& row : sum) std::fill(row.begin(), row.end(), c.initial_accumulator_value);
  for (int t = 1; t <= kSteps; ++t) {
    const double clr = c.lr / (1 + (t - 1) * c.lr_decay);
    for (size_t k = 0; k < p.size(); ++k) {
      for (size_t i = 0; i < p[k].size(); ++i) {
        const double g = gradient_of(p[k][i], k, i, t - 1) + c.weight_decay * p[k][i];
        sum[k][i] += g * g;
        p[k][i] -= clr * g / (std::sqrt(sum[k][i]) + c.eps);
      }
    }
  }
  return p;
}

optim::AdagradOptions options_of(const AdagradConfig& c) {
  return optim::AdagradOptions(c.lr)
      .lr_decay(c.lr_decay)
      .weight_decay(c.weight_decay)
      .initial_accumulator_value(c.initial_accumulator_value)
      .eps(c.eps);
}

TEST(Adagrad, DefaultsAreLibtorchs) {
  optim::AdagradOptions o;
  EXPECT_DOUBLE_EQ(o.lr(), 1e-2);
  EXPECT_DOUBLE_EQ(o.lr_decay(), 0);
  EXPECT_DOUBLE_EQ(o.weight_decay(), 0);
  EXPECT_DOUBLE_EQ(o.initial_accumulator_value(), 0);
  EXPECT_DOUBLE_EQ(o.eps(), 1e-10);
}

TEST(Adagrad, EveryOptionMatchesTheReference) {
  const std::vector<AdagradConfig> configs = {
      {0.1, 0, 0, 0, 1e-10}, {0.1, 0.05, 0, 0, 1e-10}, {0.1, 0, 0.1, 0, 1e-10},
      {0.1, 0, 0, 0.5, 1e-10}, {0.1, 0, 0, 0, 1e-2},   {0.3, 0.01, 0.05, 0.2, 1e-6},
  };
  for (const auto& c : configs) {
    auto params = make_params();
    optim::Adagrad opt(params, options_of(c));
    // State is made at construction: the accumulator starts at initial_accumulator_value.
    EXPECT_EQ(opt.state().size(), params.size());
    run_steps(opt, params, 0, kSteps);
    expect_params(params, adagrad_reference(c),
                  "lr=" + std::to_string(c.lr) + " lr_decay=" + std::to_string(c.lr_decay) +
                      " wd=" + std::to_string(c.weight_decay) + " init=" + std::to_string(c.initial_accumulator_value) +
                      " eps=" + std::to_string(c.eps),
                  kTolerance);
  }
}

TEST(Adagrad, EachGroupStartsFromItsOwnAccumulatorValue) {
  auto params = make_params();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{params[0]});
  groups.emplace_back(std::vector<Tensor>{params[1]},
                      std::make_unique<optim::AdagradOptions>(optim::AdagradOptions(0.05).initial_accumulator_value(1.0)));
  optim::Adagrad opt(groups, optim::AdagradOptions(0.1));
  run_steps(opt, params, 0, kSteps);
  const Params first = adagrad_reference({0.1, 0, 0, 0, 1e-10}), second = adagrad_reference({0.05, 0, 0, 1.0, 1e-10});
  EXPECT_TRUE(all_close(params[0], first[0], {kTolerance, kTolerance}));
  EXPECT_TRUE(all_close(params[1], second[1], {kTolerance, kTolerance}));
}

TEST(Adagrad, InvalidOptionsNameTheOption) {
  auto params = make_params();
  EXPECT_TRUE(throws_error([&] { optim::Adagrad(params, optim::AdagradOptions(-1)); }, {"[Adagrad]", "learning rate"}));
  EXPECT_TRUE(throws_error([&] { optim::Adagrad(params, optim::AdagradOptions().lr_decay(-0.1)); }, {"[Adagrad]", "lr_decay"}));
  EXPECT_TRUE(throws_error([&] { optim::Adagrad(params, optim::AdagradOptions().weight_decay(-0.1)); },
                           {"[Adagrad]", "weight_decay"}));
  EXPECT_TRUE(throws_error([&] { optim::Adagrad(params, optim::AdagradOptions().initial_accumulator_value(-1)); },
                           {"[Adagrad]", "initial_accumulator_value"}));
  EXPECT_TRUE(throws_error([&] { optim::Adagrad(params, optim::AdagradOptions().eps(-1)); }, {"[Adagrad]", "epsilon"}));
}

TEST(RMSpropAdagradStateDict, SaveLoadContinueIsBitIdentical) {
  expect_resume_is_bit_identical(
      [](const std::vector<Tensor>& p) {
        return std::make_unique<optim::RMSprop>(p, optim::RMSpropOptions(0.01).momentum(0.9).centered(true).weight_decay(0.01));
      },
      "RMSprop");
  expect_resume_is_bit_identical(
      [](const std::vector<Tensor>& p) {
        return std::make_unique<optim::Adagrad>(p, optim::AdagradOptions(0.1).lr_decay(0.01).initial_accumulator_value(0.1));
      },
      "Adagrad");
}

}  // namespace
}  // namespace ember
