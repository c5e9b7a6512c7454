// The OpenBLAS backend: float32/float64 straight to sgemm/dgemm tiles, bf16/f16 as float32
// blocks (Note [Low-precision GEMM]), and what OpenBLAS runs on this CPU.
#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_info.h"
#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/gemm_backend.h"
#include "cpu/gemm_blocks.h"

extern "C" char* openblas_get_corename();
extern "C" char* openblas_get_config();

namespace ember::cpu {

const BlockFormat<float> kBFloat16Format{
    2,
    [](const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_widen_bf16)(static_cast<const uint16_t*>(src), ld_src, rows, cols, dst, ld_dst);
    },
    [](const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_bf16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    },
#ifndef EMBER_RT_CPU
    [](float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_clearing_bf16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    }
#endif
};

const BlockFormat<float> kFloat16Format{
    2,
    [](const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_widen_f16)(static_cast<const uint16_t*>(src), ld_src, rows, cols, dst, ld_dst);
    },
    [](const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_f16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    },
#ifndef EMBER_RT_CPU
    [](float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_clearing_f16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    }
#endif
};

namespace {


// The instruction set of an OpenBLAS core's kernels (OpenBLAS's kernel/x86_64 names; builds
// without DYNAMIC_ARCH spell them in capitals).
Isa core_isa(std::string core) {
  for (char& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* name : {"skylakex", "cooperlake", "sapphirerapids"})
    if (core == name) return Isa::AVX512;
  for (const char* name : {"haswell", "zen", "excavator"})
    if (core == name) return Isa::AVX2;
  for (const char* name : {"sandybridge", "bulldozer", "piledriver", "steamroller"})
    if (core == name) return Isa::AVX;
  return Isa::SSE;  // Prescott, Core2, Nehalem, Atom, Opteron, ...: the generic kernels
}

// Note [OpenBLAS generic kernel]
// On a CPU model it does not know (a current Xeon for Debian's 0.3.21), OpenBLAS runs generic
// SSE kernels. libember's autotuning then picks another backend; ember-rt has only this one.
// So float32 products run on ember's rows kernel (gemm_rows_f32, run-time dispatched): 3-5x
// the generic gemv at the GPT's decode shapes, ~2.5x its gemm at prefill shapes. One-row
// products always do: as fast as OpenBLAS's AVX2 gemv there, and the same result whichever
// core OpenBLAS picked.
bool kernel_below_cpu(Isa kernel_isa) {
  return kernel_isa < std::min(detect_isa_features().best_vector_isa(), Isa::AVX2);
}

bool openblas_kernel_is_generic() {
  static const bool generic = kernel_below_cpu(core_isa(openblas_get_corename()));
  return generic;
}

// Note [OpenBLAS threads]
// OpenBLAS's thread count is one setting for the whole process, not a per-call argument, and
// its threads spin for a while after each threaded call. The backend sets it to 1 before its
// first product and never raises it: products are split into tiles on ember's pool instead
// (Note [GEMM tiles] in gemm.cpp), and a call made from a pool thread runs its tiles on that
// thread. So OpenBLAS never competes with the pool for the cores, and its results do not
// depend on the thread count. The setting is OpenBLAS's own: code in the same process that
// calls OpenBLAS directly runs single-threaded too once ember has run an OpenBLAS product.
void use_single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE blas_trans(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// One row of C (a decode step's products): OpenBLAS 0.3.21's gemm packs all of B for it, its
// gemv reads B once, 4-6x faster at the GPT's decode shapes. y = alpha op(B)^T x + beta y.
void blas_row(bool ta, bool tb, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
              int64_t ldb, float beta, float* c) {
  if (beta == 0.0f) std::fill_n(c, n, 0.0f);  // gemv scales y by beta: 0 * NaN must not survive
  cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, static_cast<int>(tb ? n : k), static_cast<int>(tb ? k : n),
              alpha, b, static_cast<int>(ldb), a, ta ? static_cast<int>(lda) : 1, beta, c, 1);
}

void blas_row(bool ta, bool tb, int64_t n, int64_t k, double alpha, const double* a, int64_t lda, const double* b,
              int64_t ldb, double beta, double* c) {
  if (beta == 0.0) std::fill_n(c, n, 0.0);
  cblas_dgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, static_cast<int>(tb ? n : k), static_cast<int>(tb ? k : n),
              alpha, b, static_cast<int>(ldb), a, ta ? static_cast<int>(lda) : 1, beta, c, 1);
}

