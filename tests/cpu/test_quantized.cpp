// The int8 block-quantized weight product (Note [Block-quantized weights]) against float64
// references built from the definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/capabilities.h"
#include "cpu/parallel.h"
#include "cpu/quantized.h"
#include "ember/dtype.h"
#include "ember/error.h"

using namespace ember;
using namespace ember::cpu;

namespace {

std::vector<float> random_floats(int64_t count, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = dist(rng);
  return x;
}

}  // namespace

// Each block: scale = float16(max|w| / 127), values the nearest integers to w / scale, so
// the dequantized weight is within half a step of w.
TEST(QuantizedInt8, WeightBlocksFollowTheDefinition) {
  const int64_t rows = 5, k = 96, ld = 100;
  std::vector<float> w = random_floats(rows * ld, 0.05f, 1);
  w[3] = 0.0f;
  for (int64_t t = 32; t < 64; ++t) w[ld + t] = 0.0f;  // an all-zero block
  std::vector<int8_t> q(rows * k);
  std::vector<uint16_t> scales(rows * k / kQuantBlock);
  quantize_int8_weight_rows(w.data(), rows, k, ld, q.data(), scales.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < k / kQuantBlock; ++b) {
      double amax = 0;
      for (int64_t t = 0; t < kQuantBlock; ++t) amax = std::max(amax, std::fabs(double(w[r * ld + b * 32 + t])));
      const double d = detail::half_to_float(scales[r * 3 + b]);
      EXPECT_NEAR(d, amax / 127, amax / 127 * 1e-3 + 1e-12) << r << "," << b;  // float16 rounding
      for (int64_t t = 0; t < kQuantBlock; ++t) {
        const int q_value = q[r * k + b * 32 + t];
        ASSERT_LE(std::abs(q_value), 127);
        const double x = w[r * ld + b * 32 + t];
        ASSERT_LE(std::fabs(d * q_value - x), d * 0.5 * (1 + 1e-5) + 1e-12) << r << "," << b << "," << t;
      }
    }
  for (int64_t t = 32; t < 64; ++t) EXPECT_EQ(q[k + t], 0);
  std::vector<float> back(rows * k);
  dequantize_int8_rows(q.data(), scales.data(), rows, k, back.data());
  for (int64_t i = 0; i < rows * k; ++i)
    EXPECT_EQ(back[i], detail::half_to_float(scales[i / kQuantBlock]) * q[i]) << i;
}

TEST(QuantizedInt8, ActivationBlocksRoundToNearest) {
  const int64_t k = 64;
  std::vector<float> a = random_floats(k, 2.0f, 2);
  a[0] = 127.0f;  // the block's largest: scale exactly 1, so a[1] = 2.5 rounds to even
  a[1] = 2.5f;
  for (int64_t t = 2; t < 32; ++t) a[t] = std::fmod(a[t], 100.0f);
  std::vector<int8_t> q(k);
  std::vector<float> scales(2);
  quantize_int8_activation_rows(a.data(), 1, k, k, q.data(), scales.data());
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], 2);
  for (int64_t t = 0; t < k; ++t) ASSERT_LE(std::fabs(double(scales[t / 32]) * q[t] - a[t]), scales[t / 32] * 0.5 + 1e-6);
}

// The product equals the float64 sum of dequantized activations times dequantized weights,
// to float32 accumulation, for every instruction set, 1-8 rows (passes of 4, 2 and 1), odd
// and even block counts (AVX-512 takes blocks in pairs, scales in groups of 16), padded rows
// of A and C; past kQuantizedActivationRows rows, the float activations times the
// dequantized weights.
TEST(QuantizedInt8, ProductMatchesFloat64OfDequantizedValues) {
  for_each_capability([] {
    for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 40})
      for (int64_t k : {32, 96, 128, 544, 896})
        for (int64_t n : {1, 7, 33}) {
          const int64_t lda = k + 5, ldc = n + 3, blocks = k / kQuantBlock;
          std::vector<float> w = random_floats(n * k, 0.03f, 3), a = random_floats(m * lda, 1.5f, 4);
          std::vector<int8_t> wq(n * k), aq(m * k);
          std::vector<uint16_t> ws(n * blocks);
          std::vector<float> as(m * blocks);
          quantize_int8_weight_rows(w.data(), n, k, k, wq.data(), ws.data());
          quantize_int8_activation_rows(a.data(), m, k, lda, aq.data(), as.data());
          std::vector<float> c(m * ldc, std::numeric_limits<float>::quiet_NaN());
          gemm_int8_weight(m, n, k, a.data(), lda, wq.data(), ws.data(), c.data(), ldc);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              if (j >= n) {
                ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "padding written";
                continue;
              }
              double expected = 0, magnitude = 0;
              for (int64_t p = 0; p < k; ++p) {
                const double activation = m <= kQuantizedActivationRows
                                              ? double(as[i * blocks + p / 32]) * aq[i * k + p]
                                              : double(a[i * lda + p]);
                const double term =
                    activation * double(detail::half_to_float(ws[j * blocks + p / 32])) * wq[j * k + p];
                expected += term;
                magnitude += std::fabs(term);
              }
              ASSERT_NEAR(c[i * ldc + j], expected, magnitude * 1e-5 + 1e-30)
                  << "m " << m << " k " << k << " n " << n << " at " << i << "," << j;
            }
        }
  });
}

