// Adam and AdamW: one update routine (torch/optim/adam.py, _single_tensor_adam) with the
// weight decay coupled (Adam, L2 in the gradient) or decoupled (AdamW).
#include "ember/optim/adam.h"

#include <cmath>
#include <type_traits>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/graph.h"
#include "ops/optimizer_update.h"
#include "optim/state_dict_io.h"

namespace ember::optim {
namespace {

struct AdamHyperparameters {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, capturable, decoupled_weight_decay;
};

// AdamW's options decouple the weight decay; AdamOptions add it to the gradient.
template <typename Options>
constexpr bool kDecoupledWeightDecay = std::is_same_v<Options, AdamWOptions>;

template <typename Options>
constexpr const char* kOptimizerName = kDecoupledWeightDecay<Options> ? "AdamW" : "Adam";

template <typename Options>
AdamHyperparameters hyperparameters_of(const Options& o) {
  return {o.lr(),      std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(),
          o.weight_decay(), o.amsgrad(), o.maximize(), o.capturable(), kDecoupledWeightDecay<Options>};
}

template <typename Options>
std::map<std::string, double> named_hyperparameters(const Options& o) {
  return {{"lr", o.lr()},
          {"beta1", std::get<0>(o.betas())},
          {"beta2", std::get<1>(o.betas())},
          {"eps", o.eps()},
          {"weight_decay", o.weight_decay()},
          {"amsgrad", o.amsgrad() ? 1.0 : 0.0},
          {"maximize", o.maximize() ? 1.0 : 0.0},
          {"capturable", o.capturable() ? 1.0 : 0.0}};
}

template <typename Options>
void set_named_hyperparameters(Options& o, const std::map<std::string, double>& values, const char* op) {
  o.lr(detail::require_scalar(values, "lr", op));
  const double beta1 = detail::require_scalar(values, "beta1", op);
  o.betas(std::make_tuple(beta1, detail::require_scalar(values, "beta2", op)));
  o.eps(detail::require_scalar(values, "eps", op));
  o.weight_decay(detail::require_scalar(values, "weight_decay", op));
  o.amsgrad(detail::require_scalar(values, "amsgrad", op) != 0);
  o.maximize(detail::require_scalar(values, "maximize", op) != 0);
  // Absent from checkpoints written before the option existed.
  if (values.count("capturable")) o.capturable(values.at("capturable") != 0);
}

template <typename Options>
void validate_adam(const Options& o, const char* op) {
  const auto [beta1, beta2] = o.betas();
  EMBER_CHECK(o.lr() >= 0, op, "invalid learning rate: ", o.lr());
  EMBER_CHECK(o.eps() >= 0, op, "invalid epsilon value: ", o.eps());
  EMBER_CHECK(beta1 >= 0 && beta1 < 1, op, "invalid beta parameter at index 0: ", beta1);
  EMBER_CHECK(beta2 >= 0 && beta2 < 1, op, "invalid beta parameter at index 1: ", beta2);
  EMBER_CHECK(o.weight_decay() >= 0, op, "invalid weight_decay value: ", o.weight_decay());
}

// self += weight * (end - self), with PyTorch's lerp formula (the mirrored form for
// weight >= 0.5 keeps the result exact at weight 1).
void lerp_(Tensor& self, const Tensor& end, double weight) {
  if (std::abs(weight) < 0.5) {
    self.add_((end - self).mul_(weight));
  } else {
    self.copy_(end - (end - self).mul_(1 - weight));
  }
}

// The last step with the bias corrections as tensors of the step count (capturable). Each
// float64 value equals its host counterpart in adam_update; the float32 ops see it rounded
// to float32 as they see a Scalar.
void capturable_update(Tensor& param, AdamParamState& state, const Tensor& second_moment, const AdamHyperparameters& h) {
  const Tensor& step = state.step_tensor();
  Tensor bias_correction1 = -pow(h.beta1, step) + 1;
  Tensor bias_correction2_sqrt = (-pow(h.beta2, step) + 1).sqrt();
  Tensor step_size = h.lr / bias_correction1;
  Tensor denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(h.eps);
  param.sub_(state.exp_avg() / denom * step_size);
}

void adam_update(Tensor& param, AdamParamState& state, const AdamHyperparameters& h) {
  const char* op = h.decoupled_weight_decay ? "AdamW::step" : "Adam::step";
  // A capture would record the state's initial fill, and every replay would start it afresh.
  const bool state_missing = !state.exp_avg().defined() || (h.capturable && !state.step_tensor().defined()) ||
                             (h.amsgrad && !state.max_exp_avg_sq().defined());
  EMBER_CHECK(!state_missing || !is_current_stream_capturing(), op, "the optimizer state of a parameter of shape ",
              param.sizes(), " would be created inside the graph capture; run warm-up steps before capturing");
  if (!state.exp_avg().defined()) {
    state.exp_avg(zeros_like(param));
    state.exp_avg_sq(zeros_like(param));
    if (h.amsgrad) state.max_exp_avg_sq(zeros_like(param));
  }
  if (h.capturable) {
    if (!state.step_tensor().defined()) state.step_tensor(full({}, static_cast<double>(state.step()), kFloat64));
    state.step_tensor().add_(1);
  } else {
    EMBER_CHECK(!is_current_stream_capturing(), op,
                "a graph capture would freeze the step count (a host integer) and the bias corrections; "
                "construct the optimizer with capturable(true) to capture its step");
    state.step(state.step() + 1);
  }
  const double step = static_cast<double>(state.step());
  const double bias_correction1 = 1 - std::pow(h.beta1, step);
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(h.beta2, step));
  const double step_size = h.lr / bias_correction1;
  // The same float32 operations in one pass (src/cpu/optimizer.h), where the tensors allow.
  if (!h.amsgrad && !h.capturable &&
      ops::adam_step_fuses(param, param.grad(), state.exp_avg(), state.exp_avg_sq())) {
    ops::adam_step_(param, param.grad(), state.exp_avg(), state.exp_avg_sq(),
                    {h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.decoupled_weight_decay, h.maximize,
                     bias_correction2_sqrt, step_size});
    return;
  }
  Tensor grad = h.maximize ? -param.grad() : param.grad();
  if (h.weight_decay != 0) {
    if (h.decoupled_weight_decay) {
      param.mul_(1 - h.lr * h.weight_decay);
    } else {
      grad = grad.add(param, h.weight_decay);
    }
  }
  lerp_(state.exp_avg(), grad, 1 - h.beta1);
  state.exp_avg_sq().mul_(h.beta2).add_(grad * grad, 1 - h.beta2);

