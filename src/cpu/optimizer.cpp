#include "cpu/optimizer.h"

#include "cpu/parallel.h"

namespace ember::cpu {

void adam_step(const AdamStep& step, float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n) {
  constexpr int64_t kChunk = 16384;
  auto kernel = EMBER_KERNEL(adam_step_run);
  parallel_for(0, n, kChunk, [&](int64_t lo, int64_t hi) {
    kernel(step, param + lo, grad + lo, exp_avg + lo, exp_avg_sq + lo, hi - lo);
  });
}

}  // namespace ember::cpu
