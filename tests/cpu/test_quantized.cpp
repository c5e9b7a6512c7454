// The block-quantized weight products, int8 and int4 (Note [Block-quantized weights]), against
// float64 references built from the formats' definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/capabilities.h"
#include "cpu/dispatch.h"
#include "cpu/gemm_backend.h"
#include "cpu/parallel.h"
#include "cpu/quantized.h"
#include "ember/dtype.h"
#include "ember/error.h"

using namespace ember;
using namespace ember::cpu;

namespace {

constexpr QuantFormat kFormats[] = {QuantFormat::Int8, QuantFormat::Int4};

std::vector<float> random_floats(int64_t count, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = dist(rng);
  return x;
}

// Weights quantized in `format`: the stored bytes and scales of a [rows, k] matrix.
struct Quantized {
  QuantFormat format;
  int64_t k;
  std::vector<uint8_t> values;
  std::vector<uint16_t> scales;

  // The integer the format stores for element p of row r, read from its definition: an int8,
  // or the 4-bit value (low half of byte p % 16 for p % 32 < 16, else the high half) minus 8.
  int integer(int64_t r, int64_t p) const {
    if (format == QuantFormat::Int8) return static_cast<int8_t>(values[r * k + p]);
    const uint8_t byte = values[r * (k / 2) + (p / 32) * 16 + p % 16];
    return (p % 32 < 16 ? byte & 15 : byte >> 4) - 8;
  }
  double scale(int64_t r, int64_t p) const { return detail::half_to_float(scales[r * (k / 32) + p / 32]); }
  double value(int64_t r, int64_t p) const { return scale(r, p) * integer(r, p); }
};

Quantized quantize(QuantFormat format, const std::vector<float>& w, int64_t rows, int64_t k, int64_t ld) {
  Quantized q{format, k, std::vector<uint8_t>(rows * quantized_row_bytes(format, k)),
              std::vector<uint16_t>(rows * k / kQuantBlock)};
  quantize_weight_rows(format, w.data(), rows, k, ld, q.values.data(), q.scales.data());
  return q;
}

// One product's operands: weights [n, k] quantized in `format`, activations [m, lda] and the
// int8 blocks the products make of them.
struct ProductCase {
  int64_t m, n, k, lda;
  Quantized weights;
  std::vector<float> a;
  std::vector<int8_t> a_values;
  std::vector<float> a_scales;

  // gemm_quantized_weight's c [m, ldc], its padding NaN.
  std::vector<float> product(int64_t ldc) const {
    std::vector<float> c(m * ldc, std::numeric_limits<float>::quiet_NaN());
    gemm_quantized_weight(weights.format, m, n, k, a.data(), lda, weights.values.data(), weights.scales.data(),
                          c.data(), ldc);
    return c;
  }

  // c [m, ldc] against the float64 sum of the activations (their int8 blocks, or as they are)
  // times the dequantized weights, to float32 accumulation; the padding unwritten.
  ::testing::AssertionResult matches_float64(const std::vector<float>& c, int64_t ldc, bool quantized) const {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = c[i * ldc + j];
        if (j >= n) {
          if (!std::isnan(got)) return ::testing::AssertionFailure() << "padding written at " << i << "," << j;
          continue;
        }
        double expected = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double activation =
              quantized ? double(a_scales[i * (k / kQuantBlock) + p / kQuantBlock]) * a_values[i * k + p]
                        : double(a[i * lda + p]);
          expected += activation * weights.value(j, p);
          magnitude += std::fabs(activation * weights.value(j, p));
        }
        if (!(std::fabs(got - expected) <= magnitude * 1e-5 + 1e-30))
          return ::testing::AssertionFailure() << "m " << m << " k " << k << " n " << n << " at " << i << "," << j
                                               << ": " << got << " against " << expected;
      }
    return ::testing::AssertionSuccess();
  }
};

