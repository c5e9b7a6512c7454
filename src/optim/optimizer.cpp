// Optimizer base: parameter groups, gradients, and flat state dicts.
#include "ember/optim/optimizer.h"

#include <string>
#include <unordered_set>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/graph.h"
#include "ember/warning.h"
#include "optim/state_dict_io.h"

namespace ember::optim {

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  EMBER_CHECK(options_ != nullptr, "OptimizerParamGroup", "this group has no options yet (add it to an optimizer)");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  EMBER_CHECK(options_ != nullptr, "OptimizerParamGroup", "this group has no options yet (add it to an optimizer)");
  return *options_;
}

std::unique_ptr<OptimizerOptions> OptimizerOptions::clone() const {
  EMBER_FAIL("OptimizerOptions", "clone() is not implemented; derive the options from "
             "OptimizerCloneableOptions<YourOptions> instead of OptimizerOptions to inherit it");
}
double OptimizerOptions::get_lr() const {
  EMBER_FAIL("OptimizerOptions", "get_lr() is not overridden in this subclass of OptimizerOptions");
}
void OptimizerOptions::set_lr(double) {
  EMBER_FAIL("OptimizerOptions", "set_lr() is not overridden in this subclass of OptimizerOptions");
}
std::map<std::string, double> OptimizerOptions::hyperparameters() const {
  EMBER_FAIL("OptimizerOptions", "hyperparameters() (needed by state_dict) is not overridden in this subclass of "
             "OptimizerOptions");
}
void OptimizerOptions::set_hyperparameters(const std::map<std::string, double>&) {
  EMBER_FAIL("OptimizerOptions", "set_hyperparameters() (needed by load_state_dict) is not overridden in this "
             "subclass of OptimizerOptions");
}

std::unique_ptr<OptimizerParamState> Optimizer::make_param_state() const {
  EMBER_FAIL("Optimizer", "this optimizer does not define make_param_state(), so it has no state to load");
}

void Optimizer::validate(const OptimizerOptions&) const {}

void Optimizer::add_parameters(const std::vector<Tensor>& parameters) {
  EMBER_WARN("Optimizer::add_parameters() will be removed in PyTorch 1.6; use add_param_group()");
  EMBER_CHECK(!param_groups_.empty(), "add_parameters", "the optimizer has no parameter group to add to");
  std::unordered_set<const void*> existing;
  for (const auto& group : param_groups_) {
    for (const Tensor& p : group.params()) existing.insert(p.unsafeGetTensorImpl());
  }
  for (const Tensor& p : parameters) {
    EMBER_CHECK(p.defined() && p.is_leaf(), "add_parameters", "can only add defined leaf tensors");
    EMBER_CHECK(existing.insert(p.unsafeGetTensorImpl()).second, "add_parameters",
                "some parameters appear in more than one parameter group (a parameter of shape ", p.sizes(), ")");
  }
  auto& params = param_groups_[0].params();
  params.insert(params.end(), parameters.begin(), parameters.end());
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  for (const auto& group : param_groups) append_group(group);
}

void Optimizer::validate_all() const {
  validate(*defaults_);
  for (const auto& group : param_groups_) validate(group.options());
}

void Optimizer::append_group(const OptimizerParamGroup& param_group) {
  std::unordered_set<const void*> existing;
  for (const auto& group : param_groups_) {
    for (const Tensor& p : group.params()) existing.insert(p.unsafeGetTensorImpl());
  }
  for (const Tensor& p : param_group.params()) {
    EMBER_CHECK(p.defined(), "Optimizer", "parameter group ", param_groups_.size(), " holds an undefined tensor");
    EMBER_CHECK(p.is_leaf(), "Optimizer", "can't optimize a non-leaf tensor (shape ", p.sizes(), ") in group ",
                param_groups_.size());
    EMBER_CHECK(existing.insert(p.unsafeGetTensorImpl()).second, "Optimizer",
                "some parameters appear in more than one parameter group (a parameter of shape ", p.sizes(),
                ", again in group ", param_groups_.size(), ")");
  }
  param_groups_.emplace_back(param_group.params(),
                             param_group.has_options() ? param_group.options().clone() : defaults_->clone());
}

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
  if (param_group.has_options()) validate(param_group.options());
  append_group(param_group);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.mutable_grad() = Tensor();
      } else {
        p.mutable_grad() = p.grad().detach();
        p.mutable_grad().zero_();
      }
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& group : param_groups_) out.insert(out.end(), group.params().begin(), group.params().end());
  return out;
}

