// Learning-rate schedulers (closed forms of torch/optim/lr_scheduler.py).
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/error.h"

namespace ember::optim {
namespace {
// Every group's base lr times `factor`.
std::vector<double> scaled(const std::vector<double>& base_lrs, double factor) {
  std::vector<double> lrs;
  for (double base : base_lrs) lrs.push_back(base * factor);
  return lrs;
}
}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (const auto& group : optimizer_.param_groups()) base_lrs_.push_back(group.options().get_lr());
}

void LRScheduler::initial_step() { apply_lrs(); }

void LRScheduler::step() {
  ++last_epoch_;
  apply_lrs();
}

void LRScheduler::apply_lrs() {
  auto& groups = optimizer_.param_groups();
  EMBER_CHECK(groups.size() == base_lrs_.size(), "LRScheduler", "the optimizer has ", groups.size(),
              " parameter groups but the scheduler was made for ", base_lrs_.size());
  last_lrs_ = get_lrs();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(last_lrs_[g]);
}

std::map<std::string, double> LRScheduler::state_dict() const {
  std::map<std::string, double> out{{"last_epoch", static_cast<double>(last_epoch_)}};
  for (size_t g = 0; g < base_lrs_.size(); ++g) out["base_lrs." + std::to_string(g)] = base_lrs_[g];
  return out;
}

void LRScheduler::load_state_dict(const std::map<std::string, double>& state_dict) {
  auto read = [&](const std::string& key) {
    auto it = state_dict.find(key);
    EMBER_CHECK(it != state_dict.end(), "LRScheduler::load_state_dict", "the state dict lacks '", key, "'");
    return it->second;
  };
  std::vector<double> base_lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) base_lrs.push_back(read("base_lrs." + std::to_string(g)));
  last_epoch_ = static_cast<int64_t>(read("last_epoch"));
  base_lrs_ = std::move(base_lrs);
  last_lrs_ = get_lrs();
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lrs() const {
  const double factor = std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_));
  return scaled(base_lrs_, factor);
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  for (int64_t milestone : milestones_)
    EMBER_CHECK(milestone >= 0, "MultiStepLR", "milestones must be non-negative, got ", milestones_);
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lrs() const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  const double factor = std::pow(gamma_, static_cast<double>(passed));
  return scaled(base_lrs_, factor);
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lrs() const {
  const double factor = std::pow(gamma_, static_cast<double>(last_epoch_));
  return scaled(base_lrs_, factor);
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(optimizer), lr_lambda_(std::move(lr_lambda)) {
  EMBER_CHECK(lr_lambda_ != nullptr, "LambdaLR", "lr_lambda must be a function");
  initial_step();
}

std::vector<double> LambdaLR::get_lrs() const {
  const double factor = lr_lambda_(last_epoch_);
  return scaled(base_lrs_, factor);
}

namespace {
// eta_min + (base - eta_min) * (1 + cos(pi * progress)) / 2
double cosine_between(double base, double eta_min, double progress) {
  return eta_min + (base - eta_min) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}
}  // namespace

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lrs() const {
  std::vector<double> lrs;
  const double progress = static_cast<double>(last_epoch_) / static_cast<double>(T_max_);
  for (double base : base_lrs_) lrs.push_back(cosine_between(base, eta_min_, progress));
  return lrs;
}

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double eta_min)
    : LRScheduler(optimizer), warmup_steps_(warmup_steps), total_steps_(total_steps), eta_min_(eta_min) {
  EMBER_CHECK(warmup_steps >= 0 && total_steps > warmup_steps, "WarmupCosineLR", "need 0 <= warmup_steps (",
              warmup_steps, ") < total_steps (", total_steps, ")");
  initial_step();
}

std::vector<double> WarmupCosineLR::get_lrs() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    if (last_epoch_ < warmup_steps_) {
      lrs.push_back(base * static_cast<double>(last_epoch_) / static_cast<double>(warmup_steps_));
    } else {
      const double progress = std::min(
          1.0, static_cast<double>(last_epoch_ - warmup_steps_) / static_cast<double>(total_steps_ - warmup_steps_));
      lrs.push_back(cosine_between(base, eta_min_, progress));
    }
  }
  return lrs;
}

}  // namespace ember::optim
