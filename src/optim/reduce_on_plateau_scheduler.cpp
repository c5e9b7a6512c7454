// ReduceLROnPlateauScheduler: torch/optim/lr_scheduler.py's ReduceLROnPlateau.
#include "ember/optim/reduce_on_plateau_scheduler.h"

#include <algorithm>
#include <limits>

#include "ember/error.h"

namespace ember::optim {

ReduceLROnPlateauScheduler::ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode, double factor,
                                                       int patience, double threshold, ThresholdMode threshold_mode,
                                                       int cooldown, const std::vector<double>& min_lr, double eps)
    : optimizer_(optimizer),
      mode_(mode),
      factor_(factor),
      patience_(patience),
      threshold_(threshold),
      threshold_mode_(threshold_mode),
      cooldown_(cooldown),
      min_lrs_(min_lr.empty() ? std::vector<double>(optimizer.param_groups().size()) : min_lr),
      eps_(eps),
      best_(mode == min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity()) {
  const char* op = "ReduceLROnPlateauScheduler";
  EMBER_CHECK(factor < 1.0, op, "factor should be < 1.0, got ", factor);
  EMBER_CHECK(patience >= 0, op, "patience must be non-negative, got ", patience);
  EMBER_CHECK(threshold >= 0, op, "threshold must be non-negative, got ", threshold);
  EMBER_CHECK(cooldown >= 0, op, "cooldown must be non-negative, got ", cooldown);
  EMBER_CHECK(eps >= 0, op, "eps must be non-negative, got ", eps);
  EMBER_CHECK(min_lrs_.size() == optimizer.param_groups().size(), op, "expected ", optimizer.param_groups().size(),
              " min_lr values (one per parameter group), got ", min_lrs_.size());
  for (double value : min_lrs_) EMBER_CHECK(value >= 0, op, "min_lr must be non-negative, got ", min_lrs_);
}

bool ReduceLROnPlateauScheduler::is_better(double metric) const {
  if (mode_ == min) return threshold_mode_ == rel ? metric < best_ * (1 - threshold_) : metric < best_ - threshold_;
  return threshold_mode_ == rel ? metric > best_ * (1 + threshold_) : metric > best_ + threshold_;
}

void ReduceLROnPlateauScheduler::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr();
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
}

void ReduceLROnPlateauScheduler::reduce_lr() {
  auto& groups = optimizer_.param_groups();
  EMBER_CHECK(groups.size() == min_lrs_.size(), "ReduceLROnPlateauScheduler", "the optimizer has ", groups.size(),
              " parameter groups but the scheduler was made for ", min_lrs_.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const double old_lr = groups[g].options().get_lr();
    const double new_lr = std::max(old_lr * factor_, min_lrs_[g]);
    if (old_lr - new_lr > eps_) groups[g].options().set_lr(new_lr);
  }
}

std::vector<double> ReduceLROnPlateauScheduler::get_last_lr() const {
  std::vector<double> lrs;
  for (const auto& group : optimizer_.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

std::map<std::string, double> ReduceLROnPlateauScheduler::state_dict() const {
  return {{"best", best_},
          {"num_bad_epochs", static_cast<double>(num_bad_epochs_)},
          {"cooldown_counter", static_cast<double>(cooldown_counter_)},
          {"last_epoch", static_cast<double>(last_epoch_)}};
}

void ReduceLROnPlateauScheduler::load_state_dict(const std::map<std::string, double>& state_dict) {
  auto read = [&](const std::string& key) {
    auto it = state_dict.find(key);
    EMBER_CHECK(it != state_dict.end(), "ReduceLROnPlateauScheduler::load_state_dict", "the state dict lacks '", key,
                "'");
    return it->second;
  };
  const double best = read("best");
  const auto num_bad_epochs = static_cast<int>(read("num_bad_epochs"));
  const auto cooldown_counter = static_cast<int>(read("cooldown_counter"));
  last_epoch_ = static_cast<int64_t>(read("last_epoch"));
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  cooldown_counter_ = cooldown_counter;
}

}  // namespace ember::optim