ProductCase product_case(QuantFormat format, int64_t m, int64_t n, int64_t k, int64_t lda, float spread,
                         uint32_t seed) {
  const std::vector<float> w = random_floats(n * k, 0.03f, seed);
  ProductCase c{m, n, k, lda, quantize(format, w, n, k, k), random_floats(m * lda, spread, seed + 1),
                std::vector<int8_t>(m * k), std::vector<float>(m * k / kQuantBlock)};
  quantize_int8_activation_rows(c.a.data(), m, k, lda, c.a_values.data(), c.a_scales.data());
  return c;
}

}  // namespace

// Each block: scale = float16(max|w| / 127), values the nearest integers to w / scale, so
// the dequantized weight is within half a step of w.
TEST(QuantizedInt8, WeightBlocksFollowTheDefinition) {
  const int64_t rows = 5, k = 96, ld = 100;
  std::vector<float> w = random_floats(rows * ld, 0.05f, 1);
  w[3] = 0.0f;
  for (int64_t t = 32; t < 64; ++t) w[ld + t] = 0.0f;  // an all-zero block
  const Quantized q = quantize(QuantFormat::Int8, w, rows, k, ld);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < k / kQuantBlock; ++b) {
      double amax = 0;
      for (int64_t t = 0; t < kQuantBlock; ++t) amax = std::max(amax, std::fabs(double(w[r * ld + b * 32 + t])));
      const double d = q.scale(r, b * 32);
      EXPECT_NEAR(d, amax / 127, amax / 127 * 1e-3 + 1e-12) << r << "," << b;  // float16 rounding
      for (int64_t t = 0; t < kQuantBlock; ++t) {
        const int q_value = q.integer(r, b * 32 + t);
        ASSERT_LE(std::abs(q_value), 127);
        const double x = w[r * ld + b * 32 + t];
        ASSERT_LE(std::fabs(d * q_value - x), d * 0.5 * (1 + 1e-5) + 1e-12) << r << "," << b << "," << t;
      }
    }
  for (int64_t t = 32; t < 64; ++t) EXPECT_EQ(q.integer(1, t), 0);
  std::vector<float> back(rows * k);
  dequantize_weight_rows(QuantFormat::Int8, q.values.data(), q.scales.data(), rows, k, back.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < k; ++p) EXPECT_EQ(back[r * k + p], q.value(r, p)) << r << "," << p;
}

// Q4_0: scale = float16(m / -8) with m the block's value of largest magnitude, values
// q = min(15, floor(w / scale + 8.5)), so m itself is exactly q = 0 and every value is within
// half a step of scale * (q - 8) but those past 7.5 steps on the other side, clamped to 15.
TEST(QuantizedInt4, WeightBlocksFollowTheDefinition) {
  const int64_t rows = 5, k = 96, ld = 100;
  std::vector<float> w = random_floats(rows * ld, 0.05f, 1);
  for (int64_t t = 32; t < 64; ++t) w[ld + t] = 0.0f;  // an all-zero block
  const Quantized q = quantize(QuantFormat::Int4, w, rows, k, ld);
  int clamped = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < k / kQuantBlock; ++b) {
      double m = 0;
      for (int64_t t = 0; t < kQuantBlock; ++t)
        if (std::fabs(w[r * ld + b * 32 + t]) > std::fabs(m)) m = w[r * ld + b * 32 + t];
      const double d = q.scale(r, b * 32);
      EXPECT_NEAR(d, m / -8, std::fabs(m) / 8 * 1e-3 + 1e-12) << r << "," << b;  // float16 rounding
      for (int64_t t = 0; t < kQuantBlock; ++t) {
        const int value = q.integer(r, b * 32 + t);
        ASSERT_TRUE(value >= -8 && value <= 7);
        const double x = w[r * ld + b * 32 + t];
        if (x == m && m != 0) {
          EXPECT_EQ(value, -8);
        }
        const double error = std::fabs(d * value - x);
        if (value == 7 && x / d > 7.5) {
          ++clamped;
          ASSERT_LE(error, std::fabs(d) * (1 + 1e-3)) << r << "," << b << "," << t;
        } else {
          ASSERT_LE(error, std::fabs(d) * 0.5 * (1 + 1e-5) + 1e-12) << r << "," << b << "," << t;
        }
      }
    }
  for (int64_t t = 32; t < 64; ++t) EXPECT_EQ(q.integer(1, t), 0);
  EXPECT_GT(clamped, 0) << "normal blocks put some values past 7.5 steps opposite their extreme";
  std::vector<float> back(rows * k);
  dequantize_weight_rows(QuantFormat::Int4, q.values.data(), q.scales.data(), rows, k, back.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < k; ++p) EXPECT_EQ(back[r * k + p], q.value(r, p)) << r << "," << p;
}

