// RMSprop with libtorch's update (torch/csrc/api/src/optim/rmsprop.cpp), per step:
//   g = grad + weight_decay * param
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   centered:  grad_avg = alpha * grad_avg + (1 - alpha) * g,
//              avg = sqrt(square_avg - grad_avg * grad_avg) + eps
//   else:      avg = sqrt(square_avg) + eps
//   momentum > 0: buf = momentum * buf + g / avg, param -= lr * buf
//   else:         param -= lr * g / avg
#pragma once
#include "ember/arg.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct RMSpropOptions : public OptimizerOptions {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);
  EMBER_ARG(double, alpha) = 0.99;
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(double, momentum) = 0;
  EMBER_ARG(bool, centered) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RMSpropOptions>(*this); }
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& values) override;
};

struct RMSpropParamState : public OptimizerParamState {
  EMBER_ARG(int64_t, step) = 0;
  EMBER_ARG(Tensor, square_avg) = {};
  EMBER_ARG(Tensor, momentum_buffer) = {};  // momentum > 0 only
  EMBER_ARG(Tensor, grad_avg) = {};         // centered only

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(const std::string& prefix, OptimizerStateDict& out) const override;
  void load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) override;
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults = {});
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {})
      : RMSprop(std::vector<OptimizerParamGroup>{std::move(params)}, std::move(defaults)) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
  void validate(const OptimizerOptions& options) const override;
};

}  // namespace ember::optim
