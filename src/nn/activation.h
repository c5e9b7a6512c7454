// Shared pieces of the activation functions, for the losses and layers that use them.
#pragma once
#include "ember/tensor.h"

namespace ember::nn::detail {

// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): finite for any x, and maximum's tie rule
// gives the exact gradient 1/2 at x = 0.
Tensor log1p_exp(const Tensor& x);

// result, or (inplace) result copied into input and input returned: the `inplace` option of
// the activation and dropout layers.
Tensor maybe_inplace(const Tensor& input, const Tensor& result, bool inplace);

}  // namespace ember::nn::detail
