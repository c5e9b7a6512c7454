// ember's own GEMM kernels as a backend, for bf16/f16 products: with few rows (decoding a
// token at a time) a kernel that reads B once, in its storage type; otherwise bf16 on AMX
// tiles where the CPU has them (Note [AMX GEMM]), f16 there as bf16 parts (Note [f16 on
// AMX-BF16]), and for CPUs where no backend has a bf16/f16
// kernel (oneDNN has none below AVX512-BF16 / -FP16) the packed kernel at the AVX2 level (Note
// [Packed low-precision GEMM]) or float32 blocks (Note [Low-precision GEMM]) multiplied on the
// fastest float32 backend.
//
// With few rows a product is bound by reading B: widening B to float32 first or packing it
// (oneDNN) costs more than the product; gemm_few_rows reads B once, in place (3-5x faster
// than the blocked path at m <= 4).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/gemm_backend.h"
#include "cpu/gemm_blocks.h"
#include "cpu/gemm_packed.h"
#include "cpu/parallel.h"

namespace ember::cpu {
namespace {

// Few-rows path up to these m (measured crossovers with the blocked path, k = n = 4096).
constexpr int64_t kFewRowsTransposedB = 8;
constexpr int64_t kFewRowsB = 4;
constexpr int64_t kFewRowsColumns = 1024;

// The few-rows path for one or more products sharing op(A): g gives A, m, k, the transposes,
// alpha and beta; each member its B (n columns of C), C and their strides. The members'
// columns form one range split over the pool: one job for a layer's query, key and value
// products (Note [Grouped products] in gemm.h).
void few_rows_products(const GemmArgs& g, std::span<const GemmGroupMember> members) {
  const BlockFormat<float>& format = g.dtype == kBFloat16 ? kBFloat16Format : kFloat16Format;
  const BlockFormat<float>& c_format = g.c_float32 ? float32_format() : format;
  const auto kernel = g.dtype == kBFloat16 ? EMBER_KERNEL(gemm_few_rows_bf16) : EMBER_KERNEL(gemm_few_rows_f16);
  const int64_t m = g.m, k = g.k;
  // A as float32 [m, k]; a transposed A (small) is widened as stored, then transposed.
  float* a_rows = workspace<float>(0, m * k);
  if (g.trans_a) {
    float* stored = workspace<float>(1, k * m);
    format.widen(g.a, g.lda, k, m, stored, m);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t i = 0; i < m; ++i) a_rows[i * k + p] = stored[p * m + i];
  } else {
    format.widen(g.a, g.lda, m, k, a_rows, k);
  }
  int64_t columns = 0;
  for (const GemmGroupMember& member : members) columns += member.n;
  // Member i's float32 results [m, n_i] start at c_rows + m * (the columns before it).
  float* c_rows = workspace<float>(2, m * columns);
  const bool tb = g.trans_b;
  // Column chunks. With B transposed (rows of B are columns of C) each thread streams one
  // contiguous share of B (Note [Weight streaming]): a decoding step ran 1-3% faster than
  // with chunks of ~128K elements taken in turn, whose streams interleave. Otherwise a chunk
  // reads rows of B kFewRowsColumns wide: narrower pieces strided by ldb read 2-5x slower;
  // the chunk's accumulators stay in cache.
  const int64_t grain = tb ? (columns + num_threads() - 1) / num_threads() : kFewRowsColumns;
  parallel_for(0, columns, grain, [&](int64_t j0, int64_t j1) {
    int64_t first = 0;
    for (const GemmGroupMember& member : members) {
      const int64_t lo = std::max(j0, first) - first, hi = std::min(j1, first + member.n) - first;
      if (lo < hi) {
        const uint16_t* b = static_cast<const uint16_t*>(member.b) + (tb ? lo * member.ldb : lo);
        float* c = c_rows + m * first + lo;
        kernel(m, hi - lo, k, static_cast<float>(g.alpha), a_rows, tb, b, member.ldb, c, member.n);
        c_format.narrow(c, member.n, m, hi - lo, static_cast<float>(g.beta),
                        static_cast<char*>(member.c) + lo * c_format.element_size, member.ldc);
      }
      first += member.n;
    }
  });
}

// Products of many rows on the packed kernel (Note [Packed low-precision GEMM]), one tile of C
// per call on the tile grid of Note [GEMM tiles].
void packed_products(const GemmArgs& g) {
  const auto kernel = g.dtype == kBFloat16 ? EMBER_KERNEL(gemm_packed_bf16) : EMBER_KERNEL(gemm_packed_f16);
  const int64_t item = static_cast<int64_t>(element_size(g.dtype));
  const int64_t c_item = g.c_float32 ? 4 : item;
  for_each_gemm_tile(g.m, g.n, g.k, [&](const GemmTile& t) {
    // Rows kPackedMaxRows at a time: the float32 C buffer stays bounded whatever the tile.
    for (int64_t i0 = t.i0; i0 < t.i0 + t.rows; i0 += kPackedMaxRows) {
      const int64_t rows = std::min(kPackedMaxRows, t.i0 + t.rows - i0);
      const PackedWorkspace sizes = packed_workspace_floats(rows, t.cols, g.k);
      const char* a = static_cast<const char*>(g.a) + (g.trans_a ? i0 : i0 * g.lda) * item;
      const char* b = static_cast<const char*>(g.b) + (g.trans_b ? t.j0 * g.ldb : t.j0) * item;
      char* c = static_cast<char*>(g.c) + (i0 * g.ldc + t.j0) * c_item;
      kernel(PackedGemmTile{g.trans_a, g.trans_b, g.c_float32, rows, t.cols, g.k, static_cast<float>(g.alpha),
                            static_cast<float>(g.beta), a, g.lda, b, g.ldb, c, g.ldc,
                            workspace<float>(0, sizes.a_floats), workspace<float>(1, sizes.b_floats),
                            sizes.c_floats > 0 ? workspace<float>(2, sizes.c_floats) : nullptr});
    }
  });
}

// A workspace slot 64-byte aligned: tile rows that straddle two cache lines read both (the
// products ran at 0.6x unaligned).
float* aligned_workspace(int slot, int64_t floats) {
  const auto address = reinterpret_cast<uintptr_t>(workspace<float>(slot, floats + 16));
  return reinterpret_cast<float*>((address + 63) & ~uintptr_t(63));
}

// Products of many rows on AMX tiles (Note [AMX GEMM] in gemm_packed.h): B packed once, then
// tasks of rows (and column groups) on the pool sharing it.
void amx_products(const GemmArgs& g) {
  const int64_t c_item = g.c_float32 ? 4 : 2;
  const int64_t k_padded = (g.k + 31) / 32 * 32, n_padded = (g.n + 31) / 32 * 32;
  auto tile_at = [&](int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
    return PackedGemmTile{g.trans_a,
                          g.trans_b,
                          g.c_float32,
                          rows,
                          cols,
                          g.k,
                          static_cast<float>(g.alpha),
                          static_cast<float>(g.beta),
                          static_cast<const char*>(g.a) + (g.trans_a ? i0 : i0 * g.lda) * 2,
                          g.lda,
                          static_cast<const char*>(g.b) + (g.trans_b ? j0 * g.ldb : j0) * 2,
                          g.ldb,
                          static_cast<char*>(g.c) + (i0 * g.ldc + j0) * c_item,
                          g.ldc,
                          nullptr,
                          nullptr,
                          nullptr};
  };
  // The caller's buffer, read by every task (the pool's threads see it through the pointer).
  float* shared_b = aligned_workspace(1, k_padded * n_padded / 2);
  const int64_t packs = (g.n + kAmxNc - 1) / kAmxNc;
  const auto pack = EMBER_AMX_KERNEL(gemm_amx_pack_b);
  parallel_for(0, packs, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) {
      PackedGemmTile t = tile_at(0, q * kAmxNc, 0, std::min(kAmxNc, g.n - q * kAmxNc));
      t.b_pack = shared_b + q * kAmxNc * k_padded / 2;
      pack(t);
    }
  });
  // Two tasks a thread where the rows allow: rows in multiples of 32 (a block of C), columns in
  // column packs. A task packs its rows of A once per column group.
  const int64_t wanted = 2 * num_threads();
  const int64_t rows = std::clamp<int64_t>((g.m + wanted - 1) / wanted + 31, 32, 512) / 32 * 32;
  const int64_t row_tasks = (g.m + rows - 1) / rows;
  const int64_t groups = std::min(packs, std::max<int64_t>(1, (wanted + row_tasks - 1) / row_tasks));
  const int64_t cols = (packs + groups - 1) / groups * kAmxNc;
  const int64_t col_tasks = (g.n + cols - 1) / cols;
  const auto kernel = EMBER_AMX_KERNEL(gemm_amx_bf16);
  parallel_for(0, row_tasks * col_tasks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t i0 = task / col_tasks * rows, j0 = task % col_tasks * cols;
      PackedGemmTile t = tile_at(i0, j0, std::min(rows, g.m - i0), std::min(cols, g.n - j0));
      t.b_packed = true;
      t.b_pack = shared_b + j0 * k_padded / 2;
      const PackedWorkspace sizes = amx_workspace_floats(t);
      t.a_pack = sizes.a_floats > 0 ? aligned_workspace(0, sizes.a_floats) : nullptr;
      t.c_acc = aligned_workspace(2, sizes.c_floats);
      kernel(t);
    }
  });
}

