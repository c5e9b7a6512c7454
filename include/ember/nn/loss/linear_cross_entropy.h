// Fused linear + cross-entropy (the LM head and its loss) without the [tokens, classes]
// logits matrix: ember::nn::functional::linear_cross_entropy and the module
// ember::nn::LinearCrossEntropyLoss. See Note [Fused linear cross-entropy] in
// src/nn/loss/linear_cross_entropy.cpp.
#pragma once
#include <cstdint>

#include "ember/arg.h"
#include "ember/nn/enums.h"
#include "ember/nn/module.h"
#include "ember/nn/pimpl.h"
#include "ember/tensor.h"

namespace ember::nn {

// Tokens per chunk are a multiple of this: every product tile covers one such block of
// tokens, so no result depends on the chunk size.
inline constexpr int64_t kLinearCrossEntropyTokenBlock = 128;

struct LinearCrossEntropyFuncOptions {
  // Added to the logits, [num_classes].
  EMBER_ARG(Tensor, bias) = {};
  // Per-class weights [num_classes], as cross_entropy's `weight`.
  EMBER_ARG(Tensor, class_weight) = {};
  EMBER_ARG(Reduction, reduction) = kMean;
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(double, label_smoothing) = 0.0;
  // Coefficient of the z-loss coef * lse^2 per token; kMean averages it over the kept
  // tokens without class weights.
  EMBER_ARG(double, z_loss) = 0.0;
  // When > 0 the logits become softcap * tanh(logits / softcap) before the loss.
  EMBER_ARG(double, softcap) = 0.0;
  // Tokens per chunk (a positive multiple of kLinearCrossEntropyTokenBlock); 0 picks the
  // largest whose float32 logits fit in memory_budget.
  EMBER_ARG(int64_t, chunk_size) = 0;
  // Bytes of logits one chunk may hold (at least one token block is always used).
  EMBER_ARG(int64_t, memory_budget) = int64_t{64} << 20;
};

struct LinearCrossEntropyLossOptions {
  LinearCrossEntropyLossOptions(int64_t in_features, int64_t num_classes)
      : in_features_(in_features), num_classes_(num_classes) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, num_classes);
  EMBER_ARG(bool, bias) = false;
  // Weight tying: use this [num_classes, in_features] tensor (e.g. the token embedding's
  // weight) as the projection instead of creating one.
  EMBER_ARG(Tensor, tied_weight) = {};
  EMBER_ARG(Tensor, class_weight) = {};
  EMBER_ARG(Reduction, reduction) = kMean;
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(double, label_smoothing) = 0.0;
  EMBER_ARG(double, z_loss) = 0.0;
  EMBER_ARG(double, softcap) = 0.0;
  EMBER_ARG(int64_t, chunk_size) = 0;
  EMBER_ARG(int64_t, memory_budget) = int64_t{64} << 20;
};

// The LM head and its loss: parameter "weight" [num_classes, in_features] (initialised as
// Linear's, or the tied tensor), optional "bias" [num_classes], buffer "class_weight".
class LinearCrossEntropyLossImpl : public Module {
 public:
  explicit LinearCrossEntropyLossImpl(const LinearCrossEntropyLossOptions& options);
  // input [*, in_features], target int64 [*] -> the loss (scalar, or [*] for kNone).
  Tensor forward(const Tensor& input, const Tensor& target);
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  LinearCrossEntropyLossOptions options;
  Tensor weight;
  Tensor bias;
  Tensor class_weight;
};
EMBER_MODULE(LinearCrossEntropyLoss);

namespace functional {

// Equals cross_entropy(linear(input, weight, bias), target, ...) plus the z-loss, computed
// chunk by chunk. input [*, H] (float32/float64/bfloat16/float16), weight [V, H] of the same
// dtype, target integer [*]. The loss has the input's dtype; it and all gradients are
// accumulated in float32 (float64 for float64 inputs).
Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& target,
                            const LinearCrossEntropyFuncOptions& options = {});

}  // namespace functional
}  // namespace ember::nn
