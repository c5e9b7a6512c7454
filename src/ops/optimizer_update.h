// Fused optimizer updates behind ember::optim (internal): one kernel pass per parameter
// instead of the composite's ten ops, with the same bits (src/cpu/optimizer.h).
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember::ops {

// One Adam or AdamW step's hyperparameters and bias corrections, as the composite computes them.
struct AdamStepScalars {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled_weight_decay, maximize;
  double bias_correction2_sqrt, step_size;
};

// Whether adam_step_ takes these tensors: float32 CPU tensors of one shape, each contiguous and
// none sharing memory with another (else the composite runs).
bool adam_step_fuses(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq);

// param, exp_avg and exp_avg_sq updated in place from grad (without autograd), as the
// composite in src/optim/adam.cpp would.
void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamStepScalars& scalars);

// The sum of the squares of each tensor's elements, accumulated in float64 (clip_grad_norm_'s
// 2-norms): contiguous float32 and float64 CPU tensors all in one parallel pass, in fixed chunks
// (the same bits at any thread count); others by tensor ops.
std::vector<double> sums_of_squares(const std::vector<Tensor>& tensors);

}  // namespace ember::ops
