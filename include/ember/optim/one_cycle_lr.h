// The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR, PyTorch's Python defaults): the lr
// rises from max_lr / div_factor to max_lr over the first pct_start of total_steps, then
// falls to initial_lr / final_div_factor (three_phase: back to initial_lr first, then to
// the minimum), annealed by cosine or linearly; with cycle_momentum the momentum (or Adam's
// beta1) moves the opposite way between max_momentum and base_momentum. Stepping past
// total_steps is an error, as in PyTorch. libtorch has no OneCycleLR: the options take
// PyTorch's Python names; base_momentum and max_momentum are one value for every group.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/arg.h"
#include "ember/optim/lr_scheduler.h"

namespace ember::optim {

struct OneCycleLROptions {
  // One max_lr for every group, or one per group.
  OneCycleLROptions(double max_lr) : max_lr_({max_lr}) {}  // NOLINT
  OneCycleLROptions(std::vector<double> max_lr) : max_lr_(std::move(max_lr)) {}  // NOLINT
  EMBER_ARG(std::vector<double>, max_lr);
  // total_steps, or epochs * steps_per_epoch.
  EMBER_ARG(std::optional<int64_t>, total_steps) = std::nullopt;
  EMBER_ARG(std::optional<int64_t>, epochs) = std::nullopt;
  EMBER_ARG(std::optional<int64_t>, steps_per_epoch) = std::nullopt;
  EMBER_ARG(double, pct_start) = 0.3;
  EMBER_ARG(std::string, anneal_strategy) = "cos";  // "cos" or "linear"
  EMBER_ARG(bool, cycle_momentum) = true;
  EMBER_ARG(double, base_momentum) = 0.85;
  EMBER_ARG(double, max_momentum) = 0.95;
  EMBER_ARG(double, div_factor) = 25.0;
  EMBER_ARG(double, final_div_factor) = 1e4;
  EMBER_ARG(bool, three_phase) = false;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);
  int64_t total_steps() const { return total_steps_; }

 private:
  struct Phase {
    double end_step;
    // Which of (initial, max, min) lr each end takes, and whether each end's momentum is
    // the max momentum (else the base one).
    int start_lr, end_lr;
    bool start_momentum_is_max, end_momentum_is_max;
  };
  // Also sets each group's momentum (or beta1) with cycle_momentum, as PyTorch's get_lr does.
  std::vector<double> get_lrs() const override;
  double anneal(double start, double end, double pct) const;

  OneCycleLROptions options_;
  int64_t total_steps_ = 0;
  std::vector<Phase> phases_;
  std::vector<std::vector<double>> group_lrs_;  // per group: initial, max, min
  bool use_beta1_ = false;
};

}  // namespace ember::optim