// Weights larger than one parallel chunk (about 256 KB of values) on two or more threads:
// every chunk reads the activations the caller quantized, and each column is computed once.
TEST(QuantizedInt8, ManyChunksOnThePool) {
  const int threads = num_threads();
  set_num_threads(std::max(threads, 2));
  const int64_t k = 1024, n = 700, blocks = k / kQuantBlock;
  std::vector<float> w = random_floats(n * k, 0.03f, 7), a = random_floats(2 * k, 1.0f, 8);
  std::vector<int8_t> wq(n * k), aq(2 * k);
  std::vector<uint16_t> ws(n * blocks);
  std::vector<float> as(2 * blocks), c(2 * n);
  quantize_int8_weight_rows(w.data(), n, k, k, wq.data(), ws.data());
  quantize_int8_activation_rows(a.data(), 2, k, k, aq.data(), as.data());
  gemm_int8_weight(2, n, k, a.data(), k, wq.data(), ws.data(), c.data(), n);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double term = double(as[i * blocks + p / 32]) * aq[i * k + p] *
                            double(detail::half_to_float(ws[j * blocks + p / 32])) * wq[j * k + p];
        expected += term;
        magnitude += std::fabs(term);
      }
      ASSERT_NEAR(c[i * n + j], expected, magnitude * 1e-5) << i << "," << j;
    }
  set_num_threads(threads);
}

// Weights stored by another quantizer may hold -128; the kernels' |w| trick must stay exact.
TEST(QuantizedInt8, ExtremeValuesStayExact) {
  for_each_capability([] {
    const int64_t k = 64, n = 2;
    std::vector<int8_t> wq(n * k, -128), aq_unused;
    std::vector<uint16_t> ws(n * 2, detail::float_to_half(1.0f));
    std::vector<float> a(k, -127.0f), c(n);
    gemm_int8_weight(1, n, k, a.data(), k, wq.data(), ws.data(), c.data(), n);
    EXPECT_EQ(c[0], 64.0 * 127 * 128);
    EXPECT_EQ(c[1], 64.0 * 127 * 128);
  });
}

TEST(QuantizedInt8, NonFiniteActivationsGiveNaN) {
  const int64_t k = 64;
  std::vector<float> w = random_floats(k, 0.1f, 5), a = random_floats(k, 1.0f, 6);
  std::vector<int8_t> wq(k);
  std::vector<uint16_t> ws(2);
  quantize_int8_weight_rows(w.data(), 1, k, k, wq.data(), ws.data());
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    a[40] = bad;
    float c = 0;
    gemm_int8_weight(1, 1, k, a.data(), k, wq.data(), ws.data(), &c, 1);
    EXPECT_TRUE(std::isnan(c)) << bad;
  }
}

TEST(QuantizedInt8, BadShapesAndValuesThrow) {
  std::vector<float> w(40, 1.0f);
  std::vector<int8_t> q(40);
  std::vector<uint16_t> s(2);
  EXPECT_THROW(quantize_int8_weight_rows(w.data(), 1, 40, 40, q.data(), s.data()), Error);  // 40 % 32 != 0
  w[0] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(quantize_int8_weight_rows(w.data(), 1, 32, 32, q.data(), s.data()), Error);
  w[0] = 1e9f;  // max / 127 overflows a float16 scale
  EXPECT_THROW(quantize_int8_weight_rows(w.data(), 1, 32, 32, q.data(), s.data()), Error);
  float c = 0;
  EXPECT_THROW(gemm_int8_weight(1, 1, 33, w.data(), 33, q.data(), s.data(), &c, 1), Error);
}