// A block worked by hand: w = t - 8 for t < 16, w = (t - 16) / 2 for t >= 16. The largest
// magnitude is -8, so scale = 1 and q = min(15, floor(w + 8.5)): 0..15, then 8, 9 (w = 0.5:
// halves round up), 9, 10, 10, ..., 15, 15 (w = 7.5 clamped). Byte t holds q[t] | q[t + 16] << 4.
TEST(QuantizedInt4, PacksTwoValuesPerByteAsQ4_0) {
  std::vector<float> w(32);
  for (int t = 0; t < 16; ++t) w[t] = static_cast<float>(t - 8);
  for (int t = 16; t < 32; ++t) w[t] = static_cast<float>(t - 16) / 2;
  const Quantized q = quantize(QuantFormat::Int4, w, 1, 32, 32);
  EXPECT_EQ(detail::half_to_float(q.scales[0]), 1.0f);
  for (int t = 0; t < 16; ++t) {
    const int high = std::min(15, static_cast<int>(std::floor(static_cast<double>(t) / 2 + 8.5)));
    EXPECT_EQ(q.values[t], t | (high << 4)) << t;
  }
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
// to float32 accumulation, for both formats, every instruction set (with and without VNNI), 1-8
// rows (passes of 4, 2 and 1), odd and even block counts (AVX-512 takes blocks in pairs, scales
// in groups of 16), padded rows of A and C; past kQuantizedActivationRows rows, the float
// activations times the dequantized weights.
TEST(QuantizedProduct, MatchesFloat64OfDequantizedValues) {
  for (QuantFormat format : kFormats) {
    SCOPED_TRACE(quant_format_name(format));
    for_each_capability_of(kAllCapabilities, [format] {
      for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 40})
        // 2080: 65 blocks, an odd pair at AVX-512; four rows of it exceed the int4 products'
        // prepared operands at AVX2 (Rows * operands > 256), which then make them at each use.
        for (int64_t k : {32, 96, 128, 544, 896, 2080})
          for (int64_t n : {1, 7, 33}) {
            const ProductCase product = product_case(format, m, n, k, k + 5, 1.5f, 3);
            ASSERT_TRUE(product.matches_float64(product.product(n + 3), n + 3, quantizes_activations(m)));
          }
    });
  }
}

// The VNNI copies sum each block exactly, as the others do, and in the same order: their
// results are bitwise those of the level below them.
TEST(QuantizedProduct, VnniGivesTheSameBits) {
  const Capability original = cpu_capability();
  for (auto [with, without] : {std::pair{Capability::AVX512_VNNI, Capability::AVX512},
                               std::pair{Capability::AVX2_VNNI, Capability::AVX2}}) {
    if (set_cpu_capability(with) != with) continue;
    SCOPED_TRACE(capability_name(with));
    for (QuantFormat format : kFormats) {
      const int64_t m = 5, n = 37, k = 544;
      std::vector<float> w = random_floats(n * k, 0.03f, 9), a = random_floats(m * k, 1.0f, 10);
      const Quantized wq = quantize(format, w, n, k, k);
      std::vector<float> c_with(m * n), c_without(m * n);
      set_cpu_capability(with);
      gemm_quantized_weight(format, m, n, k, a.data(), k, wq.values.data(), wq.scales.data(), c_with.data(), n);
      set_cpu_capability(without);
      gemm_quantized_weight(format, m, n, k, a.data(), k, wq.values.data(), wq.scales.data(), c_without.data(), n);
      EXPECT_EQ(std::memcmp(c_with.data(), c_without.data(), c_with.size() * sizeof(float)), 0)
          << quant_format_name(format);
    }
  }
  set_cpu_capability(original);
}

