// Fused optimizer steps over contiguous float32 tensors: each element goes through the same
// float32 operations, in the same order, as the composite of tensor ops it replaces
// (src/optim/adam.cpp), so the results are the same bits in one pass instead of ten.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// One Adam or AdamW step's scalars, each rounded to float32 as the composite's Scalar operands
// are.
struct AdamStep {
  enum class Decay { None, Coupled, Decoupled };
  bool maximize = false;           // the gradient negated
  Decay decay = Decay::None;       // Coupled: g += decay_value * p; Decoupled: p *= decay_value
  float decay_value = 0;           // weight_decay, or 1 - lr * weight_decay
  bool lerp_mirrored = false;      // m = g - (g - m) * lerp_weight, else m += (g - m) * lerp_weight
  float lerp_weight = 0;           // w = 1 - beta1, or 1 - w where mirrored (in double, then rounded)
  float beta2 = 0, one_minus_beta2 = 0, bias_correction2_sqrt = 0, eps = 0, negative_step_size = 0;
};

// param, exp_avg and exp_avg_sq (n contiguous float32 elements each) updated in place from grad;
// where `low` is given, the new param rounded to low_dtype (bf16 or f16) is written there too
// (Note [Low-precision copies] in src/autograd/low_precision_copy.cpp).
void adam_step(const AdamStep& step, float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
               void* low = nullptr, ScalarType low_dtype = kBFloat16);

// Sums of squares in float64 go by chunks of kSquaresChunk values, each summed in eight lanes
// added in a fixed order, the chunks' sums then added in order (ops::sums_of_squares): the same
// bits at any thread count.
inline constexpr int64_t kSquaresChunk = 16384;
// The sum of the squares of contiguous values [begin, end) of float32 (or float64) data.
double chunk_sum_of_squares(bool float64, const void* data, int64_t begin, int64_t end);

}  // namespace ember::cpu

EMBER_DECLARE_KERNEL(void, adam_step_run,
                     (const ::ember::cpu::AdamStep& step, float* param, const float* grad, float* exp_avg,
                      float* exp_avg_sq, int64_t n, void* low, ::ember::ScalarType low_dtype))
