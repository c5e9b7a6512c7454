// Adam and AdamW with PyTorch's single-tensor update (torch/optim/adam.py), per step t:
//   g = grad (negated when maximize)
//   Adam:  g = g + weight_decay * param          AdamW: param *= 1 - lr * weight_decay
//   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
//   v_hat = max(v_hat, v) with amsgrad (and used in place of v below)
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//   param -= (lr / (1 - beta1^t)) * m / denom
// capturable(true) (PyTorch's option of that name) keeps t in a float64 tensor and computes
// the bias corrections with tensor ops, so that a graph replay (ember/graph.h) advances t;
// the same values round as the host formulas do, except the last step, which runs
// param -= (m / denom) * step_size instead of an add with alpha. Required when capturing.
#pragma once
#include <tuple>

#include "ember/arg.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdamOptions : public OptimizerOptions {
  using betas_t = std::tuple<double, double>;
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);
  EMBER_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  // L2 penalty: weight_decay * param is added to the gradient.
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, amsgrad) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_ARG(bool, capturable) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamOptions>(*this); }
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& values) override;
};

struct AdamWOptions : public OptimizerOptions {
  using betas_t = std::tuple<double, double>;
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);
  EMBER_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  // Decoupled decay: param *= 1 - lr * weight_decay before the Adam update.
  EMBER_ARG(double, weight_decay) = 1e-2;
  EMBER_ARG(bool, amsgrad) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_ARG(bool, capturable) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamWOptions>(*this); }
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& values) override;
};

struct AdamParamState : public OptimizerParamState {
  EMBER_ARG(int64_t, step) = 0;
  EMBER_ARG(Tensor, exp_avg) = {};
  EMBER_ARG(Tensor, exp_avg_sq) = {};
  EMBER_ARG(Tensor, max_exp_avg_sq) = {};  // amsgrad only
  // capturable only: the step count as a float64 0-dim tensor (step() is then not advanced).
  EMBER_ARG(Tensor, step_tensor) = {};

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(const std::string& prefix, OptimizerStateDict& out) const override;
  void load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) override;
};
using AdamWParamState = AdamParamState;

namespace detail {

// Adam and AdamW are one optimizer: AdamWOptions decouple the weight decay, AdamOptions add
// it to the gradient (the update above).
template <typename Options>
class AdamFamily : public Optimizer {
 public:
  AdamFamily(std::vector<OptimizerParamGroup> param_groups, Options defaults = {});
  AdamFamily(std::vector<Tensor> params, Options defaults = {})
      : AdamFamily(std::vector<OptimizerParamGroup>{std::move(params)}, std::move(defaults)) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
  void validate(const OptimizerOptions& options) const override;
};
extern template class AdamFamily<AdamOptions>;
extern template class AdamFamily<AdamWOptions>;

}  // namespace detail

class Adam : public detail::AdamFamily<AdamOptions> {
 public:
  using AdamFamily::AdamFamily;
};

class AdamW : public detail::AdamFamily<AdamWOptions> {
 public:
  using AdamFamily::AdamFamily;
};

}  // namespace ember::optim