// Prompts on AMX-INT8 tiles (Note [Quantized prompts on AMX]): rows across the tiles' 16 and
// the steps' 32, columns across the groups of 32 and the calls' chunks, against float64 of the
// quantized activations and weights; bitwise the same on one thread; extreme integers exact;
// with OpenBLAS forced, the weights widened and the activations as they are.
TEST(QuantizedProduct, PromptsOnAmxTiles) {
  if (!quantized_prompts_on_amx()) GTEST_SKIP() << "no AMX-INT8 at this dispatch level";
  const int threads = num_threads();
  for (QuantFormat format : kFormats) {
    SCOPED_TRACE(quant_format_name(format));
    for (int64_t m : {9, 16, 17, 32, 33, 70})
      for (int64_t k : {32, 96, 2080})
        for (int64_t n : {1, 17, 32, 33, 100, 129, 300}) {
          const ProductCase product = product_case(format, m, n, k, k + 3, 1.5f, 21);
          const std::vector<float> c = product.product(n + 2);
          ASSERT_TRUE(product.matches_float64(c, n + 2, true));
          set_num_threads(1);
          const std::vector<float> c_one_thread = product.product(n + 2);
          set_num_threads(threads);
          ASSERT_EQ(std::memcmp(c.data(), c_one_thread.data(), c.size() * sizeof(float)), 0)
              << "m " << m << " k " << k << " n " << n;  // NaN padding compared as bits
        }
  }
  // -128 (another quantizer's int8) and int4's -8 and 7 against activations of +-127.
  const int64_t m = 20, k = 64, n = 3;
  std::vector<float> a(m * k, -127.0f), c(m * n);
  for (int64_t p = 0; p < k; ++p) a[k + p] = 127.0f;  // row 1
  std::vector<uint16_t> ws(n * 2, detail::float_to_half(1.0f));
  std::vector<int8_t> int8_values(n * k, -128);
  gemm_quantized_weight(QuantFormat::Int8, m, n, k, a.data(), k, int8_values.data(), ws.data(), c.data(), n);
  EXPECT_EQ(c[0], 64.0 * 127 * 128);
  EXPECT_EQ(c[n], -64.0 * 127 * 128);
  std::vector<uint8_t> int4_values(n * k / 2, 0x00);  // 0 - 8
  std::fill(int4_values.begin() + k / 2, int4_values.end(), 0xFF);  // 15 - 8 from the second weight row on
  gemm_quantized_weight(QuantFormat::Int4, m, n, k, a.data(), k, int4_values.data(), ws.data(), c.data(), n);
  EXPECT_EQ(c[0], 64.0 * 127 * 8);
  EXPECT_EQ(c[1], 64.0 * -127 * 7);
  EXPECT_EQ(c[n + 2], 64.0 * 127 * 7);
  // OpenBLAS forced: every product on it, the prompt's weights widened.
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  set_forced_gemm_backend(GemmBackend::OpenBLAS);
  EXPECT_FALSE(quantized_prompts_on_amx());
  EXPECT_FALSE(quantizes_activations(kQuantizedActivationRows + 1));
  EXPECT_TRUE(quantizes_activations(kQuantizedActivationRows));
  set_forced_gemm_backend(forced);
}

