// ember::nn::utils: gradient clipping, as torch::nn::utils.
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember::nn::utils {

// Scales the gradients of `parameters` in place so that their joint norm (the norm_type
// norm of all gradient elements together; INFINITY for the max-abs norm) is at most
// max_norm, using PyTorch's factor min(1, max_norm / (total_norm + 1e-6)). Returns the
// total norm before clipping. Parameters without a gradient are skipped. With
// error_if_nonfinite, a NaN or infinite total norm throws instead of scaling.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ember::nn::utils
