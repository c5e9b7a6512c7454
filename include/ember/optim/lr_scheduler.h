// Learning-rate schedulers. As in PyTorch, constructing a scheduler sets every group's lr
// to its value at epoch 0; each step() advances one epoch and sets the lr of the new
// epoch. Values come from closed forms of each group's initial lr (base_lr), so an lr
// changed by hand is overwritten on the next step.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  void step();
  // The lr of each group after the latest step.
  std::vector<double> get_last_lr() const { return last_lrs_; }
  int64_t last_epoch() const noexcept { return last_epoch_; }
  // {"last_epoch", "base_lrs.<g>"}, to resume a schedule.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state_dict);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Sets the lrs of epoch 0; derived constructors call it once their fields are set.
  void initial_step();
  // The lr of every group at epoch last_epoch_.
  virtual std::vector<double> get_lrs() const = 0;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;

 private:
  void apply_lrs();
  std::vector<double> last_lrs_;
};

// lr = base_lr * gamma^floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 private:
  std::vector<double> get_lrs() const override;
  int64_t step_size_;
  double gamma_;
};

// lr = base_lr * gamma^(number of milestones <= epoch) (torch.optim.lr_scheduler.MultiStepLR;
// a milestone listed twice counts twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 private:
  std::vector<double> get_lrs() const override;
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr = base_lr * gamma^epoch (torch.optim.lr_scheduler.ExponentialLR).
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 private:
  std::vector<double> get_lrs() const override;
  double gamma_;
};

// lr = base_lr * lr_lambda(epoch).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t epoch)> lr_lambda);

 private:
  std::vector<double> get_lrs() const override;
  std::function<double(int64_t)> lr_lambda_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 private:
  std::vector<double> get_lrs() const override;
  int64_t T_max_;
  double eta_min_;
};

// Linear warmup, then cosine decay (the usual transformer schedule):
//   epoch < warmup_steps:  lr = base_lr * epoch / warmup_steps
//   otherwise:             p = min(1, (epoch - warmup_steps) / (total_steps - warmup_steps)),
//                          lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * p)) / 2
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double eta_min = 0);

 private:
  std::vector<double> get_lrs() const override;
  int64_t warmup_steps_;
  int64_t total_steps_;
  double eta_min_;
};

}  // namespace ember::optim
