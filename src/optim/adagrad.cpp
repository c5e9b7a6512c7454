// Adagrad: lr decay, weight decay and the initial accumulator, as PyTorch.
#include "ember/optim/adagrad.h"

#include "ember/autograd.h"
#include "ember/functions.h"
#include "optim/state_dict_io.h"

namespace ember::optim {

std::map<std::string, double> AdagradOptions::hyperparameters() const {
  return {{"lr", lr()},
          {"lr_decay", lr_decay()},
          {"weight_decay", weight_decay()},
          {"initial_accumulator_value", initial_accumulator_value()},
          {"eps", eps()}};
}

void AdagradOptions::set_hyperparameters(const std::map<std::string, double>& values) {
  const char* op = "Adagrad::load_state_dict";
  lr(detail::require_scalar(values, "lr", op));
  lr_decay(detail::require_scalar(values, "lr_decay", op));
  weight_decay(detail::require_scalar(values, "weight_decay", op));
  initial_accumulator_value(detail::require_scalar(values, "initial_accumulator_value", op));
  eps(detail::require_scalar(values, "eps", op));
}

std::unique_ptr<OptimizerParamState> AdagradParamState::clone() const {
  auto copy = std::make_unique<AdagradParamState>(*this);
  if (sum().defined()) copy->sum(sum().clone());
  return copy;
}

void AdagradParamState::save(const std::string& prefix, OptimizerStateDict& out) const {
  out.scalars[prefix + "step"] = static_cast<double>(step());
  detail::save_state_tensor(out, prefix + "sum", sum());
}

void AdagradParamState::load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) {
  step(static_cast<int64_t>(detail::require_scalar(in.scalars, prefix + "step", "Adagrad::load_state_dict")));
  sum(detail::load_state_tensor(in, prefix + "sum", param));
}

Adagrad::Adagrad(std::vector<OptimizerParamGroup> param_groups, AdagradOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdagradOptions>(defaults)) {
  validate_all();
  for (auto& group : param_groups_) {
    for (const Tensor& param : group.params()) state_of(param, static_cast<const AdagradOptions&>(group.options()));
  }
}

void Adagrad::validate(const OptimizerOptions& base) const {
  const auto& o = static_cast<const AdagradOptions&>(base);
  EMBER_CHECK(o.lr() >= 0, "Adagrad", "invalid learning rate: ", o.lr());
  EMBER_CHECK(o.lr_decay() >= 0, "Adagrad", "invalid lr_decay value: ", o.lr_decay());
  EMBER_CHECK(o.weight_decay() >= 0, "Adagrad", "invalid weight_decay value: ", o.weight_decay());
  EMBER_CHECK(o.initial_accumulator_value() >= 0, "Adagrad",
              "invalid initial_accumulator_value value: ", o.initial_accumulator_value());
  EMBER_CHECK(o.eps() >= 0, "Adagrad", "invalid epsilon value: ", o.eps());
}

std::unique_ptr<OptimizerParamState> Adagrad::make_param_state() const {
  return std::make_unique<AdagradParamState>();
}

AdagradParamState& Adagrad::state_of(const Tensor& param, const AdagradOptions& o) {
  auto& state = state_for<AdagradParamState>(param);
  if (!state.sum().defined()) {
    NoGradGuard no_grad;
    state.sum(full_like(param, o.initial_accumulator_value()));
  }
  return state;
}

Tensor Adagrad::step(LossClosure closure) {
  refuse_graph_capture("Adagrad");
  return update_parameters<AdagradOptions>(closure, [this](Tensor& param, const AdagradOptions& o) {
    auto& state = state_of(param, o);
    state.step(state.step() + 1);
    Tensor grad = o.weight_decay() != 0 ? param.grad().add(param, o.weight_decay()) : param.grad();
    const double clr = o.lr() / (1 + static_cast<double>(state.step() - 1) * o.lr_decay());
    state.sum().add_(grad * grad);
    param.add_(grad / state.sum().sqrt().add_(o.eps()), -clr);
  });
}

}  // namespace ember::optim