  Tensor second_moment = state.exp_avg_sq();
  if (h.amsgrad) {
    if (!state.max_exp_avg_sq().defined()) state.max_exp_avg_sq(zeros_like(param));  // amsgrad switched on later
    state.max_exp_avg_sq().copy_(state.max_exp_avg_sq().maximum(state.exp_avg_sq()));
    second_moment = state.max_exp_avg_sq();
  }
  if (h.capturable) {
    capturable_update(param, state, second_moment, h);
    return;
  }
  Tensor denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(h.eps);
  param.add_(state.exp_avg() / denom, -step_size);
}

}  // namespace

std::map<std::string, double> AdamOptions::hyperparameters() const { return named_hyperparameters(*this); }
void AdamOptions::set_hyperparameters(const std::map<std::string, double>& values) {
  set_named_hyperparameters(*this, values, "Adam::load_state_dict");
}
std::map<std::string, double> AdamWOptions::hyperparameters() const { return named_hyperparameters(*this); }
void AdamWOptions::set_hyperparameters(const std::map<std::string, double>& values) {
  set_named_hyperparameters(*this, values, "AdamW::load_state_dict");
}

std::unique_ptr<OptimizerParamState> AdamParamState::clone() const {
  auto copy = std::make_unique<AdamParamState>(*this);
  if (exp_avg().defined()) copy->exp_avg(exp_avg().clone());
  if (exp_avg_sq().defined()) copy->exp_avg_sq(exp_avg_sq().clone());
  if (max_exp_avg_sq().defined()) copy->max_exp_avg_sq(max_exp_avg_sq().clone());
  if (step_tensor().defined()) copy->step_tensor(step_tensor().clone());
  return copy;
}

void AdamParamState::save(const std::string& prefix, OptimizerStateDict& out) const {
  out.scalars[prefix + "step"] = step_tensor().defined() ? step_tensor().item<double>() : static_cast<double>(step());
  detail::save_state_tensor(out, prefix + "exp_avg", exp_avg());
  detail::save_state_tensor(out, prefix + "exp_avg_sq", exp_avg_sq());
  detail::save_state_tensor(out, prefix + "max_exp_avg_sq", max_exp_avg_sq());
}

void AdamParamState::load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) {
  auto step_it = in.scalars.find(prefix + "step");
  EMBER_CHECK(step_it != in.scalars.end(), "Adam::load_state_dict", "the state dict lacks '", prefix, "step'");
  step(static_cast<int64_t>(step_it->second));
  step_tensor(Tensor());  // made again from step() by the next capturable step
  exp_avg(detail::load_state_tensor(in, prefix + "exp_avg", param));
  exp_avg_sq(detail::load_state_tensor(in, prefix + "exp_avg_sq", param));
  if (in.tensors.count(prefix + "max_exp_avg_sq"))
    max_exp_avg_sq(detail::load_state_tensor(in, prefix + "max_exp_avg_sq", param));
}

namespace detail {

template <typename Options>
AdamFamily<Options>::AdamFamily(std::vector<OptimizerParamGroup> param_groups, Options defaults)
    : Optimizer(std::move(param_groups), std::make_unique<Options>(defaults)) {
  validate_all();
}

template <typename Options>
void AdamFamily<Options>::validate(const OptimizerOptions& options) const {
  validate_adam(static_cast<const Options&>(options), kOptimizerName<Options>);
}

template <typename Options>
std::unique_ptr<OptimizerParamState> AdamFamily<Options>::make_param_state() const {
  return std::make_unique<AdamParamState>();
}

template <typename Options>
Tensor AdamFamily<Options>::step(LossClosure closure) {
  return this->template update_parameters<Options>(closure, [this](Tensor& param, const Options& o) {
    adam_update(param, this->template state_for<AdamParamState>(param), hyperparameters_of(o));
  });
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

}  // namespace detail

}  // namespace ember::optim
