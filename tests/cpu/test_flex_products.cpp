// The product tables of the fused attention kernels (Note [Attention products] in
// cpu/attention/flex_attention_tiles.h) on every instruction set the CPU has: operands packed
// from strided sources, C = alpha * A·B (+ C), tiles turned into operands, and the softmax
// fused with its operand, against float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention/flex_attention_tiles.h"
#include "cpu/capabilities.h"
#include "ember/detail/float16.h"

namespace ember::cpu::attention {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Operand element i of `data` as a double: bfloat16 bits for 2-byte operands, else T.
template <typename T>
double value_of(const ProductKernels<T>& mm, const std::vector<char>& data, int64_t i) {
  if (mm.operand_bytes == 2) {
    uint16_t bits;
    std::memcpy(&bits, data.data() + 2 * i, 2);
    return ember::detail::bf16_to_float(bits);
  }
  T value;
  std::memcpy(&value, data.data() + sizeof(T) * i, sizeof(T));
  return static_cast<double>(value);
}

// Random values exact in bfloat16, so float32 and bfloat16 tables see the same operands.
std::vector<BFloat16> bf16_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<BFloat16> out(static_cast<size_t>(count));
  for (auto& v : out) v = BFloat16(dist(rng));
  return out;
}

template <typename T>
void check_products(const ProductKernels<T>& mm, double tolerance) {
  const int64_t group = mm.k_group, width = mm.panel_width;
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {5, 7, 3}, {8, 32, 64}, {13, 45, 17}, {9, 64, 128}, {3, 100, 2}, {16, 33, 65},
           // AMX blocks of 32 rows: two row tiles, one, a short last block, k tails past whole chunks;
           // B by columns: blocks of 16 pairs by 32 columns transposed, the rest gathered.
           {17, 32, 32}, {33, 64, 96}, {45, 40, 100}, {128, 64, 64}, {8, 70, 70}}) {
    SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
    // A[m][k] stored by columns (row stride 1) and B[k][n] by rows with a gap: strided sources.
    const std::vector<BFloat16> a_src = bf16_values(m * k, 1), b_src = bf16_values(k * (n + 3), 2);
    auto a_at = [&](int64_t i, int64_t p) { return static_cast<double>(static_cast<float>(a_src[p * m + i])); };
    auto b_at = [&](int64_t p, int64_t j) { return static_cast<double>(static_cast<float>(b_src[p * (n + 3) + j])); };
    const int64_t lda = round_up(k, group), ldc = round_up(n, width);
    std::vector<char> a(static_cast<size_t>(m * lda * mm.operand_bytes), 7),
        b(static_cast<size_t>(ldc * round_up(k, group) * mm.operand_bytes), 7);
    mm.pack_rows(kBFloat16, a_src.data(), 1, m, m, k, a.data(), lda);
    mm.pack_panels(kBFloat16, b_src.data(), n + 3, 1, k, n, b.data());
    {
      // The same B stored by columns (as keys are), k contiguous: the same panels, byte for byte.
      std::vector<BFloat16> by_columns(static_cast<size_t>(n * (k + 5)));
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) by_columns[j * (k + 5) + p] = b_src[p * (n + 3) + j];
      std::vector<char> b_columns(b.size(), 7);
      mm.pack_panels(kBFloat16, by_columns.data(), 1, k + 5, k, n, b_columns.data());
      EXPECT_EQ(b_columns, b) << "panels packed from B stored by columns";
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = k; p < lda; ++p) EXPECT_EQ(value_of(mm, a, i * lda + p), 0.0) << "A's padding";
    // Elements of C (started at 0.5) off 0.375 * A·B (+ 0.5 when accumulate) in float64.
    auto wrong_in = [&](const std::vector<T>& c, bool accumulate) {
      int64_t wrong = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            sum += a_at(i, p) * b_at(p, j);
            magnitude += std::abs(a_at(i, p) * b_at(p, j));
          }
          const double expected = 0.375 * sum + (accumulate ? 0.5 : 0.0);
          wrong += std::abs(static_cast<double>(c[i * ldc + j]) - expected) > tolerance * (1 + 0.375 * magnitude);
        }
      return wrong;
    };
    for (bool accumulate : {false, true}) {
      std::vector<T> c(static_cast<size_t>(m * ldc), T(0.5));
      const T alpha = T(0.375);
      mm.gemm(a.data(), lda, b.data(), c.data(), ldc, m, n, k, alpha, accumulate);
      EXPECT_EQ(wrong_in(c, accumulate), 0) << "accumulate " << accumulate;
    }
    // The same product with A the transpose of a T tile [k][m] read in place, where the table
    // has it (operands of T).
    if (mm.gemm_transposed_tile) {
      const int64_t ld_tile = m + 5;
      std::vector<T> tile(static_cast<size_t>(k * ld_tile), T(7));
      for (int64_t p = 0; p < k; ++p)
        for (int64_t i = 0; i < m; ++i) tile[p * ld_tile + i] = static_cast<T>(a_at(i, p));
      for (bool accumulate : {false, true}) {
        std::vector<T> c(static_cast<size_t>(m * ldc), T(0.5));
        mm.gemm_transposed_tile(tile.data(), ld_tile, b.data(), c.data(), ldc, m, n, k, T(0.375), accumulate);
        EXPECT_EQ(wrong_in(c, accumulate), 0) << "transposed tile, accumulate " << accumulate;
      }
    }
  }
  // A tile as an operand, as is and transposed, with its padding zeroed: a small one, and one
  // of whole blocks of 32 rows by 16 columns (transposed in registers) with ragged edges.
  for (const auto& [rows, cols, ld] : std::vector<std::array<int64_t, 3>>{{7, 11, 16}, {69, 45, 48}}) {
    std::vector<T> tile(static_cast<size_t>(rows * ld));
    for (size_t i = 0; i < tile.size(); ++i)
      tile[i] = static_cast<T>(std::ldexp(static_cast<double>(i % 200) - 40.0, -3));
    for (bool transpose : {false, true}) {
      const int64_t out_rows = transpose ? cols : rows, out_cols = transpose ? rows : cols;
      const int64_t ld_out = round_up(out_cols, 16);
      std::vector<char> out(static_cast<size_t>(out_rows * ld_out * mm.operand_bytes), 7);
      mm.operand_rows(tile.data(), ld, rows, cols, transpose, out.data(), ld_out);
      for (int64_t r = 0; r < out_rows; ++r) {
        for (int64_t c = 0; c < out_cols; ++c)
          EXPECT_EQ(value_of(mm, out, r * ld_out + c),
                    static_cast<double>(transpose ? tile[c * ld + r] : tile[r * ld + c]))
              << rows << "x" << cols << " transpose " << transpose << " at " << r << ", " << c;
        for (int64_t c = out_cols; c < round_up(out_cols, group); ++c) EXPECT_EQ(value_of(mm, out, r * ld_out + c), 0.0);
      }
    }
  }
}

