// Learning-rate schedulers against their closed forms, per parameter group.
#include <gtest/gtest.h>

#include <cmath>

#include "core/testing.h"
#include "ember/ember.h"

namespace ember {
namespace {

namespace optim = ember::optim;

// An SGD with two groups whose base lrs are 0.1 and 0.4.
struct TwoGroups {
  TwoGroups() : opt(groups(), optim::SGDOptions(0.1)) {}
  static std::vector<optim::OptimizerParamGroup> groups() {
    std::vector<optim::OptimizerParamGroup> out;
    out.emplace_back(std::vector<Tensor>{zeros({2}).requires_grad_()});
    out.emplace_back(std::vector<Tensor>{zeros({3}).requires_grad_()}, std::make_unique<optim::SGDOptions>(0.4));
    return out;
  }
  std::vector<double> lrs() {
    return {opt.param_groups()[0].options().get_lr(), opt.param_groups()[1].options().get_lr()};
  }
  optim::SGD opt;
};

// Checks the lr of both groups at epochs 0..epochs-1 against base * factor(epoch).
template <typename Factor>
void expect_schedule(optim::LRScheduler& scheduler, TwoGroups& setup, int epochs, Factor factor) {
  for (int epoch = 0; epoch < epochs; ++epoch) {
    if (epoch > 0) scheduler.step();
    EXPECT_EQ(scheduler.last_epoch(), epoch);
    const std::vector<double> lrs = setup.lrs();
    EXPECT_NEAR(lrs[0], factor(epoch, 0.1), 1e-15) << "epoch " << epoch;
    EXPECT_NEAR(lrs[1], factor(epoch, 0.4), 1e-15) << "epoch " << epoch;
    EXPECT_EQ(scheduler.get_last_lr(), lrs);
  }
}

TEST(Schedulers, StepLR) {
  TwoGroups setup;
  optim::StepLR scheduler(setup.opt, 3, 0.5);
  expect_schedule(scheduler, setup, 10, [](int e, double base) { return base * std::pow(0.5, e / 3); });
}

TEST(Schedulers, LambdaLR) {
  TwoGroups setup;
  optim::LambdaLR scheduler(setup.opt, [](int64_t epoch) { return 1.0 / static_cast<double>(epoch + 1); });
  expect_schedule(scheduler, setup, 6, [](int e, double base) { return base / (e + 1); });
}

TEST(Schedulers, CosineAnnealingLR) {
  TwoGroups setup;
  optim::CosineAnnealingLR scheduler(setup.opt, 8, 0.01);
  expect_schedule(scheduler, setup, 12, [](int e, double base) {
    return 0.01 + (base - 0.01) * (1 + std::cos(M_PI * e / 8)) / 2;
  });
  EXPECT_TRUE(testutil::throws_error([&] { optim::CosineAnnealingLR(setup.opt, 0); }, {"T_max", "0"}));
}

TEST(Schedulers, WarmupCosineLR) {
  TwoGroups setup;
  optim::WarmupCosineLR scheduler(setup.opt, 4, 10, 0.001);
  expect_schedule(scheduler, setup, 14, [](int e, double base) {
    if (e < 4) return base * e / 4;
    const double progress = std::min(1.0, (e - 4) / 6.0);
    return 0.001 + (base - 0.001) * (1 + std::cos(M_PI * progress)) / 2;
  });
  EXPECT_NEAR(setup.lrs()[0], 0.001, 1e-15);  // stays at eta_min after total_steps
}

TEST(Schedulers, MultiStepLR) {
  TwoGroups setup;
  // Unsorted, with a milestone listed twice (it counts twice, as PyTorch's Counter does).
  optim::MultiStepLR scheduler(setup.opt, {5, 2, 9, 5}, 0.5);
  const std::vector<int> milestones{2, 5, 5, 9};
  expect_schedule(scheduler, setup, 12, [&](int e, double base) {
    int passed = 0;
    for (int m : milestones) passed += m <= e;  // bisect_right(milestones, epoch)
    return base * std::pow(0.5, passed);
  });
  EXPECT_TRUE(testutil::throws_error([&] { optim::MultiStepLR(setup.opt, {3, -1}); }, {"[MultiStepLR]", "milestones"}));
}

TEST(Schedulers, ExponentialLR) {
  TwoGroups setup;
  optim::ExponentialLR scheduler(setup.opt, 0.9);
  expect_schedule(scheduler, setup, 10, [](int e, double base) { return base * std::pow(0.9, e); });
}

TEST(Schedulers, StateDictResumesTheSchedule) {
  TwoGroups setup;
  optim::StepLR scheduler(setup.opt, 2, 0.1);
  for (int i = 0; i < 5; ++i) scheduler.step();
  auto saved = scheduler.state_dict();
  EXPECT_DOUBLE_EQ(saved["last_epoch"], 5);
  EXPECT_DOUBLE_EQ(saved["base_lrs.1"], 0.4);

  TwoGroups other;
  optim::StepLR resumed(other.opt, 2, 0.1);
  resumed.load_state_dict(saved);
  resumed.step();
  scheduler.step();
  EXPECT_EQ(resumed.get_last_lr(), scheduler.get_last_lr());
  EXPECT_EQ(other.lrs(), setup.lrs());
}

}  // namespace
}  // namespace ember
