// Reading and writing the flat OptimizerStateDict entries (internal to src/optim).
#pragma once
#include <map>
#include <string>

#include "ember/optim/optimizer.h"

namespace ember::optim::detail {

// The scalars under `prefix`, with the prefix removed.
std::map<std::string, double> scalars_with_prefix(const OptimizerStateDict& dict, const std::string& prefix);
// Whether any tensor or scalar key starts with `prefix`.
bool has_prefix(const OptimizerStateDict& dict, const std::string& prefix);
// values[name]; throws naming `name` when absent.
double require_scalar(const std::map<std::string, double>& values, const std::string& name, const char* op);
// A copy of dict.tensors[key] cast to param's dtype; throws unless it has param's shape.
Tensor load_state_tensor(const OptimizerStateDict& dict, const std::string& key, const Tensor& param);
// Writes a deep copy of `value` under `key` when it is defined.
void save_state_tensor(OptimizerStateDict& dict, const std::string& key, const Tensor& value);

}  // namespace ember::optim::detail
