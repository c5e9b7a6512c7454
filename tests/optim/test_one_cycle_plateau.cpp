// OneCycleLR against PyTorch's phase formulas written out here (lr and momentum or beta1 of
// every group at every step), and ReduceLROnPlateauScheduler against lr sequences derived
// by hand from PyTorch's rules; the invalid options of both.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/testing.h"
#include "ember/ember.h"

namespace ember {
namespace {

namespace optim = ember::optim;
using testutil::throws_error;

std::vector<optim::OptimizerParamGroup> two_groups() {
  std::vector<optim::OptimizerParamGroup> out;
  out.emplace_back(std::vector<Tensor>{zeros({2}).requires_grad_()});
  out.emplace_back(std::vector<Tensor>{zeros({3}).requires_grad_()});
  return out;
}

double lr_of(optim::Optimizer& opt, size_t group) { return opt.param_groups()[group].options().get_lr(); }

// ---- OneCycleLR ---------------------------------------------------------------------------------

struct OneCycleCase {
  int64_t total_steps;
  double pct_start, max_lr, div_factor, final_div_factor, base_momentum, max_momentum;
  bool three_phase, cosine;
};

// torch.optim.lr_scheduler.OneCycleLR at `step`: {lr, momentum}.
std::pair<double, double> one_cycle_at(const OneCycleCase& c, int64_t step) {
  auto anneal = [&](double start, double end, double pct) {
    return c.cosine ? end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1) : (end - start) * pct + start;
  };
  const double initial = c.max_lr / c.div_factor, minimum = initial / c.final_div_factor;
  const double s = static_cast<double>(step), last = static_cast<double>(c.total_steps) - 1;
  const double up_end = c.pct_start * static_cast<double>(c.total_steps) - 1;
  if (s <= up_end) {
    const double pct = s / up_end;
    return {anneal(initial, c.max_lr, pct), anneal(c.max_momentum, c.base_momentum, pct)};
  }
  if (!c.three_phase) {
    const double pct = (s - up_end) / (last - up_end);
    return {anneal(c.max_lr, minimum, pct), anneal(c.base_momentum, c.max_momentum, pct)};
  }
  const double down_end = 2 * c.pct_start * static_cast<double>(c.total_steps) - 2;
  if (s <= down_end) {
    const double pct = (s - up_end) / (down_end - up_end);
    return {anneal(c.max_lr, initial, pct), anneal(c.base_momentum, c.max_momentum, pct)};
  }
  const double pct = (s - down_end) / (last - down_end);
  return {anneal(initial, minimum, pct), c.max_momentum};
}

TEST(OneCycleLR, CosineTwoPhasesWithSGDMomentum) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1).momentum(0.9));
  const OneCycleCase first{20, 0.3, 1.0, 25.0, 1e4, 0.85, 0.95, false, true};
  OneCycleCase second = first;
  second.max_lr = 0.5;
  optim::OneCycleLR scheduler(opt, optim::OneCycleLROptions({1.0, 0.5}).total_steps(20));
  for (int64_t step = 0; step <= 20; ++step) {
    if (step > 0) scheduler.step();
    for (size_t g = 0; g < 2; ++g) {
      const auto [lr, momentum] = one_cycle_at(g == 0 ? first : second, step);
      EXPECT_NEAR(lr_of(opt, g), lr, 1e-15) << "step " << step << " group " << g;
      const auto& options = static_cast<const optim::SGDOptions&>(opt.param_groups()[g].options());
      EXPECT_NEAR(options.momentum(), momentum, 1e-15) << "step " << step;
    }
  }
  // Hand-checked ends: max_lr / 25 at the start, max_lr after pct_start * 20 - 1 = 5 steps.
  EXPECT_NEAR(one_cycle_at(first, 0).first, 0.04, 1e-15);
  EXPECT_NEAR(one_cycle_at(first, 5).first, 1.0, 1e-15);
  EXPECT_NEAR(one_cycle_at(first, 19).first, 0.04 / 1e4, 1e-15);
  EXPECT_TRUE(throws_error([&] { scheduler.step(); }, {"[OneCycleLR]", "tried to step 21 times", "total steps is 20"}));
}

