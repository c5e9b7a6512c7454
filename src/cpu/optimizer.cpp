#include "cpu/optimizer.h"

#include "cpu/parallel.h"

namespace ember::cpu {

void adam_step(const AdamStep& step, float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
               void* low, ScalarType low_dtype) {
  constexpr int64_t kChunk = 16384;
  auto kernel = EMBER_KERNEL(adam_step_run);
  parallel_for(0, n, kChunk, [&](int64_t lo, int64_t hi) {
    kernel(step, param + lo, grad + lo, exp_avg + lo, exp_avg_sq + lo, hi - lo,
           low ? static_cast<uint16_t*>(low) + lo : nullptr, low_dtype);
  });
}

namespace {

template <typename T>
double lanes_sum_of_squares(const T* x, int64_t n) {
  // Eight independent lanes (vectorized without reassociating), added pairwise at the end.
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  for (int j = 0; i < n; ++i, ++j) lanes[j] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

}  // namespace

double chunk_sum_of_squares(bool float64, const void* data, int64_t begin, int64_t end) {
  if (float64) return lanes_sum_of_squares(static_cast<const double*>(data) + begin, end - begin);
  return lanes_sum_of_squares(static_cast<const float*>(data) + begin, end - begin);
}

}  // namespace ember::cpu
