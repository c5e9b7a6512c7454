// Fused optimizer steps, built per instruction set (src/cpu/optimizer.h).
#include "cpu/optimizer.h"

#include <algorithm>

#include "cpu/simd/float_vector.h"
#include "cpu/simd/simd_common.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

#ifndef EMBER_RT_CPU  // ember-rt trains nothing (Note [Runtime size])
// The composite's `add(b, alpha = a)` is scalar_fma(a, b, c) in every build: the elementwise
// kernels' a + alpha * b is contracted into one FMA where the build has FMA. Everywhere else
// this file contracts nothing (-ffp-contract=off in CMakeLists.txt), as the composite's
// separate ops round each result.
//
// Per element, the composite's operations in its order (adam_update in src/optim/adam.cpp).
// One loop per kind of weight decay: GCC vectorizes no loop that selects an FMA's result.
template <AdamStep::Decay kDecay>
void adam_step_loop(const AdamStep& step, float* __restrict param, const float* __restrict grad,
                    float* __restrict exp_avg, float* __restrict exp_avg_sq, int64_t n) {
  using Decay = AdamStep::Decay;
  const AdamStep s = step;
  const float sign = s.maximize ? -1.0f : 1.0f;  // g * -1 is -g exactly
  for (int64_t i = 0; i < n; ++i) {
    float g = grad[i] * sign;
    float p = param[i];
    if constexpr (kDecay == Decay::Coupled) g = scalar_fma(s.decay_value, p, g);     // grad.add(param, wd)
    if constexpr (kDecay == Decay::Decoupled) p = p * s.decay_value;                 // param.mul_(1 - lr * wd)
    const float scaled = (g - exp_avg[i]) * s.lerp_weight;
    const float m = s.lerp_mirrored ? g - scaled : exp_avg[i] + scaled;              // lerp_
    const float v = scalar_fma(s.one_minus_beta2, g * g, exp_avg_sq[i] * s.beta2);   // mul_(b2).add_(g * g, 1 - b2)
    const float denom = __builtin_sqrtf(v) / s.bias_correction2_sqrt + s.eps;        // sqrt() / bc2 + eps
    param[i] = scalar_fma(s.negative_step_size, m / denom, p);                       // add_(m / denom, -step_size)
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
  }
}

void adam_step_decayed(const AdamStep& step, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                       int64_t n) {
  switch (step.decay) {
    case AdamStep::Decay::None: return adam_step_loop<AdamStep::Decay::None>(step, param, grad, exp_avg, exp_avg_sq, n);
    case AdamStep::Decay::Coupled:
      return adam_step_loop<AdamStep::Decay::Coupled>(step, param, grad, exp_avg, exp_avg_sq, n);
    case AdamStep::Decay::Decoupled:
      return adam_step_loop<AdamStep::Decay::Decoupled>(step, param, grad, exp_avg, exp_avg_sq, n);
  }
}

// The new values of a block rounded to T while they are in the cache (the Adam loop stays
// vectorized: a rounding inside it was not).
template <typename T>
void round_block(const float* param, T* low, int64_t n) {
  int64_t i = 0;
  if constexpr (narrows_in_pairs_v<T>) i = narrow_bf16_pairs(param, reinterpret_cast<uint16_t*>(low), n);
  for (; i + kWidth <= n; i += kWidth) store_as(low + i, load_as<Floats>(param + i));
  for (; i < n; ++i) store(low + i, param[i]);
}
#endif

}  // namespace

#ifndef EMBER_RT_CPU
void adam_step_run(const AdamStep& step, float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                   void* low, ScalarType low_dtype) {
  if (low == nullptr) return adam_step_decayed(step, param, grad, exp_avg, exp_avg_sq, n);
  constexpr int64_t kBlock = 2048;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t count = std::min(kBlock, n - i);
    adam_step_decayed(step, param + i, grad + i, exp_avg + i, exp_avg_sq + i, count);
    if (low_dtype == kFloat16) round_block(param + i, static_cast<Half*>(low) + i, count);
    else round_block(param + i, static_cast<BFloat16*>(low) + i, count);
  }
}
#endif

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
