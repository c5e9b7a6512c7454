#include "optim/state_dict_io.h"

#include "ember/autograd.h"

namespace ember::optim::detail {

std::map<std::string, double> scalars_with_prefix(const OptimizerStateDict& dict, const std::string& prefix) {
  std::map<std::string, double> out;
  for (auto it = dict.scalars.lower_bound(prefix); it != dict.scalars.end() && it->first.starts_with(prefix); ++it)
    out[it->first.substr(prefix.size())] = it->second;
  return out;
}

bool has_prefix(const OptimizerStateDict& dict, const std::string& prefix) {
  auto tensor_it = dict.tensors.lower_bound(prefix);
  auto scalar_it = dict.scalars.lower_bound(prefix);
  return (tensor_it != dict.tensors.end() && tensor_it->first.starts_with(prefix)) ||
         (scalar_it != dict.scalars.end() && scalar_it->first.starts_with(prefix));
}

double require_scalar(const std::map<std::string, double>& values, const std::string& name, const char* op) {
  auto it = values.find(name);
  EMBER_CHECK(it != values.end(), op, "the state dict lacks '", name, "'");
  return it->second;
}

Tensor load_state_tensor(const OptimizerStateDict& dict, const std::string& key, const Tensor& param) {
  auto it = dict.tensors.find(key);
  EMBER_CHECK(it != dict.tensors.end(), "Optimizer::load_state_dict", "the state dict lacks '", key, "'");
  EMBER_CHECK(it->second.sizes() == param.sizes(), "Optimizer::load_state_dict", "'", key, "' has shape ",
              it->second.sizes(), " but its parameter has shape ", param.sizes());
  NoGradGuard no_grad;
  return it->second.to(param.scalar_type()).clone();
}

void save_state_tensor(OptimizerStateDict& dict, const std::string& key, const Tensor& value) {
  if (!value.defined()) return;
  NoGradGuard no_grad;
  dict.tensors[key] = value.clone();
}

}  // namespace ember::optim::detail