// Arguments already validated by fits_blas. float32 products that overwrite C with A in rows
// run on ember's rows kernel when it is faster (Note [OpenBLAS generic kernel]).
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const bool a_in_rows = !ta || (m == 1 && lda == 1);
  if (beta == 0.0f && k > 0 && a_in_rows && (m == 1 || openblas_kernel_is_generic()))
    return EMBER_KERNEL(gemm_rows_f32)(m, n, k, alpha, a, ta ? k : lda, tb, b, ldb, c, ldc);
  if (m == 1 && k > 0) return blas_row(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);
  cblas_sgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 1 && k > 0) return blas_row(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);
  cblas_dgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

template <typename T>
void blas_gemm_tiled(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                     const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  for_each_gemm_tile(m, n, k, [&](const GemmTile& t) {
    blas_gemm(ta, tb, t.rows, t.cols, k, alpha, ta ? a + t.i0 : a + t.i0 * lda, lda, tb ? b + t.j0 * ldb : b + t.j0,
              ldb, beta, c + t.i0 * ldc + t.j0, ldc);
  });
}

// BLAS takes 32-bit sizes and wants ld >= max(1, cols) even for a single row, where the
// stride is never used: fix that case up, refuse overlapping rows and huge sizes.
bool fits_blas(int64_t rows, int64_t cols, int64_t& ld) {
  if (rows > INT_MAX || cols > INT_MAX) return false;
  if (rows == 1) {
    ld = std::max<int64_t>(cols, 1);
    return true;
  }
  return ld >= std::max<int64_t>(cols, 1) && ld <= INT_MAX;
}

// Copies for float32/float64 operands that BLAS cannot take in place (rare, see fits_blas).
template <typename T>
const BlockFormat<T> kCopyFormat{
    sizeof(T),
    [](const void* src, int64_t ld_src, int64_t rows, int64_t cols, T* dst, int64_t ld_dst) {
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(dst + r * ld_dst, static_cast<const T*>(src) + r * ld_src, cols * sizeof(T));
    },
    [](const T* src, int64_t ld_src, int64_t rows, int64_t cols, T beta, void* dst, int64_t ld_dst) {
      for (int64_t r = 0; r < rows; ++r) {
        T* d = static_cast<T*>(dst) + r * ld_dst;
        const T* s = src + r * ld_src;
        for (int64_t j = 0; j < cols; ++j) d[j] = beta == T(0) ? s[j] : s[j] + beta * d[j];
      }
    }};

template <typename T>
void gemm_blas_or_blocked(const GemmArgs& g) {
  int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  const bool ta = g.trans_a, tb = g.trans_b;
  if (fits_blas(ta ? g.k : g.m, ta ? g.m : g.k, lda) && fits_blas(tb ? g.n : g.k, tb ? g.k : g.n, ldb) &&
      fits_blas(g.m, g.n, ldc)) {
    blas_gemm_tiled(ta, tb, g.m, g.n, g.k, static_cast<T>(g.alpha), static_cast<const T*>(g.a), lda,
                    static_cast<const T*>(g.b), ldb, static_cast<T>(g.beta), static_cast<T*>(g.c), ldc);
  } else {
    gemm_blocked<T>(kCopyFormat<T>, kCopyFormat<T>, blas_gemm_tiled<T>, ta, tb, g.m, g.n, g.k, static_cast<T>(g.alpha), static_cast<const char*>(g.a),
                    lda, static_cast<const char*>(g.b), ldb, static_cast<T>(g.beta), static_cast<char*>(g.c), ldc);
  }
}

// Note [Low-precision tiles]
// Where k fits one block (kBlock; every product of a training step), a bf16/f16 product runs
// tile by tile (Note [GEMM tiles]), a tile in bands of rows: a band widens its rows of A into
// a float32 buffer of its thread, kTileK values of k at a time, multiplies them into float32
// sums of its own and rounds those into C, so the widened rows and the sums (kBandFloats at
// most) stay in the core's cache; B is widened once per column block, for every tile. (Where
// tiles split the columns and k is short, A is widened once, before them, rather than once
// per column tile. Where k takes several spans and a tile is one band, as in a weight
// gradient, each tile widens its columns of B a span at a time too: a float32 copy of all of B
// went through memory. A float32 C takes the sums directly.) Converting whole blocks (Note
// [Low-precision GEMM]) sent the float32 A and C through memory (C of 2048 x 512 is 4 MB)
// between passes of their own; a pool thread's tile as one band did the same to its 2 MB of
// sums. A product with k in one span has the sums of the whole-block path (one sgemm over all
// of k, rounded once); longer ones add the spans' sums in order. The sums buffer reads zero
// between products (zeroed_workspace: the rounding into C clears what it reads), so every span
// adds with beta 1; with beta 0 OpenBLAS zeroes its C in a pass of its own first (2-6% of the
// training step's bf16 products under the avx2 cap). Measured: docs/GEMM.md.
constexpr int64_t kTileK = 512;
constexpr int64_t kBandFloats = int64_t{1} << 18;  // a band's widened A and float32 sums: 1 MB
// Bands are sized as for at least this many columns of sums, so that products of one input
// with up to that many columns (a layer's query, key and value) cut their rows alike and can
// share their widened rows (Note [Grouped low-precision tiles]).
constexpr int64_t kBandMinColumns = 256;

