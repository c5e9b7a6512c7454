// The fused linear cross-entropy op behind nn::functional::linear_cross_entropy (internal;
// Note [Fused linear cross-entropy] in linear_cross_entropy.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "ember/tensor.h"

namespace ember::ops {

// The loss's settings, checked by the caller (nn::functional::linear_cross_entropy).
struct LinearCrossEntropyParams {
  enum class Reduction { None, Mean, Sum };
  Tensor bias;          // [classes] of the input's dtype, or undefined
  Tensor class_weight;  // floating [classes], or undefined
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0, z_loss = 0, softcap = 0;
  int64_t chunk_size = 0;     // a multiple of token_block; 0: from memory_budget
  int64_t memory_budget = 0;  // bytes of logits one chunk may hold (> 0)
  int64_t token_block = 0;    // tokens per product tile (> 0)
  std::optional<ScalarType> loss_dtype;  // the returned loss's (default: the input's)
};

// cross_entropy(linear(input, weight, bias), target) plus the z-loss, chunk by chunk, with its
// backward. input [*, H], weight [V, H] of the same dtype, target integer [*].
Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& target,
                            const LinearCrossEntropyParams& params);

}  // namespace ember::ops