// Products as float32 blocks on the fastest float32 backend (Note [Low-precision GEMM]).
void float32_block_products(const GemmArgs& g) {
  const BlockFormat<float>& format = g.dtype == kBFloat16 ? kBFloat16Format : kFloat16Format;
  const BlockFormat<float>& c_format = g.c_float32 ? float32_format() : format;
  auto float32_product = [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    gemm(kFloat32, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  };
  gemm_blocked<float>(format, c_format, float32_product, g.trans_a, g.trans_b, g.m, g.n, g.k,
                      static_cast<float>(g.alpha), static_cast<const char*>(g.a), g.lda, static_cast<const char*>(g.b),
                      g.ldb, static_cast<float>(g.beta), static_cast<char*>(g.c), g.ldc);
}

// Note [f16 on AMX-BF16]
// CPUs with AMX-BF16 but not AMX-FP16 (AVX512-FP16 sums in f16) run f16 products of many rows
// on the bf16 tiles. An f16 value x is exactly hi + lo, hi = x rounded to bf16 and lo = x - hi
// (f16 has 11 significant bits, bf16 8, so lo has at most 3). Along k, A' = [hi(A) | hi(A) |
// lo(A) | lo(A)] and B' = [hi(B) ; lo(B) ; hi(B) ; lo(B)] make A'B' = AB: one bf16 product of
// depth 4k on the tiles, every product exact and float32 sums (Note [AMX GEMM]), as a float32
// product of the widened values. (Leaving out lo(A) lo(B), each under 2^-16 of |a b|, saves a
// quarter but fails float32's accuracy where sums cancel: the Gemm tests saw it.) The split is
// made kBlock x kBlock at a time (workspace slots 3-5, bounded whatever the shape)
// into a float32 block of C, rounded once into C with + beta * C. A value that is not finite
// would not give float32's inf or NaN (inf - inf in lo, inf * 0 in a cross term): a block of
// C whose operands hold one is computed as float32 blocks instead.
void f16_split_products(const GemmArgs& g) {
  const auto split = EMBER_AMX_KERNEL(split_f16_for_amx);
  constexpr int parts = 4;
  const BlockFormat<float>& c_format = g.c_float32 ? float32_format() : kFloat16Format;
  const int64_t block_m = std::min(g.m, kBlock), block_n = std::min(g.n, kBlock), block_k = std::min(g.k, kBlock);
  auto* a_split = reinterpret_cast<uint16_t*>(aligned_workspace(3, parts * block_m * block_k / 2 + 1));
  auto* b_split = reinterpret_cast<uint16_t*>(aligned_workspace(4, parts * block_k * block_n / 2 + 1));
  float* c_block = aligned_workspace(5, block_m * block_n);
  const int64_t c_item = static_cast<int64_t>(c_format.element_size);
  const uint16_t* a = static_cast<const uint16_t*>(g.a);
  const uint16_t* b = static_cast<const uint16_t*>(g.b);
  // Splits the stored block at (row0, col0) of an operand; k runs along its rows when k_rows.
  auto split_block = [&](const uint16_t* base, int64_t ld, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                         bool k_rows, int64_t kp, uint16_t* dst, bool a_parts) {
    const int64_t ld_dst = k_rows ? cols : parts * kp, part_stride = k_rows ? kp * cols : kp;
    std::atomic<bool> finite{true};
    for_row_chunks(rows, cols, [&](int64_t r0, int64_t r1) {
      if (!split(base + (row0 + r0) * ld + col0, ld, r1 - r0, cols, dst + r0 * ld_dst, ld_dst, part_stride, a_parts))
        finite.store(false, std::memory_order_relaxed);
    });
    return finite.load();
  };
  for (int64_t j0 = 0; j0 < g.n; j0 += kBlock) {
    const int64_t nj = std::min(kBlock, g.n - j0);
    for (int64_t i0 = 0; i0 < g.m; i0 += kBlock) {
      const int64_t mi = std::min(kBlock, g.m - i0);
      bool finite = true;
      for (int64_t p0 = 0; p0 < g.k && finite; p0 += kBlock) {
        const int64_t kp = std::min(kBlock, g.k - p0);
        finite = split_block(a, g.lda, g.trans_a ? p0 : i0, g.trans_a ? i0 : p0, g.trans_a ? kp : mi,
                             g.trans_a ? mi : kp, g.trans_a, kp, a_split, true) &&
                 split_block(b, g.ldb, g.trans_b ? j0 : p0, g.trans_b ? p0 : j0, g.trans_b ? nj : kp,
                             g.trans_b ? kp : nj, !g.trans_b, kp, b_split, false);
        if (finite)
          amx_products(GemmArgs{kBFloat16, g.trans_a, g.trans_b, mi, nj, parts * kp, g.alpha, a_split,
                                g.trans_a ? mi : parts * kp, b_split, g.trans_b ? parts * kp : nj,
                                p0 == 0 ? 0.0 : 1.0, c_block, nj, true});
      }
      char* c_origin = static_cast<char*>(g.c) + (i0 * g.ldc + j0) * c_item;
      if (!finite) {
        float32_block_products(GemmArgs{g.dtype, g.trans_a, g.trans_b, mi, nj, g.k, g.alpha,
                                        a + (g.trans_a ? i0 : i0 * g.lda), g.lda,
                                        b + (g.trans_b ? j0 * g.ldb : j0), g.ldb, g.beta, c_origin, g.ldc,
                                        g.c_float32});
        continue;
      }
      const float beta = static_cast<float>(g.beta);
      for_row_chunks(mi, nj, [&](int64_t r0, int64_t r1) {
        c_format.narrow(c_block + r0 * nj, nj, r1 - r0, nj, beta, c_origin + r0 * g.ldc * c_item, g.ldc);
      });
    }
  }
}

bool amx_path(const GemmArgs& g) {
  return (g.dtype == kBFloat16 || g.dtype == kFloat16) && EMBER_AMX_KERNEL(gemm_amx_bf16) != nullptr;
}

// The packed kernel where the float32 backends run at the same instruction set as it does:
// then it saves the whole-block conversions (the blocked path, with its float32 backend, stays
// where that backend is wider or better tuned than this kernel).
bool packed_path() { return kernel_build(cpu_capability()) == Capability::AVX2; }

}  // namespace

