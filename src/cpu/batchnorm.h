// Batch normalisation with batch statistics (training mode), fused: x [batch, channels,
// inner] contiguous, float32 or float64. Statistics and gradient sums accumulate in float64,
// two-pass (mean, then squared deviations) as PyTorch; each channel is one task, so results
// do not depend on the thread count.
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

struct BatchNormShape {
  int64_t batch = 0, channels = 0, inner = 0;
};

// y = (x - mean) * invstd * weight + bias per channel; weight and bias ([channels] of dtype)
// may be null (ones, zeros). Writes mean, biased var and invstd = 1 / sqrt(var + eps), each
// [channels] float64, for the running statistics and the backward.
void batch_norm_forward(ScalarType dtype, const BatchNormShape& shape, const void* x, const void* weight,
                        const void* bias, double eps, void* y, double* mean, double* var, double* invstd);

// From grad_y: grad_x (or null) = weight * invstd * (grad_y - mean(grad_y) - xhat *
// mean(grad_y * xhat)) with xhat = (x - mean) * invstd, grad_weight = sum(grad_y * xhat) and
// grad_bias = sum(grad_y) per channel ([channels] float64).
void batch_norm_backward(ScalarType dtype, const BatchNormShape& shape, const void* grad_y, const void* x,
                         const void* weight, const double* mean, const double* invstd, void* grad_x,
                         double* grad_weight, double* grad_bias);

}  // namespace ember::cpu