TEST(OneCycleLR, LinearThreePhasesWithAdamBeta1) {
  optim::Adam opt(std::vector<Tensor>{zeros({4}).requires_grad_()}, optim::AdamOptions(0.01).betas({0.9, 0.98}));
  const OneCycleCase c{20, 0.25, 0.2, 10.0, 100.0, 0.8, 0.9, true, false};
  optim::OneCycleLR scheduler(opt, optim::OneCycleLROptions(0.2)
                                       .epochs(4)
                                       .steps_per_epoch(5)
                                       .pct_start(0.25)
                                       .anneal_strategy("linear")
                                       .div_factor(10)
                                       .final_div_factor(100)
                                       .base_momentum(0.8)
                                       .max_momentum(0.9)
                                       .three_phase(true));
  EXPECT_EQ(scheduler.total_steps(), 20);
  for (int64_t step = 0; step < 20; ++step) {
    if (step > 0) scheduler.step();
    const auto [lr, beta1] = one_cycle_at(c, step);
    const auto& options = static_cast<const optim::AdamOptions&>(opt.param_groups()[0].options());
    EXPECT_NEAR(options.lr(), lr, 1e-15) << "step " << step;
    EXPECT_NEAR(std::get<0>(options.betas()), beta1, 1e-15) << "step " << step;
    EXPECT_DOUBLE_EQ(std::get<1>(options.betas()), 0.98);
  }
}

TEST(OneCycleLR, WithoutMomentumCycling) {
  optim::Adagrad opt(std::vector<Tensor>{zeros({2}).requires_grad_()}, optim::AdagradOptions(0.1));
  optim::OneCycleLR scheduler(opt, optim::OneCycleLROptions(0.3).total_steps(10).cycle_momentum(false));
  const OneCycleCase c{10, 0.3, 0.3, 25.0, 1e4, 0.85, 0.95, false, true};
  for (int64_t step = 0; step < 10; ++step) {
    if (step > 0) scheduler.step();
    EXPECT_NEAR(lr_of(opt, 0), one_cycle_at(c, step).first, 1e-15) << step;
  }
}

TEST(OneCycleLR, InvalidOptionsNameTheOption) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, optim::OneCycleLROptions(1.0)); },
                           {"[OneCycleLR]", "total_steps", "epochs", "steps_per_epoch"}));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, optim::OneCycleLROptions(1.0).total_steps(0)); },
                           {"[OneCycleLR]", "total_steps", "0"}));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, optim::OneCycleLROptions(1.0).total_steps(10).pct_start(1.5)); },
                           {"[OneCycleLR]", "pct_start", "1.5"}));
  EXPECT_TRUE(throws_error(
      [&] { optim::OneCycleLR(opt, optim::OneCycleLROptions(1.0).total_steps(10).anneal_strategy("exp")); },
      {"[OneCycleLR]", "anneal_strategy", "exp"}));
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(opt, optim::OneCycleLROptions({1.0, 2.0, 3.0}).total_steps(10)); },
                           {"[OneCycleLR]", "max_lr", "3"}));
  optim::Adagrad adagrad(std::vector<Tensor>{zeros({2}).requires_grad_()});
  EXPECT_TRUE(throws_error([&] { optim::OneCycleLR(adagrad, optim::OneCycleLROptions(1.0).total_steps(10)); },
                           {"[OneCycleLR]", "momentum or beta1"}));
}

// ---- ReduceLROnPlateauScheduler -------------------------------------------------------------------

TEST(ReduceLROnPlateau, MinModeRelativeThresholdPatienceAndCooldown) {
  optim::SGD opt(std::vector<Tensor>{zeros({2}).requires_grad_()}, optim::SGDOptions(1.0));
  using S = optim::ReduceLROnPlateauScheduler;
  S scheduler(opt, S::min, 0.5, /*patience=*/2, /*threshold=*/0.1, S::rel, /*cooldown=*/1);
  // Better means below best * 0.9. 9.5 is bad; 8.9 < 9 is better; 8.5, 8.4, 8.3 are bad
  // (three > patience: halve, cooldown 1); 8.2 falls in the cooldown; 8.1 is bad; 8.0 <
  // 8.9 * 0.9 = 8.01 is better; 7.9, 7.8, 7.7 are bad: halve again; 7.6 is in the cooldown.
  const std::vector<double> metrics{10, 9.5, 8.9, 8.5, 8.4, 8.3, 8.2, 8.1, 8.0, 7.9, 7.8, 7.7, 7.6};
  const std::vector<double> expected{1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25};
  for (size_t i = 0; i < metrics.size(); ++i) {
    scheduler.step(metrics[i]);
    EXPECT_DOUBLE_EQ(lr_of(opt, 0), expected[i]) << "after metric " << i;
  }
  EXPECT_EQ(scheduler.get_last_lr(), std::vector<double>{0.25});
}

