// SGD, Adam and AdamW: 20 steps of every option against the update formulas written here
// in plain doubles (float64, 1e-6), parameter groups, zero_grad, closures, validation, and
// state_dict save -> load -> continue being bit-identical to an uninterrupted run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "autograd/low_precision_copy.h"
#include "core/testing.h"
#include "cpu/capabilities.h"
#include "ember/detail/autocast_linear.h"
#include "ember/ember.h"
#include "optim/optimizer_testing.h"

namespace ember {
namespace {

namespace optim = ember::optim;
using testutil::all_close;
using testutil::throws_error;
using testutil::values;
using namespace optim_testing;

// ---- SGD -------------------------------------------------------------------------------------

struct SGDConfig {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

Params sgd_reference(const SGDConfig& c) {
  Params p = initial_values(), buf = p;
  for (int t = 0; t < kSteps; ++t) {
    for (size_t k = 0; k < p.size(); ++k) {
      for (size_t i = 0; i < p[k].size(); ++i) {
        double g = gradient_of(p[k][i], k, i, t);
        if (c.maximize) g = -g;
        g += c.weight_decay * p[k][i];
        if (c.momentum != 0) {
          buf[k][i] = t == 0 ? g : c.momentum * buf[k][i] + (1 - c.dampening) * g;
          g = c.nesterov ? g + c.momentum * buf[k][i] : buf[k][i];
        }
        p[k][i] -= c.lr * g;
      }
    }
  }
  return p;
}

TEST(SGD, EveryOptionMatchesTheReference) {
  const std::vector<SGDConfig> configs = {
      {0.1, 0, 0, 0, false, false},     {0.05, 0.9, 0, 0, false, false}, {0.05, 0.9, 0.3, 0, false, false},
      {0.05, 0.9, 0, 0, true, false},   {0.1, 0, 0, 0.1, false, false},  {0.02, 0.5, 0, 0, false, true},
      {0.03, 0.8, 0, 0.05, true, true},
  };
  for (const auto& c : configs) {
    auto params = make_params();
    optim::SGD opt(params, optim::SGDOptions(c.lr)
                               .momentum(c.momentum)
                               .dampening(c.dampening)
                               .weight_decay(c.weight_decay)
                               .nesterov(c.nesterov)
                               .maximize(c.maximize));
    for (int t = 0; t < kSteps; ++t) {
      set_gradients(params, t);
      opt.step();
    }
    expect_params(params, sgd_reference(c),
                  "lr=" + std::to_string(c.lr) + " momentum=" + std::to_string(c.momentum) + " dampening=" +
                      std::to_string(c.dampening) + " wd=" + std::to_string(c.weight_decay) +
                      " nesterov=" + std::to_string(c.nesterov) + " maximize=" + std::to_string(c.maximize));
  }
}

// ---- Adam / AdamW ------------------------------------------------------------------------------

struct AdamConfig {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
  bool capturable = false;  // the step count in a tensor (ember/graph.h); same formulas
};

Params adam_reference(const AdamConfig& c) {
  Params p = initial_values(), m = p, v = p, v_max = p;
  for (auto* state : {&m, &v, &v_max})
    for (auto& row : *state) std::fill(row.begin(), row.end(), 0.0);
  for (int t = 1; t <= kSteps; ++t) {
    for (size_t k = 0; k < p.size(); ++k) {
      for (size_t i = 0; i < p[k].size(); ++i) {
        double g = gradient_of(p[k][i], k, i, t - 1);
        if (c.maximize) g = -g;
        if (c.decoupled) {
          p[k][i] *= 1 - c.lr * c.weight_decay;
        } else {
          g += c.weight_decay * p[k][i];
        }
        m[k][i] += (1 - c.beta1) * (g - m[k][i]);
        v[k][i] = c.beta2 * v[k][i] + (1 - c.beta2) * g * g;
        const double bias_correction1 = 1 - std::pow(c.beta1, t);
        const double bias_correction2 = 1 - std::pow(c.beta2, t);
        v_max[k][i] = std::max(v_max[k][i], v[k][i]);
        const double second = c.amsgrad ? v_max[k][i] : v[k][i];
        const double denom = std::sqrt(second) / std::sqrt(bias_correction2) + c.eps;
        p[k][i] -= c.lr / bias_correction1 * m[k][i] / denom;
      }
    }
  }
  return p;
}

std::string describe(const AdamConfig& c) {
  return "lr=" + std::to_string(c.lr) + " betas=(" + std::to_string(c.beta1) + ", " + std::to_string(c.beta2) +
         ") eps=" + std::to_string(c.eps) + " wd=" + std::to_string(c.weight_decay) + " amsgrad=" +
         std::to_string(c.amsgrad) + " maximize=" + std::to_string(c.maximize) +
         " capturable=" + std::to_string(c.capturable);
}

TEST(Adam, EveryOptionMatchesTheReference) {
  const std::vector<AdamConfig> configs = {
      {0.01, 0.9, 0.999, 1e-8, 0, false, false, false},  {0.05, 0.8, 0.99, 1e-8, 0, false, false, false},
      {0.01, 0.9, 0.999, 1e-3, 0, false, false, false},  {0.01, 0.9, 0.999, 1e-8, 0.1, false, false, false},
      {0.02, 0.9, 0.999, 1e-8, 0, true, false, false},   {0.01, 0.9, 0.999, 1e-8, 0, false, true, false},
      {0.03, 0.7, 0.95, 1e-6, 0.05, true, true, false},  {0.01, 0.5, 0.999, 1e-8, 0, false, false, false},
      {0.01, 0.9, 0.999, 1e-8, 0.1, false, false, false, true}, {0.03, 0.7, 0.95, 1e-6, 0.05, true, true, false, true},
  };
  for (const auto& c : configs) {
    auto params = make_params();
    optim::Adam opt(params, optim::AdamOptions(c.lr)
                                .betas({c.beta1, c.beta2})
                                .eps(c.eps)
                                .weight_decay(c.weight_decay)
                                .amsgrad(c.amsgrad)
                                .maximize(c.maximize)
                                .capturable(c.capturable));
    for (int t = 0; t < kSteps; ++t) {
      set_gradients(params, t);
      opt.step();
    }
    expect_params(params, adam_reference(c), "Adam " + describe(c));
  }
}

TEST(AdamW, EveryOptionMatchesTheReference) {
  const std::vector<AdamConfig> configs = {
      {0.01, 0.9, 0.999, 1e-8, 1e-2, false, false, true},  {0.02, 0.9, 0.999, 1e-8, 0.3, false, false, true},
      {0.02, 0.8, 0.99, 1e-6, 0.1, true, false, true},     {0.01, 0.9, 0.999, 1e-8, 0.1, false, true, true},
      {0.01, 0.9, 0.999, 1e-8, 0, false, false, true},     {0.02, 0.8, 0.99, 1e-6, 0.1, true, false, true, true},
  };
  for (const auto& c : configs) {
    auto params = make_params();
    optim::AdamW opt(params, optim::AdamWOptions(c.lr)
                                 .betas({c.beta1, c.beta2})
                                 .eps(c.eps)
                                 .weight_decay(c.weight_decay)
                                 .amsgrad(c.amsgrad)
                                 .maximize(c.maximize)
                                 .capturable(c.capturable));
    for (int t = 0; t < kSteps; ++t) {
      set_gradients(params, t);
      opt.step();
    }
    expect_params(params, adam_reference(c), "AdamW " + describe(c));
  }
  EXPECT_DOUBLE_EQ(optim::AdamWOptions().weight_decay(), 1e-2);
  EXPECT_DOUBLE_EQ(optim::AdamOptions().weight_decay(), 0);
}

// Float32 parameters take the fused step (src/cpu/optimizer.h): the same options against the
// float64 reference, within float32's rounding.
TEST(Adam, Float32StepsMatchTheReference) {
  const std::vector<AdamConfig> configs = {
      {0.01, 0.9, 0.999, 1e-8, 0.1, false, false, true},  {0.03, 0.7, 0.95, 1e-6, 0.05, false, true, false},
      {0.01, 0.3, 0.999, 1e-8, 0, false, false, false},   {0.02, 0.8, 0.99, 1e-3, 0.1, false, true, true},
  };
  for (const auto& c : configs) {
    std::vector<Tensor> params;
    for (const Tensor& p : make_params()) params.push_back(p.detach().to(kFloat32).requires_grad_());
    std::unique_ptr<optim::Optimizer> opt;
    if (c.decoupled)
      opt = std::make_unique<optim::AdamW>(params, optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps)
                                                       .weight_decay(c.weight_decay).maximize(c.maximize));
    else
      opt = std::make_unique<optim::Adam>(params, optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps)
                                                      .weight_decay(c.weight_decay).maximize(c.maximize));
    for (int t = 0; t < kSteps; ++t) {
      for (Tensor& p : params) p.mutable_grad() = Tensor();
      std::vector<Tensor> as_double;
      for (const Tensor& p : params) as_double.push_back(p.detach().to(kFloat64));
      set_gradients(as_double, t);
      for (size_t k = 0; k < params.size(); ++k) params[k].mutable_grad() = as_double[k].grad().to(kFloat32);
      opt->step();
    }
    const Params reference = adam_reference(c);
    for (size_t k = 0; k < params.size(); ++k) {
      const auto got = values(params[k]);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], reference[k][i], 2e-5 * (1 + std::abs(reference[k][i]))) << describe(c) << " at " << k << ", " << i;
    }
  }
}