// One online-softmax step fused with the operand (softmax_to_operand) against float64: rows
// past a group of sixteen, columns with a tail, spans of -inf at either end, a row with nothing
// visible, running maxima above and below the tile's; with `masked` and without, the same bits.
void check_softmax_to_operand(const ProductKernels<float>& mm) {
  ASSERT_NE(mm.softmax_to_operand, nullptr);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const auto& [rows, cols] : std::vector<std::array<int64_t, 2>>{{37, 45}, {16, 100}, {5, 32}, {20, 7}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols));
    const int64_t ld = round_up(cols, 16) + 16, acc_cols = 24, ld_acc = 32;
    const float score_scale = 0.75f;
    std::mt19937 rng(static_cast<uint32_t>(rows * 131 + cols));
    std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
    std::vector<float> scores(static_cast<size_t>(rows * ld), 7.0f), max0(rows), sum0(rows), acc0(rows * ld_acc);
    for (int64_t r = 0; r < rows; ++r) {
      // Row r sees columns [r % 5 * 9, cols - r % 3 * 17); row 3 sees nothing.
      const int64_t begin = r == 3 ? cols : r % 5 * 9, end = cols - r % 3 * 17;
      for (int64_t c = 0; c < cols; ++c) scores[r * ld + c] = c >= begin && c < end ? dist(rng) : -kInf;
      // Running state: none yet, below the tile's maxima, or above them.
      max0[r] = r % 4 == 0 ? -kInf : r % 4 == 1 ? -2.0f : 6.0f;
      sum0[r] = r % 4 == 0 ? 0.0f : 1.5f;
      for (int64_t c = 0; c < ld_acc; ++c) acc0[r * ld_acc + c] = r % 4 == 0 ? 0.0f : dist(rng);
    }
    const int64_t padded = cols + cols % 2;
    struct Result {
      std::vector<float> scores, max, sum, acc;
      std::vector<uint16_t> operand;
    };
    auto run = [&](bool masked) {
      Result out{scores, max0, sum0, acc0, std::vector<uint16_t>(static_cast<size_t>(rows * ld), 0x7777)};
      mm.softmax_to_operand(out.scores.data(), ld, rows, cols, masked, score_scale, out.max.data(), out.sum.data(),
                            out.acc.data(), ld_acc, acc_cols, out.operand.data(), ld);
      return out;
    };
    const Result masked = run(true), unmasked = run(false);
    EXPECT_EQ(masked.operand, unmasked.operand);
    EXPECT_EQ(masked.max, unmasked.max);
    EXPECT_EQ(0, std::memcmp(masked.sum.data(), unmasked.sum.data(), sizeof(float) * rows));
    EXPECT_EQ(0, std::memcmp(masked.acc.data(), unmasked.acc.data(), sizeof(float) * rows * ld_acc));
    for (int64_t r = 0; r < rows; ++r) {
      double tile_max = -kInf;
      for (int64_t c = 0; c < cols; ++c) tile_max = std::max(tile_max, double{score_scale} * scores[r * ld + c]);
      const double new_max = std::max(tile_max, double{max0[r]});
      const double alpha = max0[r] == -kInf ? 0.0 : std::exp(max0[r] - new_max);
      double sum = sum0[r] * alpha;
      for (int64_t c = 0; c < padded; ++c) {
        const double p = c < cols && new_max != -kInf ? std::exp(double{score_scale} * scores[r * ld + c] - new_max) : 0;
        sum += p;
        const double got = ember::detail::bf16_to_float(masked.operand[r * ld + c]);
        EXPECT_LE(std::abs(got - p), 4e-3 * p) << "probability " << r << ", " << c;
      }
      EXPECT_EQ(masked.max[r], static_cast<float>(new_max)) << "row " << r;
      EXPECT_NEAR(masked.sum[r], sum, 1e-5 * sum) << "row " << r;
      for (int64_t c = 0; c < acc_cols; ++c)
        EXPECT_NEAR(masked.acc[r * ld_acc + c], acc0[r * ld_acc + c] * alpha, 1e-6 * std::abs(acc0[r * ld_acc + c]))
            << "acc " << r << ", " << c;
    }
  }
}