bool amx_products_available() { return EMBER_AMX_KERNEL(gemm_amx_bf16) != nullptr; }

int64_t amx_packed_b_size(int64_t k, int64_t n) { return (k + 31) / 32 * 32 * ((n + 31) / 32 * 32); }

void amx_pack_b(bool trans_b, int64_t k, int64_t n, const void* b, int64_t ldb, uint16_t* packed) {
  PackedGemmTile t{false, trans_b, true, 0, n, k, 1.0f, 0.0f, nullptr, 0, b, ldb, nullptr, 0, nullptr,
                   reinterpret_cast<float*>(packed), nullptr};
  EMBER_AMX_KERNEL(gemm_amx_pack_b)(t);
}

void amx_product_packed_b(bool trans_a, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                          const uint16_t* packed_b, bool accumulate, float* c, int64_t ldc) {
  PackedGemmTile t{trans_a, false, true, m, n, k, 1.0f, 0.0f, a, lda, nullptr, 0, c, ldc, nullptr,
                   reinterpret_cast<float*>(const_cast<uint16_t*>(packed_b)), nullptr};
  t.b_packed = true;
  t.continue_c = accumulate;
  const PackedWorkspace sizes = amx_workspace_floats(t);
  t.a_pack = sizes.a_floats > 0 ? aligned_workspace(0, sizes.a_floats) : nullptr;
  t.c_acc = aligned_workspace(2, sizes.c_floats);
  EMBER_AMX_KERNEL(gemm_amx_bf16)(t);
}