// Note [Low-precision copies]: a weight that autocast_linear rounds to bf16 (f16) keeps the
// rounded copy; the fused Adam step writes the new values into it, on every build of the
// kernels, and forward computes with it: the same bits as rounding the weight anew, without a
// new cast (the copy's memory stays the same from step to step).
TEST(Adam, FusedStepWritesTheKeptLowPrecisionCopy) {
  cpu::for_each_capability([] {
    for (ScalarType dtype : {kBFloat16, kFloat16}) {
      manual_seed(9);
      const Tensor w = randn({37, 53}).requires_grad_();
      optim::AdamW adam({w}, optim::AdamWOptions(0.01).weight_decay(0.1));
      const Tensor x = randn({6, 53}).to(dtype);
      const void* kept = nullptr;
      for (int t = 0; t < 4; ++t) {
        adam.zero_grad();
        const Tensor y = detail::autocast_linear(x, w);
        ASSERT_TRUE(equal(y, linear(x, w.detach().to(dtype)))) << dtype_name(dtype) << " step " << t;
        y.to(kFloat32).square().sum().backward();
        adam.step();
        const Tensor copy = autograd::low_precision_copy(w, dtype);
        ASSERT_TRUE(equal(copy, w.detach().to(dtype))) << dtype_name(dtype) << " step " << t;
        if (t > 0) EXPECT_EQ(copy.data_ptr(), kept) << "step " << t << " cast again";
        kept = copy.data_ptr();
      }
    }
  });
}

