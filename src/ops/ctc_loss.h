// The CTC loss op behind nn::functional::ctc_loss (internal).
#pragma once
#include "ember/tensor.h"

namespace ember::ops {

// The per-sequence negative log-likelihoods [N] of log_probs [T, N, C] (float32, or float64
// for float64 input) for targets [N, S] (padded) or [sum(target_lengths)] (concatenated) and
// lengths [N]; with zero_infinity, infinite losses (and their gradients) are zero.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, bool zero_infinity);

}  // namespace ember::ops
