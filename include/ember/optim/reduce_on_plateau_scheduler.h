// Lowers the lr when a metric stops improving (libtorch's ReduceLROnPlateauScheduler, with
// the behaviour of torch.optim.lr_scheduler.ReduceLROnPlateau). Each step(metric): the
// metric improves on the best so far when, for mode min, metric < best * (1 - threshold)
// (rel) or metric < best - threshold (abs) (max: > best * (1 + threshold), > best +
// threshold); after more than `patience` steps without improvement every group's lr
// becomes max(lr * factor, min_lr) unless that changes it by eps or less, and `cooldown`
// steps follow in which bad steps are not counted.
// Where ember differs from libtorch: factor, min_lr and the metric are doubles (libtorch:
// float), the best value starts at +-infinity, and max mode with abs threshold compares
// against best + threshold, as PyTorch's Python scheduler does; no verbose printing.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

class ReduceLROnPlateauScheduler {
 public:
  enum SchedulerMode { min, max };
  enum ThresholdMode { rel, abs };

  // min_lr: empty (0 for every group), or one value per group.
  explicit ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode = min, double factor = 0.1,
                                      int patience = 10, double threshold = 1e-4, ThresholdMode threshold_mode = rel,
                                      int cooldown = 0, const std::vector<double>& min_lr = {}, double eps = 1e-8);
  virtual ~ReduceLROnPlateauScheduler() = default;

  void step(double metric);
  // The lr of each group after the latest step.
  std::vector<double> get_last_lr() const;
  // {"best", "num_bad_epochs", "cooldown_counter", "last_epoch"}, to resume.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state_dict);

 private:
  bool is_better(double metric) const;
  void reduce_lr();

  Optimizer& optimizer_;
  SchedulerMode mode_;
  double factor_;
  int patience_;
  double threshold_;
  ThresholdMode threshold_mode_;
  int cooldown_;
  std::vector<double> min_lrs_;
  double eps_;
  double best_;
  int cooldown_counter_ = 0;
  int num_bad_epochs_ = 0;
  int64_t last_epoch_ = 0;
};

}  // namespace ember::optim