// A kept copy serves only the values it was rounded from: an in-place change of the weight, or
// a new storage (set_data), makes the next forward round again; a graph that still holds the
// copy gets its old values back in backward, the step writing a new copy instead.
TEST(Adam, KeptLowPrecisionCopyFollowsTheWeight) {
  manual_seed(10);
  const Tensor w = randn({8, 16}).requires_grad_();
  Tensor x = randn({3, 16}).to(kBFloat16).requires_grad_();
  const Tensor first = autograd::low_precision_copy(w, kBFloat16);
  {
    NoGradGuard no_grad;
    w.mul_(0.5);
  }
  EXPECT_TRUE(equal(autograd::low_precision_copy(w, kBFloat16), w.detach().to(kBFloat16)));
  EXPECT_FALSE(equal(first, autograd::low_precision_copy(w, kBFloat16)));
  w.set_data(randn({8, 16}));
  EXPECT_TRUE(equal(autograd::low_precision_copy(w, kBFloat16), w.detach().to(kBFloat16)));

  optim::AdamW adam({w}, optim::AdamWOptions(0.1));
  const Tensor y = detail::autocast_linear(x, w);
  const Tensor loss = y.to(kFloat32).square().sum();
  loss.backward({}, /*retain_graph=*/true);
  const Tensor x_grad = x.grad().clone();
  adam.step();  // the retained graph still holds the copy forward used
  EXPECT_TRUE(equal(autograd::low_precision_copy(w, kBFloat16), w.detach().to(kBFloat16)));
  x.mutable_grad() = Tensor();
  loss.backward();
  EXPECT_TRUE(equal(x.grad(), x_grad));  // from the copy forward used, which the step left alone
}

