// Kernels of the low-precision GEMM (Note [Low-precision GEMM] in cpu/gemm_blocks.h):
// conversions between bf16/f16 and float32 blocks, and the few-rows product that reads B
// directly. Compiled once per instruction set on the native registers of float_vector.h.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <cstddef>
#include <cstdint>

#include "cpu/simd/float_vector.h"

// The register-array loops below must unroll, so the arrays live in registers: also under the
// -Os of ember-rt's build, where an array in memory makes a kernel 2-3x slower.
#define EMBER_UNROLLED _Pragma("GCC unroll 16")

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

// a * b + c, with one rounding where the build has FMA (as vfma).
inline float scalar_fma(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

// Storage: B's element type. load/store move kNativeWidth values between storage and a
// register, rounding to nearest even.
struct Bf16 {
  using Storage = uint16_t;
  static float to_float(uint16_t x) { return bf16_to_float(x); }
  static uint16_t from_float(float x) { return float_to_bf16(x); }
  static vf load(const uint16_t* p) { return vload_bf16(p); }
  static void store(uint16_t* p, vf v) { vstore_bf16(p, v); }
};

struct F16 {
  using Storage = uint16_t;
  static float to_float(uint16_t x) { return half_to_float(x); }
  static uint16_t from_float(float x) { return float_to_half(x); }
  static vf load(const uint16_t* p) { return vload_f16(p); }
  static void store(uint16_t* p, vf v) { vstore_f16(p, v); }
};

// float32 B: the OpenBLAS backend's one-row products, and all its float32 products where
// OpenBLAS runs a generic kernel (gemm_openblas.cpp).
struct F32 {
  using Storage = float;
  static float to_float(float x) { return x; }
  static vf load(const float* p) { return vload(p); }
};

template <typename Format>
void widen_rows(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* s = src + r * ld_src;
    float* d = dst + r * ld_dst;
    int64_t j = 0;
    for (; j + kNativeWidth <= cols; j += kNativeWidth) vstore(d + j, Format::load(s + j));
    for (; j < cols; ++j) d[j] = Format::to_float(s[j]);
  }
}

template <typename Format>
void narrow_rows(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                 int64_t ld_dst) {
  const vf vbeta = vset(beta);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld_src;
    uint16_t* d = dst + r * ld_dst;
    int64_t j = 0;
    if (beta == 0.0f) {
      for (; j + kNativeWidth <= cols; j += kNativeWidth) Format::store(d + j, vload(s + j));
      for (; j < cols; ++j) d[j] = Format::from_float(s[j]);
    } else {
      for (; j + kNativeWidth <= cols; j += kNativeWidth) Format::store(d + j, vfma(vbeta, Format::load(d + j), vload(s + j)));
      for (; j < cols; ++j) d[j] = Format::from_float(scalar_fma(beta, Format::to_float(d[j]), s[j]));
    }
  }
}

// Rows of A handled per pass over B: what fits the registers with the accumulators below.
constexpr int kMaxRows = kNativeWidth == 16 ? 4 : 2;

// c[Rows, n] += a[Rows, Steps] * b[Steps, n] for Steps consecutive rows of b, each element
// summed in p order (vector lanes and scalar leftovers alike).
template <typename Format, int Rows, int Steps>
void accumulate_rows(int64_t n, const float* a, int64_t lda, const typename Format::Storage* b, int64_t ldb, float* c,
                     int64_t ldc) {
  float coef[Rows][Steps];
  vf coef_v[Rows][Steps];
  EMBER_UNROLLED
  for (int i = 0; i < Rows; ++i)
    EMBER_UNROLLED
    for (int s = 0; s < Steps; ++s) coef_v[i][s] = vset(coef[i][s] = a[i * lda + s]);
  int64_t j = 0;
  for (; j + kNativeWidth <= n; j += kNativeWidth) {
    vf bv[Steps];
    EMBER_UNROLLED
    for (int s = 0; s < Steps; ++s) bv[s] = Format::load(b + s * ldb + j);
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) {
      vf acc = vload(c + i * ldc + j);
      EMBER_UNROLLED
      for (int s = 0; s < Steps; ++s) acc = vfma(coef_v[i][s], bv[s], acc);
      vstore(c + i * ldc + j, acc);
    }
  }
  for (; j < n; ++j) {
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) {
      float acc = c[i * ldc + j];
      EMBER_UNROLLED
      for (int s = 0; s < Steps; ++s) acc = scalar_fma(coef[i][s], Format::to_float(b[s * ldb + j]), acc);
      c[i * ldc + j] = acc;
    }
  }
}