bool ember_gemm_can_run(const GemmArgs& g) { return g.dtype == kBFloat16 || g.dtype == kFloat16; }

void ember_gemm_run(const GemmArgs& g) {
  if (g.m > (g.trans_b ? kFewRowsTransposedB : kFewRowsB)) {
    if (amx_path(g)) return g.dtype == kBFloat16 ? amx_products(g) : f16_split_products(g);
    if (packed_path()) return packed_products(g);
    return float32_block_products(g);
  }
  const GemmGroupMember only{g.b, g.n, g.ldb, g.c, g.ldc};
  few_rows_products(g, std::span<const GemmGroupMember>(&only, 1));
}

bool ember_gemm_group_can_run(const GemmArgs& g) {
  return ember_gemm_can_run(g) && !g.trans_a && g.trans_b && g.m <= kFewRowsTransposedB;
}

void ember_gemm_group_run(const GemmArgs& g, std::span<const GemmGroupMember> members) {
  few_rows_products(g, members);
}

GemmBackendReport ember_gemm_report() {
  GemmBackendReport report;
  report.backend = GemmBackend::Ember;
  report.available = true;
  report.version = "built in";
  report.kernel_isa = capability_name(kernel_build(cpu_capability()));
  const bool packed = packed_path();
  const bool amx = EMBER_AMX_KERNEL(gemm_amx_bf16) != nullptr;
  report.kernel = std::string("few-rows bf16/f16 (") + report.kernel_isa + "), else " +
                  (amx      ? std::string("bf16 and f16 (as bf16 parts) on AMX tiles")
                   : packed ? std::string("packed float32 panels (") + report.kernel_isa + ")"
                            : std::string("float32 blocks"));
  if (amx) report.kernel_isa = "avx512_amx";
  report.fits_cpu = true;
  report.why = std::string("runtime-dispatched SIMD (EMBER_CPU_CAPABILITY): bf16/f16 products of up to 4 rows (8 "
                           "with B transposed) read B in place; larger ones ") +
               (amx ? "run on AMX-BF16 tiles (f16 as exact bf16 parts, three products)"
                    : packed ? "widen A and B while packing them for a float32 micro-kernel"
                             : "run as float32 blocks on the fastest float32 backend");
  report.dtypes = {kBFloat16, kFloat16};
  return report;
}

}  // namespace ember::cpu
