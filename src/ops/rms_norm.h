// The fused RMSNorm op behind nn::functional::rms_norm (internal).
#pragma once
#include "ember/tensor.h"

namespace ember::ops {

// input [..., width] (any layout) normalised over its trailing `width` elements and scaled
// by weight (`width` elements, or undefined); input and weight share a floating dtype.
Tensor rms_norm(const Tensor& input, const Tensor& weight, int64_t width, double eps);

}  // namespace ember::ops