// The fused step against the composite of tensor ops it replaces (which a strided float32
// parameter takes), bit for bit, on every build of the kernels: the composite's adds with an
// alpha are one FMA where the build has FMA, and the fused step rounds as they do.
TEST(Adam, FusedFloat32StepGivesTheCompositesBits) {
  cpu::for_each_capability([] {
    const std::vector<AdamConfig> configs = {
        {0.01, 0.9, 0.999, 1e-8, 0.1, false, false, true},  {0.03, 0.7, 0.95, 1e-6, 0.05, false, false, false},
        {0.01, 0.3, 0.999, 1e-8, 0, false, false, false},   {0.02, 0.8, 0.99, 1e-3, 0.1, false, true, true},
    };
    for (const auto& c : configs) {
      manual_seed(5);
      const Tensor init = randn({37, 53});
      Tensor fused = init.clone().requires_grad_();
      Tensor strided = init.t().contiguous().t().requires_grad_();  // the same values by columns
      ASSERT_FALSE(strided.is_contiguous());
      auto make = [&](Tensor p) -> std::unique_ptr<optim::Optimizer> {
        if (c.decoupled)
          return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2})
                                                                            .eps(c.eps).weight_decay(c.weight_decay)
                                                                            .maximize(c.maximize));
        return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions(c.lr).betas({c.beta1, c.beta2})
                                                                         .eps(c.eps).weight_decay(c.weight_decay)
                                                                         .maximize(c.maximize));
      };
      auto a = make(fused), b = make(strided);
      for (int t = 0; t < 4; ++t) {
        Tensor g = randn({37, 53}) * std::pow(10.0, t - 2);
        g.index_put_({0}, 0.0);  // zero gradients too
        fused.mutable_grad() = g.clone();
        strided.mutable_grad() = g.clone();
        a->step();
        b->step();
        const Tensor x = fused.detach().contiguous(), y = strided.detach().contiguous();
        ASSERT_EQ(0, std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * sizeof(float)))
            << describe(c) << " step " << t;
      }
    }
  });
}

// ---- groups, gradients, closures, validation -------------------------------------------------

TEST(Optimizer, ParamGroupsUseTheirOwnOptions) {
  auto params = make_params();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{params[0]});  // takes the defaults
  groups.emplace_back(std::vector<Tensor>{params[1]}, std::make_unique<optim::SGDOptions>(optim::SGDOptions(0.02).momentum(0.9)));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  for (int t = 0; t < kSteps; ++t) {
    set_gradients(params, t);
    opt.step();
  }
  Params plain = sgd_reference({0.1, 0, 0, 0, false, false}), momentum = sgd_reference({0.02, 0.9, 0, 0, false, false});
  EXPECT_TRUE(all_close(params[0], plain[0], {1e-6, 1e-6}));
  EXPECT_TRUE(all_close(params[1], momentum[1], {1e-6, 1e-6}));
  EXPECT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.size(), 2u);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].options().get_lr(), 0.02);

  // add_param_group after construction, with validation.
  Tensor extra = zeros({2}, kFloat64).requires_grad_();
  opt.add_param_group(optim::OptimizerParamGroup({extra}));
  EXPECT_EQ(opt.parameters().size(), 3u);
  EXPECT_TRUE(throws_error([&] { opt.add_param_group(optim::OptimizerParamGroup({params[0]})); },
                           {"more than one parameter group"}));
  EXPECT_TRUE(throws_error(
      [&] {
        opt.add_param_group(optim::OptimizerParamGroup({zeros({1}, kFloat64).requires_grad_()},
                                                       std::make_unique<optim::SGDOptions>(-1.0)));
      },
      {"SGD", "learning rate", "-1"}));
}

