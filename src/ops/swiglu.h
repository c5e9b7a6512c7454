// The fused SwiGLU op behind nn::functional::swiglu (internal).
#pragma once
#include "ember/tensor.h"

namespace ember::ops {

// silu(a) * b for floating a and b of one shape, in their promoted dtype.
Tensor swiglu(const Tensor& a, const Tensor& b);

}  // namespace ember::ops
