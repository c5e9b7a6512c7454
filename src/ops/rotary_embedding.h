// The rotary position embedding op behind nn::functional::rotary_embedding (internal).
#pragma once
#include "ember/tensor.h"

namespace ember::ops {

// x [..., T, head_dim] rotated pairwise by the angles whose cos and sin are [T, head_dim / 2].
Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace ember::ops
