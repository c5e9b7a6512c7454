// OneCycleLR: torch/optim/lr_scheduler.py's phases and annealing functions.
#include "ember/optim/one_cycle_lr.h"

#include <cmath>
#include <numbers>

#include "ember/error.h"

namespace ember::optim {
namespace {

enum LrKind { kInitial = 0, kMax = 1, kMin = 2 };

// Writes `momentum` into the group's momentum, or its beta1 (Adam, AdamW).
void set_momentum(OptimizerOptions& options, double momentum, bool use_beta1) {
  auto values = options.hyperparameters();
  values[use_beta1 ? "beta1" : "momentum"] = momentum;
  options.set_hyperparameters(values);
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options)
    : LRScheduler(optimizer), options_(std::move(options)) {
  const char* op = "OneCycleLR";
  const auto& o = options_;
  if (o.total_steps()) {
    EMBER_CHECK(*o.total_steps() > 0, op, "expected a positive integer total_steps, but got ", *o.total_steps());
    total_steps_ = *o.total_steps();
  } else {
    EMBER_CHECK(o.epochs() && o.steps_per_epoch(), op,
                "you must define either total_steps OR (epochs AND steps_per_epoch)");
    EMBER_CHECK(*o.epochs() > 0, op, "expected a positive integer epochs, but got ", *o.epochs());
    EMBER_CHECK(*o.steps_per_epoch() > 0, op, "expected a positive integer steps_per_epoch, but got ",
                *o.steps_per_epoch());
    total_steps_ = *o.epochs() * *o.steps_per_epoch();
  }
  EMBER_CHECK(o.pct_start() >= 0 && o.pct_start() <= 1, op, "expected a pct_start between 0 and 1, but got ",
              o.pct_start());
  EMBER_CHECK(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear", op,
              "anneal_strategy must be one of 'cos' or 'linear', got '", o.anneal_strategy(), "'");
  EMBER_CHECK(o.div_factor() > 0, op, "expected a positive div_factor, but got ", o.div_factor());
  EMBER_CHECK(o.final_div_factor() > 0, op, "expected a positive final_div_factor, but got ", o.final_div_factor());

  const double total = static_cast<double>(total_steps_);
  if (o.three_phase()) {
    phases_ = {{o.pct_start() * total - 1, kInitial, kMax, true, false},
               {2 * o.pct_start() * total - 2, kMax, kInitial, false, true},
               {total - 1, kInitial, kMin, true, true}};
  } else {
    phases_ = {{o.pct_start() * total - 1, kInitial, kMax, true, false}, {total - 1, kMax, kMin, false, true}};
  }
  // A phase of length zero would divide by zero in get_lrs (PyTorch raises ZeroDivisionError).
  double start_step = 0;
  for (const Phase& phase : phases_) {
    EMBER_CHECK(phase.end_step != start_step, op, "pct_start ", o.pct_start(), " and total_steps ", total_steps_,
                " give a phase of length zero");
    start_step = phase.end_step;
  }

  const auto& groups = optimizer_.param_groups();
  const std::vector<double>& max_lrs = o.max_lr();
  EMBER_CHECK(max_lrs.size() == 1 || max_lrs.size() == groups.size(), op, "expected ", groups.size(),
              " values for max_lr, got ", max_lrs.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const double max_lr = max_lrs.size() == 1 ? max_lrs[0] : max_lrs[g];
    const double initial_lr = max_lr / o.div_factor();
    group_lrs_.push_back({initial_lr, max_lr, initial_lr / o.final_div_factor()});
    base_lrs_[g] = initial_lr;  // PyTorch's group["initial_lr"]
  }
  if (o.cycle_momentum()) {
    const auto defaults = optimizer_.defaults().hyperparameters();
    EMBER_CHECK(defaults.count("momentum") || defaults.count("beta1"), op,
                "optimizer must support momentum or beta1 with the cycle_momentum option enabled");
    use_beta1_ = defaults.count("beta1") > 0;
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy() == "cos") return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lrs() const {
  const auto step_num = static_cast<double>(last_epoch_);
  EMBER_CHECK(last_epoch_ <= total_steps_, "OneCycleLR", "tried to step ", last_epoch_,
              " times. The specified number of total steps is ", total_steps_);
  auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t g = 0; g < groups.size(); ++g) {
    double start_step = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (step_num <= phase.end_step || i + 1 == phases_.size()) {
        const double pct = (step_num - start_step) / (phase.end_step - start_step);
        lrs.push_back(anneal(group_lrs_[g][phase.start_lr], group_lrs_[g][phase.end_lr], pct));
        if (options_.cycle_momentum()) {
          const auto momentum_of = [&](bool is_max) {
            return is_max ? options_.max_momentum() : options_.base_momentum();
          };
          set_momentum(groups[g].options(),
                       anneal(momentum_of(phase.start_momentum_is_max), momentum_of(phase.end_momentum_is_max), pct),
                       use_beta1_);
        }
        break;
      }
      start_step = phase.end_step;
    }
  }
  return lrs;
}

}  // namespace ember::optim