// Rows of a band of a tile `cols` wide.
int64_t band_rows(int64_t k, int64_t cols) {
  return std::max<int64_t>(16, kBandFloats / (std::min(k, kTileK) + std::max(cols, kBandMinColumns)) / 16 * 16);
}

// Rounds rows x cols sums (row stride cols) into C, leaving them zero (zeroed_workspace).
// ember-rt clears in a second pass: its kernels have no clearing form (Note [Runtime size]).
void narrow_clearing(const BlockFormat<float>& format, float* sums, int64_t rows, int64_t cols, float beta, void* c,
                     int64_t ldc) {
#ifdef EMBER_RT_CPU
  format.narrow(sums, cols, rows, cols, beta, c, ldc);
  std::fill_n(sums, rows * cols, 0.0f);
#else
  format.narrow_clearing(sums, cols, rows, cols, beta, c, ldc);
#endif
}

void gemm_low_precision_tiles(const BlockFormat<float>& format, const BlockFormat<float>& c_format, const GemmArgs& g) {
  const bool ta = g.trans_a, tb = g.trans_b;
  const int64_t m = g.m, n = g.n, k = g.k;
  const auto* a = static_cast<const char*>(g.a);
  const auto* b = static_cast<const char*>(g.b);
  auto* c = static_cast<char*>(g.c);
  const auto element = static_cast<int64_t>(format.element_size), c_element = static_cast<int64_t>(c_format.element_size);
  const auto alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
  // A float32 C takes the sums where they are made, without a buffer and a copy.
  int64_t ldc = g.ldc;
  const bool c_direct = &c_format == &kCopyFormat<float> && fits_blas(m, n, ldc);
  // Sums in the buffer kept zero (not where OpenBLAS's generic kernel runs: there beta 0 picks
  // ember's rows kernel instead).
  const bool zeroed_sums = !c_direct && &c_format != &kCopyFormat<float> && !openblas_kernel_is_generic();
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nj = std::min(kBlock, n - j0);
    const int64_t b_cols = tb ? k : nj;  // the widened block keeps B's stored orientation
    float* b_block = nullptr;
    for (int64_t i0 = 0; i0 < m; i0 += kBlock) {
      const int64_t mi = std::min(kBlock, m - i0);
      const GemmTileShape shape = gemm_tile_shape(mi, nj, k);
      // Where k takes several spans and a tile is one band (a weight gradient: k the tokens),
      // each tile widens the spans of its columns of B too, into its thread's cache, rather
      // than reading them from a float32 copy of all of B.
      const bool b_per_span = k > kTileK && shape.rows <= band_rows(k, shape.cols);
      if (!b_per_span && b_block == nullptr) {
        b_block = workspace<float>(1, k * nj);
        widen_block(format, b, g.ldb, tb ? j0 : 0, tb ? 0 : j0, tb ? nj : k, b_cols, b_block);
      }
      // op(A)'s rows i0.. widened as stored: mi x k, or k x mi where A is transposed.
      const int64_t a_cols = ta ? mi : k;
      const bool a_per_tile = k > kTileK || shape.cols >= nj;
      float* a_block = a_per_tile ? nullptr : workspace<float>(3, mi * k);
      if (!a_per_tile) widen_block(format, a, g.lda, ta ? 0 : i0, ta ? i0 : 0, ta ? k : mi, a_cols, a_block);
      for_each_gemm_tile(mi, nj, k, [&](const GemmTile& t) {
        const int64_t cols = t.cols, band = band_rows(k, cols);
        for (int64_t r0 = 0; r0 < t.rows; r0 += band) {
          const int64_t rows = std::min(band, t.rows - r0), first_row = i0 + t.i0 + r0;
          char* c_band = c + (first_row * g.ldc + j0 + t.j0) * c_element;
          float* sums = c_direct ? reinterpret_cast<float*>(c_band)
                        : zeroed_sums  ? zeroed_workspace(rows * cols)
                                       : workspace<float>(2, rows * cols);
          const int64_t ld_sums = c_direct ? ldc : cols;
          const float first_beta = c_direct ? beta : zeroed_sums ? 1.0f : 0.0f;
          if (!a_per_tile) {
            const float* a_rows = ta ? a_block + t.i0 + r0 : a_block + (t.i0 + r0) * a_cols;
            const float* b_tile = tb ? b_block + t.j0 * b_cols : b_block + t.j0;
            blas_gemm(ta, tb, rows, cols, k, alpha, a_rows, a_cols, b_tile, b_cols, first_beta, sums, ld_sums);
          }
          // The band's rows of A a span of k at a time (all of k up to kTileK), their sums
          // added into the band's.
          for (int64_t p0 = 0; a_per_tile && p0 < k; p0 += kTileK) {
            const int64_t span = std::min(kTileK, k - p0);
            float* a_rows = workspace<float>(0, rows * span);
            if (ta) format.widen(a + (p0 * g.lda + first_row) * element, g.lda, span, rows, a_rows, rows);
            else format.widen(a + (first_row * g.lda + p0) * element, g.lda, rows, span, a_rows, span);
            const float* b_span;
            int64_t ld_span;
            if (b_per_span) {
              float* widened = workspace<float>(3, span * cols);  // slot 3 holds no a_block here
              const int64_t col0 = j0 + t.j0;
              if (tb) format.widen(b + (col0 * g.ldb + p0) * element, g.ldb, cols, span, widened, span);
              else format.widen(b + (p0 * g.ldb + col0) * element, g.ldb, span, cols, widened, cols);
              b_span = widened;
              ld_span = tb ? span : cols;
            } else {
              b_span = tb ? b_block + t.j0 * b_cols + p0 : b_block + p0 * b_cols + t.j0;
              ld_span = b_cols;
            }
            blas_gemm(ta, tb, rows, cols, span, alpha, a_rows, ta ? rows : span, b_span, ld_span,
                      p0 == 0 ? first_beta : 1.0f, sums, ld_sums);
          }
          if (zeroed_sums) narrow_clearing(c_format, sums, rows, cols, beta, c_band, g.ldc);
          else if (!c_direct) c_format.narrow(sums, cols, rows, cols, beta, c_band, g.ldc);
        }
      });
    }
  }
}

}  // namespace

