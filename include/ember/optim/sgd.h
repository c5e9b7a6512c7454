// Stochastic gradient descent with PyTorch's update (torch/optim/sgd.py):
//   g = grad (negated when maximize) + weight_decay * param
//   buf = g on the first step, else momentum * buf + (1 - dampening) * g
//   g = g + momentum * buf (nesterov) or buf (momentum != 0)
//   param -= lr * g
#pragma once
#include "ember/arg.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct SGDOptions : public OptimizerOptions {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);
  EMBER_ARG(double, momentum) = 0;
  EMBER_ARG(double, dampening) = 0;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, nesterov) = false;
  EMBER_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& values) override;
};

struct SGDParamState : public OptimizerParamState {
  EMBER_ARG(Tensor, momentum_buffer) = {};

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(const std::string& prefix, OptimizerStateDict& out) const override;
  void load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) override;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults);
  SGD(std::vector<Tensor> params, SGDOptions defaults) : SGD(std::vector<OptimizerParamGroup>{std::move(params)}, std::move(defaults)) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
  void validate(const OptimizerOptions& options) const override;
};

}  // namespace ember::optim