TEST(ReduceLROnPlateau, MaxModeAbsoluteThresholdAndMinLr) {
  std::vector<optim::OptimizerParamGroup> groups = two_groups();
  groups[1] = optim::OptimizerParamGroup(groups[1].params(), std::make_unique<optim::SGDOptions>(0.4));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  using S = optim::ReduceLROnPlateauScheduler;
  S scheduler(opt, S::max, 0.1, /*patience=*/0, /*threshold=*/0.5, S::abs, /*cooldown=*/0, {0.015, 0.0});
  // Better means above best + 0.5: 1.4 and 2.3 are bad steps (patience 0: reduce at once);
  // group 0 stops at its min_lr 0.015 (0.1 -> 0.015, then unchanged).
  const std::vector<double> metrics{1.0, 1.4, 2.0, 2.3, 2.6};
  const std::vector<std::pair<double, double>> expected{
      {0.1, 0.4}, {0.015, 0.04}, {0.015, 0.04}, {0.015, 0.004}, {0.015, 0.004}};
  for (size_t i = 0; i < metrics.size(); ++i) {
    scheduler.step(metrics[i]);
    EXPECT_NEAR(lr_of(opt, 0), expected[i].first, 1e-15) << i;
    EXPECT_NEAR(lr_of(opt, 1), expected[i].second, 1e-15) << i;
  }
}

TEST(ReduceLROnPlateau, ChangesSmallerThanEpsAreSkipped) {
  optim::SGD opt(std::vector<Tensor>{zeros({1}).requires_grad_()}, optim::SGDOptions(1e-7));
  using S = optim::ReduceLROnPlateauScheduler;
  S scheduler(opt, S::min, 0.5, 0, 1e-4, S::rel, 0, {}, /*eps=*/1e-7);
  scheduler.step(1.0);
  scheduler.step(1.0);  // 1e-7 -> 5e-8 would change it by 5e-8 <= eps
  EXPECT_DOUBLE_EQ(lr_of(opt, 0), 1e-7);
}

TEST(ReduceLROnPlateau, StateDictResumes) {
  using S = optim::ReduceLROnPlateauScheduler;
  optim::SGD opt(std::vector<Tensor>{zeros({1}).requires_grad_()}, optim::SGDOptions(1.0));
  S scheduler(opt, S::min, 0.5, 2);
  for (double m : {5.0, 4.0, 4.0, 4.0}) scheduler.step(m);
  const auto saved = scheduler.state_dict();
  EXPECT_DOUBLE_EQ(saved.at("best"), 4.0);
  EXPECT_DOUBLE_EQ(saved.at("num_bad_epochs"), 2);

  optim::SGD other(std::vector<Tensor>{zeros({1}).requires_grad_()}, optim::SGDOptions(1.0));
  S resumed(other, S::min, 0.5, 2);
  resumed.load_state_dict(saved);
  resumed.step(4.0);  // the third bad step: reduce
  scheduler.step(4.0);
  EXPECT_DOUBLE_EQ(lr_of(other, 0), 0.5);
  EXPECT_EQ(resumed.get_last_lr(), scheduler.get_last_lr());
}

TEST(ReduceLROnPlateau, InvalidOptionsNameTheOption) {
  optim::SGD opt(two_groups(), optim::SGDOptions(0.1));
  using S = optim::ReduceLROnPlateauScheduler;
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 1.0); }, {"[ReduceLROnPlateauScheduler]", "factor", "1"}));
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 0.1, -1); }, {"[ReduceLROnPlateauScheduler]", "patience", "-1"}));
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 0.1, 10, -1e-4); }, {"[ReduceLROnPlateauScheduler]", "threshold"}));
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 0.1, 10, 1e-4, S::rel, -2); }, {"[ReduceLROnPlateauScheduler]", "cooldown"}));
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 0.1, 10, 1e-4, S::rel, 0, {0.1}); },
                           {"[ReduceLROnPlateauScheduler]", "expected 2 min_lr", "got 1"}));
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 0.1, 10, 1e-4, S::rel, 0, {0.1, -0.1}); },
                           {"[ReduceLROnPlateauScheduler]", "min_lr"}));
  EXPECT_TRUE(throws_error([&] { S(opt, S::min, 0.1, 10, 1e-4, S::rel, 0, {}, -1); },
                           {"[ReduceLROnPlateauScheduler]", "eps"}));
}

}  // namespace
}  // namespace ember