// c[Rows, n] = alpha * a[Rows, k] * b[k, n], b rows along n: walks b row by row, four at a
// time, so its reads stream; the caller keeps n small enough for c to stay in cache.
template <typename Format, int Rows>
void few_rows_nn(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const typename Format::Storage* b,
                 int64_t ldb, float* c, int64_t ldc) {
  EMBER_UNROLLED
  for (int i = 0; i < Rows; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) accumulate_rows<Format, Rows, 4>(n, a + p, lda, b + p * ldb, ldb, c, ldc);
  for (; p < k; ++p) accumulate_rows<Format, Rows, 1>(n, a + p, lda, b + p * ldb, ldb, c, ldc);
  EMBER_UNROLLED
  for (int i = 0; i < Rows; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= alpha;
}

// c[Rows, n] = alpha * a[Rows, k] * b[n, k]^T (b: a linear layer's weight), one row of b
// after another, prefetching ahead (Note [Weight streaming] in simd_common.h). Each dot keeps
// kSums partial sums in flight along k, combined in a fixed order: the result does not depend
// on how the caller splits n.

template <typename Format, int Rows>
void few_rows_nt(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const typename Format::Storage* b,
                 int64_t ldb, float* c, int64_t ldc) {
  constexpr int kSums = Rows == 1 ? 4 : 2;
  constexpr int64_t kStep = kSums * kNativeWidth;
  constexpr int64_t kStepBytes = kStep * sizeof(typename Format::Storage);
  for (int64_t j = 0; j < n; ++j) {
    const typename Format::Storage* row = b + j * ldb;
    vf acc[Rows][kSums];
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i)
      EMBER_UNROLLED
      for (int s = 0; s < kSums; ++s) acc[i][s] = vset(0.0f);
    int64_t p = 0;
    for (; p + kStep <= k; p += kStep) {
      EMBER_UNROLLED
      for (int64_t line = 0; line < kStepBytes; line += 64)
        prefetch_stream_ahead(reinterpret_cast<const char*>(row + p) + line);
      EMBER_UNROLLED
      for (int s = 0; s < kSums; ++s) {
        const vf bv = Format::load(row + p + s * kNativeWidth);
        EMBER_UNROLLED
        for (int i = 0; i < Rows; ++i) acc[i][s] = vfma(vload(a + i * lda + p + s * kNativeWidth), bv, acc[i][s]);
      }
    }
    for (; p + kNativeWidth <= k; p += kNativeWidth) {
      const vf bv = Format::load(row + p);
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) acc[i][0] = vfma(vload(a + i * lda + p), bv, acc[i][0]);
    }
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) {
      vf total = acc[i][0];
      EMBER_UNROLLED
      for (int s = 1; s < kSums; ++s) total = vadd(total, acc[i][s]);
      float sum = hsum_tree(total);
      for (int64_t q = p; q < k; ++q) sum = scalar_fma(a[i * lda + q], Format::to_float(row[q]), sum);
      c[i * ldc + j] = alpha * sum;
    }
  }
}

template <typename Format>
void few_rows(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, bool trans_b,
              const typename Format::Storage* b, int64_t ldb, float* c, int64_t ldc) {
  auto pass = [&]<int Rows>(int64_t i) {
    if (trans_b) {
      few_rows_nt<Format, Rows>(n, k, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
    } else {
      few_rows_nn<Format, Rows>(n, k, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
    }
  };
  int64_t i = 0;
  for (; i + kMaxRows <= m; i += kMaxRows) pass.template operator()<kMaxRows>(i);
  if constexpr (kMaxRows == 4) {
    if (m - i >= 2) {
      pass.template operator()<2>(i);
      i += 2;
    }
  }
  if (i < m) pass.template operator()<1>(i);
}

}  // namespace

void gemm_widen_bf16(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  widen_rows<Bf16>(src, ld_src, rows, cols, dst, ld_dst);
}

void gemm_widen_f16(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  widen_rows<F16>(src, ld_src, rows, cols, dst, ld_dst);
}

void gemm_narrow_bf16(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                      int64_t ld_dst) {
  narrow_rows<Bf16>(src, ld_src, rows, cols, beta, dst, ld_dst);
}

void gemm_narrow_f16(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                     int64_t ld_dst) {
  narrow_rows<F16>(src, ld_src, rows, cols, beta, dst, ld_dst);
}

void gemm_few_rows_bf16(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                        int64_t ldb, float* c, int64_t ldc) {
  few_rows<Bf16>(m, n, k, alpha, a, k, trans_b, b, ldb, c, ldc);
}

void gemm_few_rows_f16(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                       int64_t ldb, float* c, int64_t ldc) {
  few_rows<F16>(m, n, k, alpha, a, k, trans_b, b, ldb, c, ldc);
}

// Fewer instantiations than few_rows (ember-rt links this, Note [Runtime size]): passes of
// kMaxRows rows where B is transposed (a linear layer's weight), single rows otherwise.
void gemm_rows_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, bool trans_b,
                   const float* b, int64_t ldb, float* c, int64_t ldc) {
  int64_t i = 0;
  if (trans_b)
    for (; i + kMaxRows <= m; i += kMaxRows)
      few_rows_nt<F32, kMaxRows>(n, k, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  for (; i < m; ++i) {
    if (trans_b) {
      few_rows_nt<F32, 1>(n, k, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
    } else {
      few_rows_nn<F32, 1>(n, k, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
    }
  }
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
