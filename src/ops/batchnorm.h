// The fused batch-norm op behind nn::functional::batch_norm in training mode (internal).
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember::ops {

// Normalises input [N, C, *] (float32 or float64, more than one value per channel) with its
// own statistics, scaled by weight and shifted by bias ([C] or undefined); writes the batch's
// mean and biased variance ([C] float64) for the running statistics.
Tensor batch_norm_training(const Tensor& input, const Tensor& weight, const Tensor& bias, double eps, Tensor& mean,
                           Tensor& var);

// The reduction dims {0, 2, 3, ...} of an input [N, C, *].
std::vector<int64_t> non_channel_dims(const Tensor& input);

}  // namespace ember::ops
