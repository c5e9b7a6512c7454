#include "cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>

#include "cpu/dispatch.h"
#include "cpu/parallel.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

// Note [Low-precision GEMM]
// bf16/f16 products are computed by converting blocks of A and B to float32, multiplying
// them with sgemm into a float32 block of C (k blocks accumulate there) and rounding that
// block once into C, fused with + beta * C. This is float32 accumulation with a single final
// rounding, and runs at sgemm speed because conversion is O(n^2) against O(n^3) multiply.
// Blocks are at most kBlock in each dimension, so the workspace is bounded (3 x 16 MiB)
// whatever the shape: a full float32 copy of a bf16 LM head alone would be gigabytes. Up to
// kBlock (the common case) every element is converted exactly once; beyond it A is
// reconverted once per column block of C and B once per row block (when k > kBlock),
// about one conversion per kBlock multiply-adds, a few percent of the time at most.
// With few rows (decoding a token at a time) converting B would cost more than the product,
// which is bound by reading B: gemm_few_rows reads B once, in place (3-5x faster at m <= 4).
// float32/float64 operands whose strides BLAS rejects (ld 0 broadcasts, > 2^31 sizes) take
// the same blocked path with plain copies.
constexpr int64_t kBlock = 2048;
constexpr int64_t kConvertChunk = 1 << 15;  // elements per parallel chunk of a conversion
// Few-rows path up to these m (measured crossovers with the blocked path, k = n = 4096).
constexpr int64_t kFewRowsTransposedB = 8;
constexpr int64_t kFewRowsB = 4;
constexpr int64_t kFewRowsChunk = 1 << 17;  // elements of B per parallel chunk
constexpr int64_t kFewRowsColumns = 1024;
// Batches of products up to this size run in parallel over the batch, in chunks of about
// kBatchChunkWork multiply-adds; larger products run one by one on all threads (measured).
constexpr double kBatchParallelWork = 1 << 22;
constexpr double kBatchChunkWork = 1 << 18;

// Note [GEMM tiles]
// OpenBLAS always runs single-threaded; ember's pool runs a product as tiles of C, each one
// sgemm call. Two reasons: OpenBLAS's own threads spin in sched_yield for a while after every
// threaded call and fought the pool for the cores (a quarter of a 2-core training step went
// to that spinning, perf), and tile boundaries depend only on the shape, so float32 products
// are bitwise identical for any thread count. A call from inside a parallel region runs the
// same tiles one after another.
constexpr int64_t kTileAlign = 16;
constexpr int64_t kMinTileExtent = 64;
constexpr double kMinTileWork = 1 << 25;  // multiply-adds: below this a tile costs more than it gains
// Products of at least this many multiply-adds (~0.15 ms on one core) still run as two tiles:
// on two cores one tile leaves the other idle (the training step's 2048x64x192 products).
constexpr double kMinSplitWork = 1 << 22;
constexpr int64_t kMaxTiles = 32;

