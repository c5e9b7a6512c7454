// The OpenBLAS backend: float32/float64 straight to sgemm/dgemm tiles, bf16/f16 as float32
// blocks (Note [Low-precision GEMM]), and what OpenBLAS runs on this CPU.
#include <cblas.h>

#include <climits>
#include <cstring>
#include <mutex>
#include <string>

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
    }};

const BlockFormat<float> kFloat16Format{
    2,
    [](const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_widen_f16)(static_cast<const uint16_t*>(src), ld_src, rows, cols, dst, ld_dst);
    },
    [](const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, void* dst, int64_t ld_dst) {
      EMBER_KERNEL(gemm_narrow_f16)(src, ld_src, rows, cols, beta, static_cast<uint16_t*>(dst), ld_dst);
    }};

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
// float32/float64 operands whose strides BLAS rejects (ld 0 broadcasts, > 2^31 sizes) take
// the same blocked path with plain copies.
constexpr int64_t kBlock = 2048;

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

// Widens the stored block at (row0, col0) of a matrix into dst with ld_dst = cols.
template <typename Acc>
void widen_block(const BlockFormat<Acc>& format, const char* base, int64_t ld, int64_t row0, int64_t col0,
                 int64_t rows, int64_t cols, Acc* dst) {
  const char* src = base + (row0 * ld + col0) * static_cast<int64_t>(format.element_size);
  for_row_chunks(rows, cols, [&](int64_t r0, int64_t r1) {
    format.widen(src + r0 * ld * static_cast<int64_t>(format.element_size), ld, r1 - r0, cols, dst + r0 * cols, cols);
  });
}

// See Note [Low-precision GEMM]. A and B are stored as `format` says, C as `c_format`.
template <typename Acc>
void gemm_blocked(const BlockFormat<Acc>& format, const BlockFormat<Acc>& c_format, bool ta, bool tb, int64_t m,
                  int64_t n, int64_t k, Acc alpha, const char* a, int64_t lda, const char* b, int64_t ldb, Acc beta,
                  char* c, int64_t ldc) {
  const int64_t block_m = std::min(m, kBlock), block_n = std::min(n, kBlock), block_k = std::min(k, kBlock);
  Acc* a_block = workspace<Acc>(0, block_m * block_k);
  Acc* b_block = workspace<Acc>(1, block_k * block_n);
  Acc* c_block = workspace<Acc>(2, block_m * block_n);
  const bool a_single_block = m <= kBlock && k <= kBlock;  // then converted once for all column blocks
  const bool b_single_k_block = k <= kBlock;               // then converted once per column block
  const int64_t c_element_size = static_cast<int64_t>(c_format.element_size);
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
      char* c_origin = c + (i0 * ldc + j0) * c_element_size;
      for_row_chunks(mi, nj, [&](int64_t r0, int64_t r1) {
        c_format.narrow(c_block + r0 * nj, nj, r1 - r0, nj, beta, c_origin + r0 * ldc * c_element_size, ldc);
      });
    }
  }
}

template <typename T>
void gemm_blas_or_blocked(const GemmArgs& g) {
  int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  const bool ta = g.trans_a, tb = g.trans_b;
  if (fits_blas(ta ? g.k : g.m, ta ? g.m : g.k, lda) && fits_blas(tb ? g.n : g.k, tb ? g.k : g.n, ldb) &&
      fits_blas(g.m, g.n, ldc)) {
    blas_gemm_tiled(ta, tb, g.m, g.n, g.k, static_cast<T>(g.alpha), static_cast<const T*>(g.a), lda,
                    static_cast<const T*>(g.b), ldb, static_cast<T>(g.beta), static_cast<T*>(g.c), ldc);
  } else {
    gemm_blocked<T>(kCopyFormat<T>, kCopyFormat<T>, ta, tb, g.m, g.n, g.k, static_cast<T>(g.alpha), static_cast<const char*>(g.a),
                    lda, static_cast<const char*>(g.b), ldb, static_cast<T>(g.beta), static_cast<char*>(g.c), ldc);
  }
}

// The instruction set of an OpenBLAS core's kernels (OpenBLAS's kernel/x86_64 names).
Isa core_isa(const std::string& core) {
  for (const char* name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == name) return Isa::AVX512;
  for (const char* name : {"Haswell", "Zen", "Excavator"})
    if (core == name) return Isa::AVX2;
  for (const char* name : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller"})
    if (core == name) return Isa::AVX;
  return Isa::SSE;  // Prescott, Core2, Nehalem, Atom, Opteron, ...: the generic kernels
}

}  // namespace

const BlockFormat<float>& float32_format() { return kCopyFormat<float>; }

bool openblas_can_run(const GemmArgs&) { return true; }

void openblas_run(const GemmArgs& g) {
  use_single_threaded_blas();
  switch (g.dtype) {
    case kFloat32: return gemm_blas_or_blocked<float>(g);
    case kFloat64: return gemm_blas_or_blocked<double>(g);
    default: {
      const BlockFormat<float>& format = g.dtype == kBFloat16 ? kBFloat16Format : kFloat16Format;
      return gemm_blocked<float>(format, g.c_float32 ? kCopyFormat<float> : format, g.trans_a, g.trans_b, g.m,
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
  report.fits_cpu = kernel_isa >= std::min(cpu_isa, Isa::AVX2);
  report.why = std::string("core ") + report.kernel + " (" + report.kernel_isa + " kernels) on a CPU with " + isa_name(cpu_isa) +
               (report.fits_cpu ? (kernel_isa < cpu_isa ? ": fits, though narrower than the CPU" : ": fits")
                                : ": a generic fallback for a CPU model this OpenBLAS does not know; not used by auto");
  report.dtypes = {kFloat32, kFloat64, kBFloat16, kFloat16};
  return report;
}

}  // namespace ember::cpu
