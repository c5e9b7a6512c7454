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

namespace {

// How the value reaching `edge` was made, `depth` producers deep: "sub(leaf, constant)".
std::string describe_producer(const Edge& edge, int depth) {
  if (!edge.is_valid()) return "constant";
  const Node& node = *edge.function;
  if (node.name() == "AccumulateGrad") return "leaf";
  std::string out = forward_op_name(node.name());
  if (depth == 0 || node.next_edges.empty()) return out;
  out += "(";
  for (size_t i = 0; i < node.next_edges.size(); ++i)
    out += (i ? ", " : "") + describe_producer(node.next_edges[i], depth - 1);
  return out + ")";
}

}  // namespace

std::string anomaly_trace(const std::string& forward_op, const std::vector<Tensor>& inputs) {
  // Three levels of producers: enough to place the op in the forward, bounded in length.
  constexpr int kDepth = 2;
  std::string out = forward_op + "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) out += ", ";
    out += inputs[i].defined() ? describe_producer(gradient_edge(inputs[i]), kDepth) : "undefined";
  }
  return out + ")";
}

}  // namespace ember::autograd