void use_single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE blas_trans(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// Arguments already validated by fits_blas.
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

// Runs a product as a grid of tiles of C chosen by the shape alone (Note [GEMM tiles]). Each
// tile repacks its rows of A and columns of B, so tiles are kept near square: halving the
// longer side until there are enough tiles for the pool.
template <typename T>
void blas_gemm_tiled(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                     const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t wanted =
      work < kMinSplitWork ? 1 : std::clamp<int64_t>(static_cast<int64_t>(work / kMinTileWork), 2, kMaxTiles);
  int64_t tile_m = m, tile_n = n;
  auto halved = [](int64_t extent) { return (extent / 2 + kTileAlign - 1) / kTileAlign * kTileAlign; };
  while (num_chunks(0, m, tile_m) * num_chunks(0, n, tile_n) < wanted) {
    int64_t& longer = tile_m >= tile_n ? tile_m : tile_n;
    const int64_t next = halved(longer);
    if (next < kMinTileExtent || next >= longer) break;
    longer = next;
  }
  const int64_t tiles_n = num_chunks(0, n, tile_n);
  parallel_for(0, num_chunks(0, m, tile_m) * tiles_n, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t i0 = t / tiles_n * tile_m, j0 = t % tiles_n * tile_n;
      const int64_t rows = std::min(tile_m, m - i0), cols = std::min(tile_n, n - j0);
      blas_gemm(ta, tb, rows, cols, k, alpha, ta ? a + i0 : a + i0 * lda, lda, tb ? b + j0 * ldb : b + j0, ldb, beta,
                c + i0 * ldc + j0, ldc);
    }
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

// How one storage type enters and leaves the Acc (float32 or float64) blocks.
template <typename Acc>
struct BlockFormat {
  size_t element_size;
  void (*widen)(const void* src, int64_t ld_src, int64_t rows, int64_t cols, Acc* dst, int64_t ld_dst);
  // dst = src + beta * dst rounded to the storage type; dst is not read when beta == 0.
  void (*narrow)(const Acc* src, int64_t ld_src, int64_t rows, int64_t cols, Acc beta, void* dst, int64_t ld_dst);
};

const BlockFormat<float> kBFloat16Format{
    2,
    [](const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_widen_bf16)(static_cast<const uint16_t*>(src), ld_src, rows, cols, dst, ld_dst);
    },
    [](const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_bf16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    }};

const BlockFormat<float> kFloat16Format{
    2,
    [](const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_widen_f16)(static_cast<const uint16_t*>(src), ld_src, rows, cols, dst, ld_dst);
    },
    [](const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_f16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    }};

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

// Per-thread block buffers, kept between calls (at most 3 x kBlock^2 floats a thread): with
// buffers allocated per call, bf16 2048^3 measured 15-20% slower (page faults).
template <typename Acc>
Acc* workspace(int slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<Acc[]> data;
    int64_t size = 0;
  };
  thread_local Buffer buffers[3];
  Buffer& buffer = buffers[slot];
  if (buffer.size < count) {
    buffer.data.reset();
    buffer.data = std::make_unique_for_overwrite<Acc[]>(count);
    buffer.size = count;
  }
  return buffer.data.get();
}

// Conversions are memory-bound: spread rows over the pool, ~kConvertChunk elements a chunk.
template <typename Fn>
void for_row_chunks(int64_t rows, int64_t cols, const Fn& fn) {
  parallel_for(0, rows, std::max<int64_t>(1, kConvertChunk / std::max<int64_t>(cols, 1)), fn);
}

// Widens the stored block at (row0, col0) of a matrix into dst with ld_dst = cols.
template <typename Acc>
void widen_block(const BlockFormat<Acc>& format, const char* base, int64_t ld, int64_t row0, int64_t col0,
                 int64_t rows, int64_t cols, Acc* dst) {
  const char* src = base + (row0 * ld + col0) * static_cast<int64_t>(format.element_size);
  for_row_chunks(rows, cols, [&](int64_t r0, int64_t r1) {
    format.widen(src + r0 * ld * static_cast<int64_t>(format.element_size), ld, r1 - r0, cols, dst + r0 * cols, cols);
  });
}

