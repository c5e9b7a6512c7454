// A linear layer whose float32 weight computes in its bf16/f16 input's dtype (mixed-precision
// training: the models' projections in `--dtype bfloat16`).
#pragma once

#include <vector>

#include "ember/tensor.h"

namespace ember::detail {

// linear(x, weight.to(x's dtype), bias.to(x's dtype)): the same output and input gradient,
// values included. Where x is bf16/f16, the weight float32 and autograd records its gradient,
// that gradient is summed straight into float32 (Note [Autocast linear] in src/ops/linalg.cpp)
// instead of being rounded to x's dtype and cast back. Elsewhere (same dtypes, no gradient for
// the weight, an export tracing) it is that composite.
Tensor autocast_linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// autocast_linear(x, w) for every w (no bias), the products computed as a group sharing x
// (linear_group: a layer's query, key and value projections): the same values as separate
// calls give where each member's product runs on the group's backend.
std::vector<Tensor> autocast_linear_group(const Tensor& x, const std::vector<Tensor>& weights);

}  // namespace ember::detail