TEST(FlexProducts, MatchFloat64OnEveryInstructionSet) {
  for_each_capability([] {
    // Tables of T operands read transposed tiles in place (checked in check_products).
    EXPECT_NE(EMBER_KERNEL(flex_products_f32)()->gemm_transposed_tile, nullptr);
    EXPECT_NE(baseline::flex_products_f64()->gemm_transposed_tile, nullptr);
    check_products(*EMBER_KERNEL(flex_products_f32)(), 1e-6);
    check_products(*baseline::flex_products_f64(), 1e-14);
    // bfloat16 operands: exact products, float32 sums.
    const auto bf16_table = EMBER_BF16_KERNEL(flex_products_bf16);
    const ProductKernels<float>* bf16 = bf16_table ? bf16_table() : nullptr;
    EXPECT_EQ(bf16 != nullptr, capability_at_least(Capability::AVX512_BF16));
    if (bf16) check_products(*bf16, 1e-6);
    if (bf16) check_softmax_to_operand(*bf16);
    // The same operands on AMX tiles.
    const auto amx_table = EMBER_AMX_KERNEL(flex_products_amx);
    EXPECT_EQ(amx_table != nullptr, cpu_capability() == Capability::AMX);
    if (amx_table) check_products(*amx_table(), 1e-6);
    if (amx_table) check_softmax_to_operand(*amx_table());
  });
}

}  // namespace
}  // namespace ember::cpu::attention
