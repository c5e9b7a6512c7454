// Adagrad with PyTorch's update (torch/optim/adagrad.py, libtorch's adagrad.cpp), per step t:
//   g = grad + weight_decay * param
//   clr = lr / (1 + (t - 1) * lr_decay)
//   sum = sum + g * g          (sum starts at initial_accumulator_value)
//   param -= clr * g / (sqrt(sum) + eps)
// The state of every parameter is made at construction, as in libtorch; ember fills a group's
// sum from that group's initial_accumulator_value (libtorch uses the defaults' for all).
#pragma once
#include "ember/arg.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdagradOptions : public OptimizerOptions {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);
  EMBER_ARG(double, lr_decay) = 0;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(double, initial_accumulator_value) = 0;
  EMBER_ARG(double, eps) = 1e-10;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdagradOptions>(*this); }
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& values) override;
};

struct AdagradParamState : public OptimizerParamState {
  EMBER_ARG(Tensor, sum) = {};
  EMBER_ARG(int64_t, step) = 0;

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(const std::string& prefix, OptimizerStateDict& out) const override;
  void load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) override;
};

class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<OptimizerParamGroup> param_groups, AdagradOptions defaults = {});
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {})
      : Adagrad(std::vector<OptimizerParamGroup>{std::move(params)}, std::move(defaults)) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
  void validate(const OptimizerOptions& options) const override;

 private:
  // The state of `param` in a group with options `o`, made (sum = initial_accumulator_value)
  // when absent.
  AdagradParamState& state_of(const Tensor& param, const AdagradOptions& o);
};

}  // namespace ember::optim