TEST(Optimizer, SkipsParametersWithoutGradientsAndZeroGrad) {
  auto params = make_params();
  optim::Adam opt(params, optim::AdamOptions(0.1));
  set_gradients({params[0]}, 0);
  const auto untouched = values(params[1]);
  opt.step();
  EXPECT_TRUE(all_close(params[1], untouched, {0, 0}));
  EXPECT_EQ(opt.state().size(), 1u);
  EXPECT_EQ(opt.state_dict().tensors.count("state.1.exp_avg"), 0u);
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(all_close(params[0].grad(), std::vector<double>(6, 0.0), {0, 0}));
  opt.zero_grad();
  EXPECT_FALSE(params[0].grad().defined());
}

TEST(Optimizer, ClosureRunsWithGradEnabled) {
  Tensor w = testutil::make({1.0, -2.0}, {2}, kFloat64).requires_grad_();
  optim::SGD opt({w}, 0.25);
  int calls = 0;
  Tensor loss = opt.step([&] {
    ++calls;
    opt.zero_grad();
    Tensor l = w.square().sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(loss.item<double>(), 5);
  EXPECT_TRUE(all_close(w, {0.5, -1.0}));  // w - 0.25 * 2w
  EXPECT_FALSE(opt.step().defined());
}

TEST(Optimizer, InvalidOptionsAreRejected) {
  auto params = make_params();
  EXPECT_TRUE(throws_error([&] { optim::SGD(params, optim::SGDOptions(0.1).nesterov(true)); }, {"SGD", "nesterov"}));
  EXPECT_TRUE(throws_error([&] { optim::SGD(params, optim::SGDOptions(0.1).momentum(-0.5)); }, {"momentum", "-0.5"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam(params, optim::AdamOptions(0.1).betas({0.9, 1.0})); }, {"Adam", "index 1"}));
  EXPECT_TRUE(throws_error([&] { optim::AdamW(params, optim::AdamWOptions(-1)); }, {"AdamW", "learning rate"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam(params, optim::AdamOptions().eps(-1)); }, {"epsilon"}));
  EXPECT_TRUE(throws_error([&] { optim::SGD({params[0], params[0]}, 0.1); }, {"more than one parameter group"}));
  Tensor non_leaf = params[0] * 2;
  EXPECT_TRUE(throws_error([&] { optim::SGD({non_leaf}, 0.1); }, {"non-leaf"}));
}

TEST(Optimizer, UpdatesFloat32AndBFloat16Parameters) {
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    Tensor w = testutil::make({1.0, -2.0, 0.5}, {3}, dtype).requires_grad_();
    optim::AdamW opt({w}, optim::AdamWOptions(0.1));
    w.set_grad(testutil::make({0.5, -0.5, 1.0}, {3}, dtype));
    opt.step();
    EXPECT_EQ(w.scalar_type(), dtype);
    // First Adam step moves each element by ~lr against its gradient's sign (after decay).
    const double decay = 1 - 0.1 * 0.01;
    EXPECT_TRUE(all_close(w, {decay * 1.0 - 0.1, decay * -2.0 + 0.1, decay * 0.5 - 0.1},
                          dtype == kFloat32 ? testutil::Tolerance{1e-6, 1e-6} : testutil::Tolerance{1e-2, 1e-2}));
  }
}

// ---- state dicts ------------------------------------------------------------------------------

TEST(OptimizerStateDict, SaveLoadContinueIsBitIdentical) {
  expect_resume_is_bit_identical(
      [](const std::vector<Tensor>& p) {
        return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01));
      },
      "SGD");
  expect_resume_is_bit_identical(
      [](const std::vector<Tensor>& p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.01).amsgrad(true)); },
      "Adam");
  expect_resume_is_bit_identical(
      [](const std::vector<Tensor>& p) {
        return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.02).weight_decay(0.1));
      },
      "AdamW");
  expect_resume_is_bit_identical(
      [](const std::vector<Tensor>& p) {
        return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.02).weight_decay(0.1).capturable(true));
      },
      "AdamW capturable");
}