size_t Optimizer::size() const { return parameters().size(); }

Tensor Optimizer::run_closure(const LossClosure& closure) {
  if (!closure) return {};
  AutoGradMode enable_grad(true);
  return closure();
}

Tensor Optimizer::update_each_parameter(
    const LossClosure& closure, const std::function<void(Tensor& param, const OptimizerOptions& options)>& update) {
  Tensor loss = run_closure(closure);
  NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const OptimizerOptions& options = group.options();
    for (Tensor& param : group.params()) {
      if (param.grad().defined()) update(param, options);
    }
  }
  return loss;
}

void Optimizer::refuse_graph_capture(const char* optimizer) {
  EMBER_CHECK(!is_current_stream_capturing(), (std::string(optimizer) + "::step").c_str(), optimizer,
              " cannot be captured in a graph (its step count is a host value); use Adam, AdamW or SGD");
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict out;
  int64_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& group = param_groups_[g];
    const std::string group_prefix = "param_groups." + std::to_string(g) + ".";
    std::vector<int64_t> indices;
    for (const Tensor& p : group.params()) {
      auto it = state_.find(p.unsafeGetTensorImpl());
      if (it != state_.end()) it->second->save("state." + std::to_string(index) + ".", out);
      indices.push_back(index++);
    }
    out.tensors[group_prefix + "params"] = tensor(indices);
    for (const auto& [name, value] : group.options().hyperparameters()) out.scalars[group_prefix + name] = value;
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerStateDict& state_dict) {
  // Check the grouping first so that a mismatch leaves this optimizer untouched.
  size_t saved_groups = 0;
  while (state_dict.tensors.count("param_groups." + std::to_string(saved_groups) + ".params")) ++saved_groups;
  EMBER_CHECK(saved_groups == param_groups_.size(), "Optimizer::load_state_dict", "the state dict has ",
              saved_groups, " parameter groups, this optimizer has ", param_groups_.size());
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const Tensor& saved = state_dict.tensors.at("param_groups." + std::to_string(g) + ".params");
    EMBER_CHECK(saved.numel() == static_cast<int64_t>(param_groups_[g].params().size()), "Optimizer::load_state_dict",
                "parameter group ", g, " has ", saved.numel(), " parameters in the state dict, ",
                param_groups_[g].params().size(), " in this optimizer");
  }

  std::vector<std::unique_ptr<OptimizerOptions>> options;
  std::unordered_map<void*, std::unique_ptr<OptimizerParamState>> states;
  int64_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const std::string group_prefix = "param_groups." + std::to_string(g) + ".";
    options.push_back(param_groups_[g].options().clone());
    options.back()->set_hyperparameters(detail::scalars_with_prefix(state_dict, group_prefix));
    validate(*options.back());
    for (const Tensor& p : param_groups_[g].params()) {
      const std::string prefix = "state." + std::to_string(index++) + ".";
      if (!detail::has_prefix(state_dict, prefix)) continue;
      auto state = make_param_state();
      state->load(prefix, state_dict, p);
      states[p.unsafeGetTensorImpl()] = std::move(state);
    }
  }
  for (size_t g = 0; g < param_groups_.size(); ++g) param_groups_[g].set_options(std::move(options[g]));
  state_ = std::move(states);
}

}  // namespace ember::optim
