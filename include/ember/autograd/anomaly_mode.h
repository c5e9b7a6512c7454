// Anomaly detection (torch::autograd::AnomalyMode, DetectAnomalyGuard): while enabled, every
// recorded node keeps the name of the forward op that made it and where that op's inputs
// came from, and the backward engine checks each node's gradients for NaN; an error raised
// in backward names the node and the forward op.
#pragma once

namespace ember::autograd {

class AnomalyMode {
 public:
  static bool is_enabled();
  static bool should_check_nan();
  // Process-wide, as in libtorch.
  static void set_enabled(bool enabled, bool check_nan = true);
};

// Enables anomaly mode in its scope and restores the previous setting after (libtorch
// switches it off; ember restores, so guards nest).
class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_nan = true);
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_enabled_;
  bool previous_check_nan_;
};

}  // namespace ember::autograd