TEST(OptimizerStateDict, LayoutIsFlatNamesOfTensorsAndScalars) {
  auto params = make_params();
  optim::AdamW opt(params, optim::AdamWOptions(0.01).amsgrad(true));
  run_steps(opt, params, 0, 3);
  auto dict = opt.state_dict();
  std::vector<std::string> tensor_keys, scalar_keys;
  for (const auto& [key, value] : dict.tensors) tensor_keys.push_back(key);
  for (const auto& [key, value] : dict.scalars) scalar_keys.push_back(key);
  EXPECT_EQ(tensor_keys, (std::vector<std::string>{"param_groups.0.params", "state.0.exp_avg", "state.0.exp_avg_sq",
                                                   "state.0.max_exp_avg_sq", "state.1.exp_avg", "state.1.exp_avg_sq",
                                                   "state.1.max_exp_avg_sq"}));
  EXPECT_EQ(scalar_keys, (std::vector<std::string>{"param_groups.0.amsgrad", "param_groups.0.beta1",
                                                   "param_groups.0.beta2", "param_groups.0.capturable",
                                                   "param_groups.0.eps", "param_groups.0.lr",
                                                   "param_groups.0.maximize", "param_groups.0.weight_decay",
                                                   "state.0.step", "state.1.step"}));
  EXPECT_DOUBLE_EQ(dict.scalars["state.1.step"], 3);
  EXPECT_TRUE(all_close(dict.tensors["param_groups.0.params"], {0, 1}, {0, 0}));
  // A snapshot: later steps do not change it.
  const auto saved = values(dict.tensors["state.0.exp_avg"]);
  run_steps(opt, params, 3, 1);
  EXPECT_TRUE(all_close(dict.tensors["state.0.exp_avg"], saved, {0, 0}));
}

TEST(OptimizerStateDict, LoadRestoresHyperparametersAndRejectsMismatches) {
  auto params = make_params();
  optim::SGD source(params, optim::SGDOptions(0.1).momentum(0.9));
  run_steps(source, params, 0, 2);
  source.param_groups()[0].options().set_lr(0.007);
  auto dict = source.state_dict();

  optim::SGD target(make_params(), optim::SGDOptions(0.5));
  target.load_state_dict(dict);
  const auto& options = static_cast<const optim::SGDOptions&>(target.param_groups()[0].options());
  EXPECT_DOUBLE_EQ(options.lr(), 0.007);
  EXPECT_DOUBLE_EQ(options.momentum(), 0.9);

  optim::SGD fewer({make_params()[0]}, 0.1);
  EXPECT_TRUE(throws_error([&] { fewer.load_state_dict(dict); }, {"load_state_dict", "group 0 has 2 parameters", "1"}));
  std::vector<Tensor> reshaped = {zeros({2, 3}, kFloat64).requires_grad_(), zeros({4}, kFloat64).requires_grad_()};
  optim::SGD wrong_shape(reshaped, 0.1);
  EXPECT_TRUE(throws_error([&] { wrong_shape.load_state_dict(dict); },
                           {"'state.0.momentum_buffer'", "[3, 2]", "[2, 3]"}));
  EXPECT_DOUBLE_EQ(wrong_shape.param_groups()[0].options().get_lr(), 0.1);  // untouched on error
  auto no_group = dict;
  no_group.tensors.erase("param_groups.0.params");
  EXPECT_TRUE(throws_error([&] { target.load_state_dict(no_group); }, {"0 parameter groups", "has 1"}));
  auto no_lr = dict;
  no_lr.scalars.erase("param_groups.0.lr");
  EXPECT_TRUE(throws_error([&] { target.load_state_dict(no_lr); }, {"lacks 'lr'"}));
  optim::Adam adam(make_params(), 0.1);
  EXPECT_TRUE(throws_error([&] { adam.load_state_dict(dict); }, {"lacks 'beta1'"}));
}

