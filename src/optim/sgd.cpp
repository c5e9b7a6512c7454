// SGD with momentum, dampening, Nesterov, weight decay and maximize (torch/optim/sgd.py).
#include "ember/optim/sgd.h"

#include "ember/autograd.h"
#include "ember/graph.h"
#include "optim/state_dict_io.h"

namespace ember::optim {

std::map<std::string, double> SGDOptions::hyperparameters() const {
  return {{"lr", lr()},
          {"momentum", momentum()},
          {"dampening", dampening()},
          {"weight_decay", weight_decay()},
          {"nesterov", nesterov() ? 1.0 : 0.0},
          {"maximize", maximize() ? 1.0 : 0.0}};
}

void SGDOptions::set_hyperparameters(const std::map<std::string, double>& values) {
  const char* op = "SGD::load_state_dict";
  lr(detail::require_scalar(values, "lr", op));
  momentum(detail::require_scalar(values, "momentum", op));
  dampening(detail::require_scalar(values, "dampening", op));
  weight_decay(detail::require_scalar(values, "weight_decay", op));
  nesterov(detail::require_scalar(values, "nesterov", op) != 0);
  maximize(detail::require_scalar(values, "maximize", op) != 0);
}

std::unique_ptr<OptimizerParamState> SGDParamState::clone() const {
  auto copy = std::make_unique<SGDParamState>(*this);
  if (momentum_buffer().defined()) copy->momentum_buffer(momentum_buffer().clone());
  return copy;
}

void SGDParamState::save(const std::string& prefix, OptimizerStateDict& out) const {
  detail::save_state_tensor(out, prefix + "momentum_buffer", momentum_buffer());
}

void SGDParamState::load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) {
  if (in.tensors.count(prefix + "momentum_buffer"))
    momentum_buffer(detail::load_state_tensor(in, prefix + "momentum_buffer", param));
}

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<SGDOptions>(defaults)) {
  validate_all();
}

void SGD::validate(const OptimizerOptions& base) const {
  const auto& o = static_cast<const SGDOptions&>(base);
  EMBER_CHECK(o.lr() >= 0, "SGD", "invalid learning rate: ", o.lr());
  EMBER_CHECK(o.momentum() >= 0, "SGD", "invalid momentum value: ", o.momentum());
  EMBER_CHECK(o.weight_decay() >= 0, "SGD", "invalid weight_decay value: ", o.weight_decay());
  EMBER_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0), "SGD",
              "nesterov momentum requires a momentum and zero dampening (momentum=", o.momentum(),
              ", dampening=", o.dampening(), ")");
}

std::unique_ptr<OptimizerParamState> SGD::make_param_state() const { return std::make_unique<SGDParamState>(); }

Tensor SGD::step(LossClosure closure) {
  return update_parameters<SGDOptions>(closure, [this](Tensor& param, const SGDOptions& o) {
    Tensor grad = o.maximize() ? -param.grad() : param.grad();
    if (o.weight_decay() != 0) grad = grad.add(param, o.weight_decay());
    if (o.momentum() != 0) {
      auto& state = state_for<SGDParamState>(param);
      if (!state.momentum_buffer().defined()) {
        // A capture would record the first step's copy, and every replay would restart the momentum.
        EMBER_CHECK(!is_current_stream_capturing(), "SGD::step", "the momentum buffer of a parameter of shape ",
                    param.sizes(), " would be created inside the graph capture; run warm-up steps before capturing");
        state.momentum_buffer(grad.clone());
      } else {
        state.momentum_buffer().mul_(o.momentum()).add_(grad, 1 - o.dampening());
      }
      grad = o.nesterov() ? grad.add(state.momentum_buffer(), o.momentum()) : state.momentum_buffer();
    }
    param.add_(grad, -o.lr());
  });
}

}  // namespace ember::optim