// Weights larger than one parallel chunk (about 256 KB of values) on two or more threads:
// every chunk reads the activations the caller quantized, each column is computed once, and
// the result is bitwise that of one thread.
TEST(QuantizedProduct, ManyChunksOnThePool) {
  const int threads = num_threads();
  for (QuantFormat format : kFormats) {
    SCOPED_TRACE(quant_format_name(format));
    const ProductCase product = product_case(format, 2, 700, 1024, 1024, 1.0f, 7);
    set_num_threads(1);
    const std::vector<float> c_one_thread = product.product(700);
    set_num_threads(std::max(threads, 2));
    const std::vector<float> c = product.product(700);
    EXPECT_EQ(std::memcmp(c.data(), c_one_thread.data(), c.size() * sizeof(float)), 0);
    EXPECT_TRUE(product.matches_float64(c, 700, true));
  }
  set_num_threads(threads);
}

// The extreme integers stay exact in the kernels' |w| trick: int8 weights stored by another
// quantizer may hold -128; int4's extremes are -8 and 7.
TEST(QuantizedProduct, ExtremeValuesStayExact) {
  for_each_capability_of(kAllCapabilities, [] {
    const int64_t k = 64, n = 2;
    std::vector<float> a(k, -127.0f), c(n);
    std::vector<uint16_t> ws(n * 2, detail::float_to_half(1.0f));
    std::vector<int8_t> int8_values(n * k, -128);
    gemm_quantized_weight(QuantFormat::Int8, 1, n, k, a.data(), k, int8_values.data(), ws.data(), c.data(), n);
    EXPECT_EQ(c[0], 64.0 * 127 * 128);
    EXPECT_EQ(c[1], 64.0 * 127 * 128);
    std::vector<uint8_t> int4_values(n * k / 2, 0x00);  // every value 0 - 8
    std::fill(int4_values.begin() + k / 2, int4_values.end(), 0xFF);  // the second row's 15 - 8
    gemm_quantized_weight(QuantFormat::Int4, 1, n, k, a.data(), k, int4_values.data(), ws.data(), c.data(), n);
    EXPECT_EQ(c[0], 64.0 * 127 * 8);
    EXPECT_EQ(c[1], 64.0 * -127 * 7);
  });
}

TEST(QuantizedProduct, NonFiniteActivationsGiveNaN) {
  for (QuantFormat format : kFormats) {
    const int64_t k = 64;
    std::vector<float> w = random_floats(k, 0.1f, 5), a = random_floats(k, 1.0f, 6);
    const Quantized wq = quantize(format, w, 1, k, k);
    for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      a[40] = bad;
      float c = 0;
      gemm_quantized_weight(format, 1, 1, k, a.data(), k, wq.values.data(), wq.scales.data(), &c, 1);
      EXPECT_TRUE(std::isnan(c)) << quant_format_name(format) << " " << bad;
    }
  }
}

TEST(QuantizedProduct, BadShapesAndValuesThrow) {
  for (QuantFormat format : kFormats) {
    SCOPED_TRACE(quant_format_name(format));
    std::vector<float> w(40, 1.0f);
    std::vector<uint8_t> q(40);
    std::vector<uint16_t> s(2);
    EXPECT_THROW(quantize_weight_rows(format, w.data(), 1, 40, 40, q.data(), s.data()), Error);  // 40 % 32 != 0
    w[0] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(quantize_weight_rows(format, w.data(), 1, 32, 32, q.data(), s.data()), Error);
    w[0] = 1e9f;  // its scale overflows a float16
    EXPECT_THROW(quantize_weight_rows(format, w.data(), 1, 32, 32, q.data(), s.data()), Error);
    float c = 0;
    EXPECT_THROW(gemm_quantized_weight(format, 1, 1, 33, w.data(), 33, q.data(), s.data(), &c, 1), Error);
    EXPECT_THROW(dequantize_weight_rows(format, q.data(), s.data(), 1, 48, w.data()), Error);
  }
}