#ifndef EMBER_RT_CPU
// Note [Grouped low-precision tiles]
// Members sharing A (gemm_group_nt: a layer's query, key and value projections) whose bf16/f16
// products OpenBLAS runs: where every member's own product (gemm_low_precision_tiles, k in one
// span) would cut A's rows into the same tiles and bands, without cutting its columns, each
// band of A's rows is widened once for all the members instead of once per member; each
// member's B is widened once and its sums rounded into its C. Every member then makes the very
// sgemm calls of its own product (OpenBLAS's sums can depend on the shape of a call: a band
// of 4 rows took its small-matrix kernel and other bits than 20), so its bits are its own
// product's. Members whose tiles would differ run as separate products.
namespace {

// The tile and band rows that every member's own product would use for a block of `rows`
// rows of A (gemm_low_precision_tiles takes A's rows kBlock at a time), or nullopt.
std::optional<std::pair<int64_t, int64_t>> shared_row_cuts(int64_t rows, int64_t k,
                                                           std::span<const GemmGroupMember> members) {
  std::optional<std::pair<int64_t, int64_t>> cuts;
  for (const GemmGroupMember& member : members) {
    if (member.n == 0) continue;
    const GemmTileShape shape = gemm_tile_shape(rows, member.n, k);
    if (member.n > kBlock || shape.cols < member.n) return std::nullopt;
    const std::pair<int64_t, int64_t> own{shape.rows, band_rows(k, member.n)};
    if (cuts && *cuts != own) return std::nullopt;
    cuts = own;
  }
  return cuts;
}

}  // namespace

bool openblas_group_can_run(const GemmArgs& shared, std::span<const GemmGroupMember> members) {
  const int64_t m = shared.m, k = shared.k;
  return (shared.dtype == kBFloat16 || shared.dtype == kFloat16) && !shared.c_float32 && k > 0 && k <= kTileK &&
         !openblas_kernel_is_generic() && shared_row_cuts(std::min(m, kBlock), k, members) &&
         (m <= kBlock || m % kBlock == 0 || shared_row_cuts(m % kBlock, k, members));
}

