// Anomaly mode's switch and the forward-op description nodes keep while it is on.
#include "ember/autograd/anomaly_mode.h"

#include <atomic>
#include <cctype>

#include "autograd/function.h"

namespace ember::autograd {
namespace {
std::atomic<bool> g_enabled{false};
std::atomic<bool> g_check_nan{true};
}  // namespace

bool AnomalyMode::is_enabled() { return g_enabled.load(std::memory_order_relaxed); }
bool AnomalyMode::should_check_nan() { return is_enabled() && g_check_nan.load(std::memory_order_relaxed); }

void AnomalyMode::set_enabled(bool enabled, bool check_nan) {
  g_check_nan.store(check_nan, std::memory_order_relaxed);
  g_enabled.store(enabled, std::memory_order_relaxed);
}

DetectAnomalyGuard::DetectAnomalyGuard(bool check_nan)
    : previous_enabled_(AnomalyMode::is_enabled()), previous_check_nan_(g_check_nan.load(std::memory_order_relaxed)) {
  AnomalyMode::set_enabled(true, check_nan);
}

DetectAnomalyGuard::~DetectAnomalyGuard() { AnomalyMode::set_enabled(previous_enabled_, previous_check_nan_); }

std::string forward_op_name(const std::string& node_name) {
  constexpr std::string_view kSuffix = "Backward";
  if (!node_name.ends_with(kSuffix)) return node_name;
  std::string out;
  for (char c : node_name.substr(0, node_name.size() - kSuffix.size())) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty()) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string anomaly_trace(const std::string& forward_op, const std::vector<Tensor>& inputs) {
  std::string out = forward_op + "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (i) out += ", ";
    if (!t.defined()) {
      out += "undefined";
    } else if (t.grad_fn()) {
      out += forward_op_name(t.grad_fn()->name());
    } else {
      out += t.requires_grad() ? "leaf" : "constant";
    }
  }
  return out + ")";
}

}  // namespace ember::autograd