// ---- user-defined optimizers, add_parameters, options equality --------------------------------

// Options with only an lr, as a user writes them on libtorch's OptimizerCloneableOptions.
struct HalvingOptions : public optim::OptimizerCloneableOptions<HalvingOptions> {
  HalvingOptions(double lr = 1.0) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);

 public:
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
};

// param -= lr * grad / 2, with no per-parameter state.
class HalvingSGD : public optim::Optimizer {
 public:
  explicit HalvingSGD(std::vector<Tensor> params, HalvingOptions defaults = {})
      : Optimizer({optim::OptimizerParamGroup(std::move(params))}, std::make_unique<HalvingOptions>(defaults)) {}
  Tensor step(optim::LossClosure closure = nullptr) override {
    Tensor loss = run_closure(closure);
    NoGradGuard no_grad;
    for (auto& group : param_groups()) {
      const double lr = static_cast<const HalvingOptions&>(group.options()).lr();
      for (Tensor& p : group.params())
        if (p.grad().defined()) p.sub_(p.grad() * (lr / 2));
    }
    return loss;
  }
};

TEST(OptimizerBase, AUserOptimizerOnCloneableOptions) {
  Tensor a = testutil::make({1.0, 2.0}, {2}, kFloat64).requires_grad_();
  Tensor b = testutil::make({3.0}, {1}, kFloat64).requires_grad_();
  HalvingSGD opt({a}, HalvingOptions(0.5));
  // The group's options are a clone of the defaults.
  EXPECT_NE(&opt.param_groups()[0].options(), &opt.defaults());
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.5);
  {
    testing::internal::CaptureStderr();
    opt.add_parameters({b});
    EXPECT_NE(testing::internal::GetCapturedStderr().find("will be removed"), std::string::npos);
  }
  EXPECT_EQ(opt.param_groups().size(), 1u);
  EXPECT_EQ(opt.param_groups()[0].params().size(), 2u);
  testing::internal::CaptureStderr();
  EXPECT_TRUE(throws_error([&] { opt.add_parameters({a}); }, {"some parameters appear in more than one"}));
  testing::internal::GetCapturedStderr();
  (a.sum() + (b * b).sum()).backward();
  opt.step();
  EXPECT_TRUE(all_close(a, {1.0 - 0.25, 2.0 - 0.25}));
  EXPECT_TRUE(all_close(b, {3.0 - 0.25 * 6}));
  // What the options do not override is an error naming the method.
  EXPECT_TRUE(throws_error([&] { (void)opt.defaults().hyperparameters(); }, {"hyperparameters()", "not overridden"}));
  EXPECT_TRUE(throws_error([&] { (void)opt.state_dict(); }, {"hyperparameters()"}));
}

TEST(OptimizerBase, OptionsCompareByHyperparameters) {
  EXPECT_TRUE(optim::AdagradOptions(1.0) == optim::AdagradOptions(1.0));
  EXPECT_FALSE(optim::AdagradOptions(1.0) == optim::AdagradOptions(1.0).eps(1e-3));
  EXPECT_TRUE(optim::AdamOptions(0.1).betas({0.8, 0.9}) == optim::AdamOptions(0.1).betas({0.8, 0.9}));
  EXPECT_FALSE(optim::SGDOptions(0.1).nesterov(true).momentum(0.9) == optim::SGDOptions(0.1).momentum(0.9));
}

}  // namespace
}  // namespace ember