// See Note [Low-precision GEMM]. Requires m, n, k > 0.
template <typename Acc>
void gemm_blocked(const BlockFormat<Acc>& format, bool ta, bool tb, int64_t m, int64_t n, int64_t k, Acc alpha,
                  const char* a, int64_t lda, const char* b, int64_t ldb, Acc beta, char* c, int64_t ldc) {
  const int64_t block_m = std::min(m, kBlock), block_n = std::min(n, kBlock), block_k = std::min(k, kBlock);
  Acc* a_block = workspace<Acc>(0, block_m * block_k);
  Acc* b_block = workspace<Acc>(1, block_k * block_n);
  Acc* c_block = workspace<Acc>(2, block_m * block_n);
  const bool a_single_block = m <= kBlock && k <= kBlock;  // then converted once for all column blocks
  const bool b_single_k_block = k <= kBlock;               // then converted once per column block
  const int64_t element_size = static_cast<int64_t>(format.element_size);
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nj = std::min(kBlock, n - j0);
    for (int64_t i0 = 0; i0 < m; i0 += kBlock) {
      const int64_t mi = std::min(kBlock, m - i0);
      for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
        const int64_t kp = std::min(kBlock, k - p0);
        // Blocks are converted in their stored orientation; sgemm applies the transposes.
        const int64_t a_cols = ta ? mi : kp;
        const int64_t b_cols = tb ? kp : nj;
        if (!a_single_block || j0 == 0)
          widen_block(format, a, lda, ta ? p0 : i0, ta ? i0 : p0, ta ? kp : mi, a_cols, a_block);
        if (!b_single_k_block || i0 == 0)
          widen_block(format, b, ldb, tb ? j0 : p0, tb ? p0 : j0, tb ? nj : kp, b_cols, b_block);
        blas_gemm_tiled(ta, tb, mi, nj, kp, alpha, a_block, a_cols, b_block, b_cols, p0 == 0 ? Acc(0) : Acc(1), c_block,
                        nj);
      }
      char* c_origin = c + (i0 * ldc + j0) * element_size;
      for_row_chunks(mi, nj, [&](int64_t r0, int64_t r1) {
        format.narrow(c_block + r0 * nj, nj, r1 - r0, nj, beta, c_origin + r0 * ldc * element_size, ldc);
      });
    }
  }
}

// See Note [Low-precision GEMM]. Requires m, n, k > 0 and m small.
void gemm_few_rows(ScalarType dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const char* a,
                   int64_t lda, const char* b, int64_t ldb, float beta, char* c, int64_t ldc) {
  const BlockFormat<float>& format = dtype == kBFloat16 ? kBFloat16Format : kFloat16Format;
  const auto kernel = dtype == kBFloat16 ? EMBER_KERNEL(gemm_few_rows_bf16) : EMBER_KERNEL(gemm_few_rows_f16);
  // A as float32 [m, k]; a transposed A (small) is widened as stored, then transposed.
  float* a_rows = workspace<float>(0, m * k);
  if (ta) {
    float* stored = workspace<float>(1, k * m);
    format.widen(a, lda, k, m, stored, m);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t i = 0; i < m; ++i) a_rows[i * k + p] = stored[p * m + i];
  } else {
    format.widen(a, lda, m, k, a_rows, k);
  }
  float* c_rows = workspace<float>(2, m * n);
  const uint16_t* b_values = reinterpret_cast<const uint16_t*>(b);
  // Column chunks: with B transposed (rows of B are columns of C) any width streams; aim for
  // ~kFewRowsChunk elements of B. Otherwise a chunk reads rows of B kFewRowsColumns wide:
  // narrower pieces strided by ldb read 2-5x slower; the chunk's accumulators stay in cache.
  const int64_t grain = tb ? std::max<int64_t>(1, kFewRowsChunk / k) : kFewRowsColumns;
  parallel_for(0, n, grain, [&](int64_t j0, int64_t j1) {
    kernel(m, j1 - j0, k, alpha, a_rows, tb, b_values + (tb ? j0 * ldb : j0), ldb, c_rows + j0, n);
    format.narrow(c_rows + j0, n, m, j1 - j0, beta, c + j0 * 2, ldc);
  });
}

template <typename T>
void gemm_blas_or_blocked(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const void* a, int64_t lda,
                          const void* b, int64_t ldb, double beta, void* c, int64_t ldc) {
  if (fits_blas(ta ? k : m, ta ? m : k, lda) && fits_blas(tb ? n : k, tb ? k : n, ldb) && fits_blas(m, n, ldc)) {
    blas_gemm_tiled(ta, tb, m, n, k, static_cast<T>(alpha), static_cast<const T*>(a), lda, static_cast<const T*>(b),
                    ldb, static_cast<T>(beta), static_cast<T*>(c), ldc);
  } else {
    gemm_blocked<T>(kCopyFormat<T>, ta, tb, m, n, k, static_cast<T>(alpha), static_cast<const char*>(a), lda,
                    static_cast<const char*>(b), ldb, static_cast<T>(beta), static_cast<char*>(c), ldc);
  }
}

