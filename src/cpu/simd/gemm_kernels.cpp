// Kernels of the low-precision GEMM (Note [Low-precision GEMM] in cpu/gemm_blocks.h):
// conversions between bf16/f16 and float32 blocks, the few-rows product that reads B
// directly, and the packed product that widens while it packs (Note [Packed low-precision
// GEMM] in cpu/gemm_packed.h). Compiled once per instruction set on the native registers of
// float_vector.h.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/gemm_packed.h"
#include "cpu/simd/float_vector.h"

// The register-array loops below must unroll, so the arrays live in registers: also under the
// -Os of ember-rt's build, where an array in memory makes a kernel 2-3x slower.
#define EMBER_UNROLLED _Pragma("GCC unroll 16")

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

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
// OpenBLAS runs a generic kernel (gemm_openblas.cpp); float32 C of the packed product.
struct F32 {
  using Storage = float;
  static float to_float(float x) { return x; }
  static float from_float(float x) { return x; }
  static vf load(const float* p) { return vload(p); }
  static void store(float* p, vf v) { vstore(p, v); }
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

// With Clear, src reads zero afterwards (each vector zeroed as it is read, in the same pass).
template <typename Format, bool Clear = false>
void narrow_rows(std::conditional_t<Clear, float*, const float*> src, int64_t ld_src, int64_t rows, int64_t cols,
                 float beta, uint16_t* dst, int64_t ld_dst) {
  const vf vbeta = vset(beta);
  const auto take = [](auto* p) {
    const vf value = vload(p);
    if constexpr (Clear) vstore(p, vset(0.0f));
    return value;
  };
  const auto take_one = [](auto* p) {
    const float value = *p;
    if constexpr (Clear) *p = 0.0f;
    return value;
  };
  for (int64_t r = 0; r < rows; ++r) {
    auto* s = src + r * ld_src;
    uint16_t* d = dst + r * ld_dst;
    int64_t j = 0;
    if (beta == 0.0f) {
      if constexpr (kNarrowsInPairs && std::is_same_v<Format, Bf16>) j = narrow_bf16_pairs<Clear>(s, d, cols);
      for (; j + kNativeWidth <= cols; j += kNativeWidth) Format::store(d + j, take(s + j));
      for (; j < cols; ++j) d[j] = Format::from_float(take_one(s + j));
    } else {
      for (; j + kNativeWidth <= cols; j += kNativeWidth) Format::store(d + j, vfma(vbeta, Format::load(d + j), take(s + j)));
      for (; j < cols; ++j) d[j] = Format::from_float(scalar_fma(beta, Format::to_float(d[j]), take_one(s + j)));
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

// ---- The packed product (Note [Packed low-precision GEMM] in cpu/gemm_packed.h) ----------

constexpr int64_t kMr = kPackedMr;
constexpr int64_t kNr = 2 * kNativeWidth;  // a panel: two registers of each accumulator row
static_assert(kNr <= kPackedMaxNr);

// A block of op(A)[rows, kc] as float32 in its stored orientation, rows padded with zeros to
// a multiple of kMr: A stored by rows gives dst[round_up(rows)][kc] (a row's k values in a
// line), a transposed A dst[kc][round_up(rows)] (a strip's kMr values in a line). Widening in
// place of a transposed copy: the micro-kernel broadcasts A's values wherever they lie.
struct PackedA {
  const float* data;
  int64_t row_stride, k_stride;
};

template <typename Format>
PackedA pack_a(const typename Format::Storage* a, int64_t lda, bool trans, int64_t rows, int64_t kc, float* dst) {
  const int64_t padded = (rows + kMr - 1) / kMr * kMr;
  if (!trans) {
    widen_rows<Format>(a, lda, rows, kc, dst, kc);
    for (int64_t i = rows; i < padded; ++i)
      for (int64_t p = 0; p < kc; ++p) dst[i * kc + p] = 0.0f;
    return {dst, kc, 1};
  }
  widen_rows<Format>(a, lda, kc, rows, dst, padded);
  for (int64_t p = 0; p < kc; ++p)
    for (int64_t i = rows; i < padded; ++i) dst[p * padded + i] = 0.0f;
  return {dst, 1, padded};
}

// Eight lanes of B's storage as float32 (8 x 8 transposes of the panels below; at every build).
template <typename Format>
inline Floats load8(const typename Format::Storage* p) {
  if constexpr (std::is_same_v<Format, Bf16>) {
    return widen_bf16<Floats, UInts, Shorts8>(p);
  } else {
#if defined(__F16C__)
    return bits_as<Floats>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
    float lanes[kWidth];
    for (int t = 0; t < kWidth; ++t) lanes[t] = Format::to_float(p[t]);
    return bits_as<Floats>(lanes);
#endif
  }
}

// rows[t][q] becomes rows[q][t] (unpack pairs, then quads, then halves).
inline void transpose8(Floats (&r)[8]) {
  Floats t[8], u[8];
  EMBER_UNROLLED
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  EMBER_UNROLLED
  for (int i = 0; i < 8; i += 4) {
    u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  EMBER_UNROLLED
  for (int i = 0; i < 4; ++i) {
    r[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// Panels of kNr columns of op(B)[kc, cols] as float32, dst[panel][p][kNr], columns past
// `cols` zero. B stored by rows is two register loads per panel row; a transposed B (a linear
// layer's weight) is widened eight values of eight rows at a time and transposed in registers.
template <typename Format>
void pack_b(const typename Format::Storage* b, int64_t ldb, bool trans, int64_t kc, int64_t cols, float* dst) {
  for (int64_t j0 = 0; j0 < cols; j0 += kNr) {
    const int64_t valid = cols - j0 < kNr ? cols - j0 : kNr;
    float* panel = dst + j0 * kc;
    if (!trans && valid == kNr) {
      for (int64_t p = 0; p < kc; ++p) {
        vstore(panel + p * kNr, Format::load(b + p * ldb + j0));
        vstore(panel + p * kNr + kNativeWidth, Format::load(b + p * ldb + j0 + kNativeWidth));
      }
    } else if (!trans) {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < kNr; ++j) panel[p * kNr + j] = j < valid ? Format::to_float(b[p * ldb + j0 + j]) : 0.0f;
    } else {
      for (int64_t jb = 0; jb < kNr; jb += 8) {
        const int64_t rows = valid - jb < 0 ? 0 : valid - jb < 8 ? valid - jb : 8;
        const typename Format::Storage* block = b + (j0 + jb) * ldb;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
          Floats r[8];
          for (int t = 0; t < 8; ++t) r[t] = t < rows ? load8<Format>(block + t * ldb + p) : Floats{};
          transpose8(r);
          EMBER_UNROLLED
          for (int t = 0; t < 8; ++t) std::memcpy(panel + (p + t) * kNr + jb, &r[t], sizeof(Floats));
        }
        for (; p < kc; ++p)
          for (int64_t j = 0; j < 8; ++j) panel[p * kNr + jb + j] = j < rows ? Format::to_float(block[j * ldb + p]) : 0.0f;
      }
    }
  }
}

// Where a micro-tile's accumulators go: the float32 buffer of the tile's C (acc, ld_acc) until
// the last k block, then C itself (alpha * sum + beta * C, rounded once to CFormat).
struct MicroTarget {
  float* acc;
  int64_t ld_acc;
  bool resume;      // the accumulators start from acc (an earlier k block)
  bool last_block;  // store into C, else into acc
  int64_t rows, cols;
  float alpha, beta;
};

template <typename CFormat>
inline void store_final(vf value, float beta, typename CFormat::Storage* c) {
  CFormat::store(c, beta == 0.0f ? value : vfma(vset(beta), CFormat::load(c), value));
}

// One kMr x kNr tile of C from a strip of A and a panel of B (kc values each), accumulators
// in registers; partial tiles (the edges of C) are stored through a buffer.
template <typename CFormat>
void micro_tile(int64_t kc, const float* a, int64_t row_stride, int64_t k_stride, const float* b, const MicroTarget& t,
                typename CFormat::Storage* c, int64_t ldc) {
  vf c0[kMr], c1[kMr];
  const bool full = t.rows == kMr && t.cols == kNr;
  EMBER_UNROLLED
  for (int i = 0; i < kMr; ++i) {
    if (t.resume && full) {
      c0[i] = vload(t.acc + i * t.ld_acc);
      c1[i] = vload(t.acc + i * t.ld_acc + kNativeWidth);
    } else {
      c0[i] = c1[i] = vset(0.0f);
    }
  }
  if (t.resume && !full) {
    float start[kMr][kNr] = {};
    for (int64_t i = 0; i < t.rows; ++i)
      for (int64_t j = 0; j < t.cols; ++j) start[i][j] = t.acc[i * t.ld_acc + j];
    EMBER_UNROLLED
    for (int i = 0; i < kMr; ++i) {
      c0[i] = vload(start[i]);
      c1[i] = vload(start[i] + kNativeWidth);
    }
  }
  for (int64_t p = 0; p < kc; ++p) {
    const vf b0 = vload(b + p * kNr), b1 = vload(b + p * kNr + kNativeWidth);
    const float* a_p = a + p * k_stride;
    EMBER_UNROLLED
    for (int i = 0; i < kMr; ++i) {
      const vf ai = vset(a_p[i * row_stride]);
      c0[i] = vfma(ai, b0, c0[i]);
      c1[i] = vfma(ai, b1, c1[i]);
    }
  }
  if (!t.last_block && full) {
    EMBER_UNROLLED
    for (int i = 0; i < kMr; ++i) {
      vstore(t.acc + i * t.ld_acc, c0[i]);
      vstore(t.acc + i * t.ld_acc + kNativeWidth, c1[i]);
    }
    return;
  }
  const vf alpha = vset(t.alpha);
  if (full) {
    EMBER_UNROLLED
    for (int i = 0; i < kMr; ++i) {
      store_final<CFormat>(vmul(alpha, c0[i]), t.beta, c + i * ldc);
      store_final<CFormat>(vmul(alpha, c1[i]), t.beta, c + i * ldc + kNativeWidth);
    }
    return;
  }
  float sums[kMr][kNr];
  EMBER_UNROLLED
  for (int i = 0; i < kMr; ++i) {
    vstore(sums[i], t.last_block ? vmul(alpha, c0[i]) : c0[i]);
    vstore(sums[i] + kNativeWidth, t.last_block ? vmul(alpha, c1[i]) : c1[i]);
  }
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t j = 0; j < t.cols; ++j) {
      if (!t.last_block) {
        t.acc[i * t.ld_acc + j] = sums[i][j];
      } else {
        typename CFormat::Storage& out = c[i * ldc + j];
        out = CFormat::from_float(t.beta == 0.0f ? sums[i][j] : scalar_fma(t.beta, CFormat::to_float(out), sums[i][j]));
      }
    }
  }
}

// One tile of C (PackedGemmTile), single-threaded: for each kPackedNc columns and k block, B
// is packed once; for each kPackedMc rows, A; then panel by panel, strip by strip.
template <typename Format, typename CFormat>
void packed_tile(const PackedGemmTile& g) {
  using Storage = typename Format::Storage;
  const Storage* a = static_cast<const Storage*>(g.a);
  const Storage* b = static_cast<const Storage*>(g.b);
  auto* c = static_cast<typename CFormat::Storage*>(g.c);
  const int64_t k_block = packed_k_block(g.k);
  for (int64_t j0 = 0; j0 < g.n; j0 += kPackedNc) {
    const int64_t nj = g.n - j0 < kPackedNc ? g.n - j0 : kPackedNc;
    for (int64_t p0 = 0; p0 < g.k; p0 += k_block) {
      const int64_t kc = g.k - p0 < k_block ? g.k - p0 : k_block;
      pack_b<Format>(g.trans_b ? b + j0 * g.ldb + p0 : b + p0 * g.ldb + j0, g.ldb, g.trans_b, kc, nj, g.b_pack);
      for (int64_t i0 = 0; i0 < g.m; i0 += kPackedMc) {
        const int64_t mi = g.m - i0 < kPackedMc ? g.m - i0 : kPackedMc;
        const PackedA block =
            pack_a<Format>(g.trans_a ? a + p0 * g.lda + i0 : a + i0 * g.lda + p0, g.lda, g.trans_a, mi, kc, g.a_pack);
        for (int64_t j = 0; j < nj; j += kNr) {
          for (int64_t i = 0; i < mi; i += kMr) {
            const MicroTarget target{g.c_acc ? g.c_acc + (i0 + i) * nj + j : nullptr,
                                     nj,
                                     p0 > 0,
                                     p0 + kc == g.k,
                                     mi - i < kMr ? mi - i : kMr,
                                     nj - j < kNr ? nj - j : kNr,
                                     g.alpha,
                                     g.beta};
            micro_tile<CFormat>(kc, block.data + i * block.row_stride, block.row_stride, block.k_stride,
                                g.b_pack + j * kc, target, c + (i0 + i) * g.ldc + j0 + j, g.ldc);
          }
        }
      }
    }
  }
}

template <typename Format>
void packed_product(const PackedGemmTile& tile) {
  if (tile.c_float32) packed_tile<Format, F32>(tile);
  else packed_tile<Format, Format>(tile);
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

#ifndef EMBER_RT_CPU  // ember-rt clears in a pass of its own (Note [Runtime size], gemm_openblas.cpp)
void gemm_narrow_clearing_bf16(float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                               int64_t ld_dst) {
  narrow_rows<Bf16, true>(src, ld_src, rows, cols, beta, dst, ld_dst);
}

void gemm_narrow_clearing_f16(float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                              int64_t ld_dst) {
  narrow_rows<F16, true>(src, ld_src, rows, cols, beta, dst, ld_dst);
}
#endif

void gemm_few_rows_bf16(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                        int64_t ldb, float* c, int64_t ldc) {
  few_rows<Bf16>(m, n, k, alpha, a, k, trans_b, b, ldb, c, ldc);
}

void gemm_few_rows_f16(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                       int64_t ldb, float* c, int64_t ldc) {
  few_rows<F16>(m, n, k, alpha, a, k, trans_b, b, ldb, c, ldc);
}

void gemm_packed_bf16(const PackedGemmTile& tile) { packed_product<Bf16>(tile); }

void gemm_packed_f16(const PackedGemmTile& tile) { packed_product<F16>(tile); }

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
