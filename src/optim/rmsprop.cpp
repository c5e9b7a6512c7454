// RMSprop: libtorch's update with every option (alpha, eps, weight decay, momentum, centered).
#include "ember/optim/rmsprop.h"

#include "ember/autograd.h"
#include "ember/functions.h"
#include "optim/state_dict_io.h"

namespace ember::optim {

std::map<std::string, double> RMSpropOptions::hyperparameters() const {
  return {{"lr", lr()},
          {"alpha", alpha()},
          {"eps", eps()},
          {"weight_decay", weight_decay()},
          {"momentum", momentum()},
          {"centered", centered() ? 1.0 : 0.0}};
}

void RMSpropOptions::set_hyperparameters(const std::map<std::string, double>& values) {
  const char* op = "RMSprop::load_state_dict";
  lr(detail::require_scalar(values, "lr", op));
  alpha(detail::require_scalar(values, "alpha", op));
  eps(detail::require_scalar(values, "eps", op));
  weight_decay(detail::require_scalar(values, "weight_decay", op));
  momentum(detail::require_scalar(values, "momentum", op));
  centered(detail::require_scalar(values, "centered", op) != 0);
}

std::unique_ptr<OptimizerParamState> RMSpropParamState::clone() const {
  auto copy = std::make_unique<RMSpropParamState>(*this);
  for (Tensor* t : {&copy->square_avg(), &copy->momentum_buffer(), &copy->grad_avg()})
    if (t->defined()) *t = t->clone();
  return copy;
}

void RMSpropParamState::save(const std::string& prefix, OptimizerStateDict& out) const {
  out.scalars[prefix + "step"] = static_cast<double>(step());
  detail::save_state_tensor(out, prefix + "square_avg", square_avg());
  detail::save_state_tensor(out, prefix + "momentum_buffer", momentum_buffer());
  detail::save_state_tensor(out, prefix + "grad_avg", grad_avg());
}

void RMSpropParamState::load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) {
  step(static_cast<int64_t>(detail::require_scalar(in.scalars, prefix + "step", "RMSprop::load_state_dict")));
  square_avg(detail::load_state_tensor(in, prefix + "square_avg", param));
  if (in.tensors.count(prefix + "momentum_buffer"))
    momentum_buffer(detail::load_state_tensor(in, prefix + "momentum_buffer", param));
  if (in.tensors.count(prefix + "grad_avg")) grad_avg(detail::load_state_tensor(in, prefix + "grad_avg", param));
}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<RMSpropOptions>(defaults)) {
  validate_all();
}

void RMSprop::validate(const OptimizerOptions& base) const {
  const auto& o = static_cast<const RMSpropOptions&>(base);
  EMBER_CHECK(o.lr() >= 0, "RMSprop", "invalid learning rate: ", o.lr());
  EMBER_CHECK(o.eps() >= 0, "RMSprop", "invalid epsilon value: ", o.eps());
  EMBER_CHECK(o.momentum() >= 0, "RMSprop", "invalid momentum value: ", o.momentum());
  EMBER_CHECK(o.weight_decay() >= 0, "RMSprop", "invalid weight_decay value: ", o.weight_decay());
  EMBER_CHECK(o.alpha() >= 0, "RMSprop", "invalid alpha value: ", o.alpha());
}

std::unique_ptr<OptimizerParamState> RMSprop::make_param_state() const {
  return std::make_unique<RMSpropParamState>();
}

Tensor RMSprop::step(LossClosure closure) {
  refuse_graph_capture("RMSprop");
  return update_parameters<RMSpropOptions>(closure, [this](Tensor& param, const RMSpropOptions& o) {
    auto& state = state_for<RMSpropParamState>(param);
    if (!state.square_avg().defined()) state.square_avg(zeros_like(param));
    // Buffers switched on after the first step start from zero, as libtorch's would.
    if (o.momentum() > 0 && !state.momentum_buffer().defined()) state.momentum_buffer(zeros_like(param));
    if (o.centered() && !state.grad_avg().defined()) state.grad_avg(zeros_like(param));
    state.step(state.step() + 1);

    Tensor grad = o.weight_decay() != 0 ? param.grad().add(param, o.weight_decay()) : param.grad();
    state.square_avg().mul_(o.alpha()).add_(grad * grad, 1 - o.alpha());
    Tensor avg;
    if (o.centered()) {
      state.grad_avg().mul_(o.alpha()).add_(grad, 1 - o.alpha());
      avg = (state.square_avg() - state.grad_avg() * state.grad_avg()).sqrt_().add_(o.eps());
    } else {
      avg = state.square_avg().sqrt().add_(o.eps());
    }
    if (o.momentum() > 0) {
      state.momentum_buffer().mul_(o.momentum()).add_(grad / avg);
      param.add_(state.momentum_buffer(), -o.lr());
    } else {
      param.add_(grad / avg, -o.lr());
    }
  });
}

}  // namespace ember::optim