// C = beta * C (zeros when beta == 0, without reading C), in the accumulation type.
template <typename T>
void scale_c(int64_t m, int64_t n, double beta, void* c, int64_t ldc) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  if (beta == 1.0) return;
  for (int64_t i = 0; i < m; ++i) {
    T* row = static_cast<T*>(c) + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      row[j] = beta == 0.0 ? T(Acc(0)) : T(static_cast<Acc>(beta) * static_cast<Acc>(row[j]));
  }
}

void check_args(const char* op, ScalarType dtype, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                int64_t ldc) {
  EMBER_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kBFloat16 || dtype == kFloat16, op,
              "unsupported dtype ", dtype);
  EMBER_CHECK(m >= 0 && n >= 0 && k >= 0, op, "negative size m=", m, " n=", n, " k=", k);
  EMBER_CHECK(lda >= 0 && ldb >= 0 && ldc >= 0, op, "negative leading dimension lda=", lda, " ldb=", ldb, " ldc=", ldc);
  EMBER_CHECK(m <= 1 || ldc >= n, op, "rows of C overlap: ldc=", ldc, " < n=", n);
}

// Requires m, n, k > 0 and alpha != 0.
void gemm_nonempty(ScalarType dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                   int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc) {
  switch (dtype) {
    case kFloat32: return gemm_blas_or_blocked<float>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    case kFloat64: return gemm_blas_or_blocked<double>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    default:
      if (m <= (tb ? kFewRowsTransposedB : kFewRowsB)) {
        return gemm_few_rows(dtype, ta, tb, m, n, k, static_cast<float>(alpha), static_cast<const char*>(a), lda,
                             static_cast<const char*>(b), ldb, static_cast<float>(beta), static_cast<char*>(c), ldc);
      }
      return gemm_blocked<float>(dtype == kBFloat16 ? kBFloat16Format : kFloat16Format, ta, tb, m, n, k,
                                 static_cast<float>(alpha), static_cast<const char*>(a), lda,
                                 static_cast<const char*>(b), ldb, static_cast<float>(beta),
                                 static_cast<char*>(c), ldc);
  }
}

}  // namespace

void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc) {
  check_args("gemm", dtype, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0) {
    switch (dtype) {
      case kFloat32: return scale_c<float>(m, n, beta, c, ldc);
      case kFloat64: return scale_c<double>(m, n, beta, c, ldc);
      case kBFloat16: return scale_c<BFloat16>(m, n, beta, c, ldc);
      default: return scale_c<Half>(m, n, beta, c, ldc);
    }
  }
  use_single_threaded_blas();
  gemm_nonempty(dtype, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_batched(ScalarType dtype, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                  double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                  int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c) {
  check_args("gemm_batched", dtype, m, n, k, lda, ldb, ldc);
  EMBER_CHECK(batch >= 0, "gemm_batched", "negative batch ", batch);
  EMBER_CHECK(batch <= 1 || stride_c != 0 || m == 0 || n == 0, "gemm_batched", "all ", batch,
              " outputs alias (stride_c 0)");
  const int64_t item_bytes = static_cast<int64_t>(ember::element_size(dtype));
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      gemm(dtype, trans_a, trans_b, m, n, k, alpha, static_cast<const char*>(a) + i * stride_a * item_bytes, lda,
           static_cast<const char*>(b) + i * stride_b * item_bytes, ldb, beta,
           static_cast<char*>(c) + i * stride_c * item_bytes, ldc);
    }
  };
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kBatchChunkWork / std::max(work, 1.0)));
  if (work <= kBatchParallelWork && num_chunks(0, batch, grain) > 1) {
    parallel_for(0, batch, grain, run);
  } else {
    run(0, batch);
  }
}

}  // namespace ember::cpu