void openblas_group_run(const GemmArgs& shared, std::span<const GemmGroupMember> members) {
  use_single_threaded_blas();
  const BlockFormat<float>& format = shared.dtype == kBFloat16 ? kBFloat16Format : kFloat16Format;
  const int64_t m = shared.m, k = shared.k, element = static_cast<int64_t>(format.element_size);
  int64_t columns = 0;
  for (const GemmGroupMember& member : members) columns += member.n;
  // The members' B widened one after another ([n, k] each) by this thread, read by the pool.
  float* b_wide = workspace<float>(1, columns * k);
  std::vector<const float*> b_rows;
  for (const GemmGroupMember& member : members) {
    b_rows.push_back(b_wide);
    widen_block(format, static_cast<const char*>(member.b), member.ldb, 0, 0, member.n, k, b_wide);
    b_wide += member.n * k;
  }
  const char* a = static_cast<const char*>(shared.a);
  for (int64_t i0 = 0; i0 < m; i0 += kBlock) {
    const int64_t mi = std::min(kBlock, m - i0);
    const auto [tile_rows, band] = *shared_row_cuts(mi, k, members);
    parallel_for(0, num_chunks(0, mi, tile_rows), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t tile_end = i0 + std::min(mi, (t + 1) * tile_rows);
        for (int64_t r0 = i0 + t * tile_rows; r0 < tile_end; r0 += band) {
          const int64_t rows = std::min(band, tile_end - r0);
          float* a_rows = workspace<float>(0, rows * k);
          format.widen(a + r0 * shared.lda * element, shared.lda, rows, k, a_rows, k);
          for (size_t i = 0; i < members.size(); ++i) {
            const GemmGroupMember& member = members[i];
            if (member.n == 0) continue;
            float* sums = zeroed_workspace(rows * member.n);
            blas_gemm(false, true, rows, member.n, k, 1.0f, a_rows, k, b_rows[i], k, 1.0f, sums, member.n);
            narrow_clearing(format, sums, rows, member.n, 0.0f, static_cast<char*>(member.c) + r0 * member.ldc * element,
                            member.ldc);
          }
        }
      }
    });
  }
}
#endif

const BlockFormat<float>& float32_format() { return kCopyFormat<float>; }

bool openblas_can_run(const GemmArgs&) { return true; }

void openblas_run(const GemmArgs& g) {
  use_single_threaded_blas();
  switch (g.dtype) {
    case kFloat32: return gemm_blas_or_blocked<float>(g);
    case kFloat64: return gemm_blas_or_blocked<double>(g);
    default: {
      const BlockFormat<float>& format = g.dtype == kBFloat16 ? kBFloat16Format : kFloat16Format;
      if (g.k > 0 && g.k <= kBlock)  // Note [Low-precision tiles]
        return gemm_low_precision_tiles(format, g.c_float32 ? kCopyFormat<float> : format, g);
      return gemm_blocked<float>(format, g.c_float32 ? kCopyFormat<float> : format, blas_gemm_tiled<float>, g.trans_a,
                                 g.trans_b, g.m,
                                 g.n, g.k, static_cast<float>(g.alpha), static_cast<const char*>(g.a), g.lda,
                                 static_cast<const char*>(g.b), g.ldb, static_cast<float>(g.beta),
                                 static_cast<char*>(g.c), g.ldc);
    }
  }
}

GemmBackendReport openblas_report() {
  GemmBackendReport report;
  report.backend = GemmBackend::OpenBLAS;
  report.available = true;
  const std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell ..."
  const size_t space = config.find(' ');
  report.version = space == std::string::npos ? config : config.substr(space + 1, config.find(' ', space + 1) - space - 1);
  report.kernel = openblas_get_corename();
  const Isa kernel_isa = core_isa(report.kernel);
  const Isa cpu_isa = cpu_features().best_vector_isa();
  report.kernel_isa = isa_name(kernel_isa);
  // A kernel below AVX2 on a CPU that has AVX2 is OpenBLAS's generic fallback for a CPU model
  // it does not know: 4-7x slower than the machine (Note [GEMM backends]).
  report.fits_cpu = !kernel_below_cpu(kernel_isa);
  report.why = std::string("core ") + report.kernel + " (" + report.kernel_isa + " kernels) on a CPU with " + isa_name(cpu_isa) +
               (report.fits_cpu ? (kernel_isa < cpu_isa ? ": fits, though narrower than the CPU" : ": fits")
                                : ": a generic fallback for a CPU model this OpenBLAS does not know; not used by auto, "
                                  "and its float32 products run on ember's rows kernel");
  report.dtypes = {kFloat32, kFloat64, kBFloat16, kFloat16};
  return report;
}

}  // namespace ember::cpu
