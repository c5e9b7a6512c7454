// Connectionist temporal classification loss (Graves et al. 2006) as PyTorch's CPU kernels
// (aten/src/ATen/native/LossCTC.cpp): the alpha recursion in log space forward, the beta
// recursion and the alpha-beta products backward, for float32 and float64.
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

// The problem, shared by both passes. log_probs: [T, N, C] contiguous of `dtype`. Sequence
// b's labels are targets[target_offsets[b] + i] for i < target_lengths[b]; it is read up
// to input_lengths[b] <= T steps. The extended target l' interleaves blanks: length 2L + 1.
struct CTCProblem {
  ScalarType dtype = kFloat32;
  const void* log_probs = nullptr;
  int64_t max_time = 0, batch = 0, classes = 0;
  const int64_t* targets = nullptr;
  const int64_t* target_offsets = nullptr;
  const int64_t* input_lengths = nullptr;
  const int64_t* target_lengths = nullptr;
  int64_t max_target_length = 0;
  int64_t blank = 0;
};

// nll: [N] of dtype, -log p(target | input). log_alpha: [N, T, 2 * max_target_length + 1] of
// dtype, saved for the backward.
void ctc_loss_forward(const CTCProblem& problem, void* nll, void* log_alpha);

// grad_log_probs [T, N, C] of dtype from grad_nll [N] (dtype): PyTorch's
// (exp(lp) - exp(log(sum_s alpha beta over l'_s = c) + nll - lp)) * grad_nll[b] for
// t < input_lengths[b], zero after. With zero_infinity a sequence whose nll is infinite gets
// a zero gradient.
void ctc_loss_backward(const CTCProblem& problem, const void* grad_nll, const void* nll, const void* log_alpha,
                       bool zero_infinity, void* grad_log_probs);

}  // namespace ember::cpu
