// Fused linear + cross-entropy (the LM head and its loss) without the [tokens, classes]
// logits matrix: ember::nn::functional::linear_cross_entropy and the module
// ember::nn::LinearCrossEntropyLoss. See Note [Fused linear cross-entropy] in
// src/ops/linear_cross_entropy.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>

#include "ember/arg.h"
#include "ember/nn/enums.h"
#include "ember/nn/module.h"
#include "ember/nn/pimpl.h"
#include "ember/tensor.h"

namespace ember::nn {

// Tokens per chunk are a multiple of this: every product tile covers one such block of
// tokens, so no result depends on the chunk size.
inline constexpr int64_t kLinearCrossEntropyTokenBlock = 128;

// The settings of the loss itself, shared by the functional form and the module.
struct LinearCrossEntropySettings {
  // Per-class weights [num_classes], as cross_entropy's `weight`.
  Tensor class_weight;
  Reduction reduction = kMean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  // Coefficient of the z-loss coef * lse^2 per token; kMean averages it over the kept
  // tokens without class weights.
  double z_loss = 0.0;
  // When > 0 the logits become softcap * tanh(logits / softcap) before the loss.
  double softcap = 0.0;
  // Tokens per chunk (a positive multiple of kLinearCrossEntropyTokenBlock); 0 picks the
  // largest whose float32 logits fit in memory_budget.
  int64_t chunk_size = 0;
  // Bytes of logits one chunk may hold (at least one token block is always used). bfloat16 on
  // CPUs with AMX-BF16 may keep up to twice as much again of logits gradients waiting for the
  // backward products (docs/LINEAR_CROSS_ENTROPY.md).
  int64_t memory_budget = int64_t{64} << 20;
  // The returned loss's dtype (default: the input's). kFloat32 with bfloat16 or float16 inputs
  // returns the float32-accumulated loss unrounded, as cross_entropy gives it under autocast;
  // the gradients are the same either way.
  std::optional<ScalarType> loss_dtype;
};

// The settings' chainable setters and getters (as EMBER_ARG's), for the options struct
// `Options` that derives from this: a setter returns `Options&`, so chains keep their type.
template <typename Options>
class LinearCrossEntropySettingsArgs {
 public:
  const LinearCrossEntropySettings& settings() const { return settings_; }
  Options& settings(const LinearCrossEntropySettings& settings) {
    settings_ = settings;
    return static_cast<Options&>(*this);
  }

#define EMBER_LINEAR_CROSS_ENTROPY_SETTING(T, name) \
  Options& name(T value) {                          \
    settings_.name = std::move(value);              \
    return static_cast<Options&>(*this);            \
  }                                                 \
  const T& name() const noexcept { return settings_.name; }
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(Tensor, class_weight)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(Reduction, reduction)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(int64_t, ignore_index)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(double, label_smoothing)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(double, z_loss)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(double, softcap)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(int64_t, chunk_size)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(int64_t, memory_budget)
  EMBER_LINEAR_CROSS_ENTROPY_SETTING(std::optional<ScalarType>, loss_dtype)
#undef EMBER_LINEAR_CROSS_ENTROPY_SETTING

 private:
  LinearCrossEntropySettings settings_;
};

// functional::linear_cross_entropy's options: the settings and a bias.
struct LinearCrossEntropyFuncOptions : LinearCrossEntropySettingsArgs<LinearCrossEntropyFuncOptions> {
  // Added to the logits, [num_classes].
  EMBER_ARG(Tensor, bias) = {};
};

// LinearCrossEntropyLoss's options: the head's shape and parameters, and the settings.
struct LinearCrossEntropyLossOptions : LinearCrossEntropySettingsArgs<LinearCrossEntropyLossOptions> {
  LinearCrossEntropyLossOptions(int64_t in_features, int64_t num_classes)
      : in_features_(in_features), num_classes_(num_classes) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, num_classes);
  EMBER_ARG(bool, bias) = false;
  // Weight tying: use this [num_classes, in_features] tensor (e.g. the token embedding's
  // weight) as the projection instead of creating one.
  EMBER_ARG(Tensor, tied_weight) = {};
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
// dtype, target integer [*]. The loss has the input's dtype (or `loss_dtype`); it and all
// gradients are accumulated in float32 (float64 for float64 inputs).
Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& target,
                            const LinearCrossEntropyFuncOptions& options = {});

}  // namespace functional
}  // namespace ember::nn
