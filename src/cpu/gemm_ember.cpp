// ember's own GEMM kernels as a backend, for bf16/f16 products: with few rows (decoding a
// token at a time) a kernel that reads B once, in its storage type; otherwise bf16 on AMX
// tiles where the CPU has them (Note [AMX GEMM]), and for CPUs where no backend has a bf16/f16
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

// B's panels for the tiles (amx_pack_b), of bf16 or split float16 (Note [float16 on AMX-BF16]):
// a column pack of kAmxNc per pool task; float16 is packed as stored into the task's own
// buffer first.
void pack_b_panels(bool f16, bool c_float32, bool trans_b, int64_t k, int64_t n, const void* b, int64_t ldb,
                   uint16_t* packed) {
  const auto pack = EMBER_AMX_KERNEL(gemm_amx_pack_b);
  const int64_t tile_k = amx_tile_k(k, f16, c_float32), packs = (n + kAmxNc - 1) / kAmxNc;
  // Fewer column packs than threads (the weight gradients' B, a few hundred columns): bfloat16
  // packs split along k as well, in slices of kAmxKc, else one thread packed while the others waited.
  const int64_t slices = f16 || k == 0 ? 1 : std::min((k + kAmxKc - 1) / kAmxKc, (num_threads() + packs - 1) / packs);
  const int64_t slice_k = ((k + slices - 1) / slices + kAmxKc - 1) / kAmxKc * kAmxKc;
  const int64_t slice_count = k > 0 ? (k + slice_k - 1) / slice_k : 1;
  parallel_for(0, packs * slice_count, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t j0 = task / slice_count * kAmxNc, p0 = task % slice_count * slice_k;
      const int64_t rows = std::min(slice_k, k - p0);
      const int64_t b_offset = trans_b ? j0 * ldb + p0 : j0 + p0 * ldb;
      PackedGemmTile t{false, trans_b, c_float32, 0, std::min(kAmxNc, n - j0), rows, 1.0f, 0.0f, nullptr, 0,
                       static_cast<const uint16_t*>(b) + b_offset, ldb, nullptr, 0, nullptr,
                       reinterpret_cast<float*>(packed + j0 * tile_k + p0 * 32), nullptr};
      t.f16 = f16;
      if (!f16) t.b_panel_pairs = tile_k / 2;
      if (f16) t.a_pack = aligned_workspace(3, amx_f16_pack_b_stage_floats(k));
      pack(t);
    }
  });
}

// Rows of C a task of amx_products takes: whole blocks of 32, two tasks a thread where that
// loads the threads as evenly as one (192 rows on two threads: 96 each, not 64, 64 and 64).
int64_t amx_task_rows(int64_t m, int64_t threads) {
  const int64_t blocks = (m + 31) / 32;
  int64_t best_rows = 0, best_load = 0;
  for (int64_t tasks_a_thread : {2, 1}) {
    const int64_t per_task = std::min<int64_t>((blocks + tasks_a_thread * threads - 1) / (tasks_a_thread * threads), 16);
    const int64_t tasks = (blocks + per_task - 1) / per_task;
    const int64_t load = (tasks + threads - 1) / threads * per_task;  // blocks of the busiest thread
    if (best_rows == 0 || load < best_load) best_rows = per_task * 32, best_load = load;
  }
  return best_rows;
}

// Products of many rows on AMX tiles (Note [AMX GEMM] in gemm_packed.h): B packed once, then
// tasks of rows (and column groups) on the pool sharing it. float16 operands are split into
// bf16 parts as they are packed (Note [float16 on AMX-BF16]).
void amx_products(const GemmArgs& g) {
  const int64_t c_item = g.c_float32 ? 4 : 2;
  const bool f16 = g.dtype == kFloat16;
  const int64_t k_padded = amx_tile_k(g.k, f16, g.c_float32), n_padded = (g.n + 31) / 32 * 32;
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
  pack_b_panels(f16, g.c_float32, g.trans_b, g.k, g.n, g.b, g.ldb, reinterpret_cast<uint16_t*>(shared_b));
  // Two tasks a thread where the rows allow: rows in multiples of 32 (a block of C), columns in
  // column packs. A task packs its rows of A once per column group.
  const int64_t wanted = 2 * num_threads();
  const int64_t rows = amx_task_rows(g.m, num_threads());
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
      t.f16 = f16;
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

// Whether a float16 matrix (rows x cols, ld apart) holds an infinity or a NaN: exponent bits
// all set, i.e. (bits & 0x7c00) + 0x400 reaching bit 15. Rows on the pool.
bool has_non_finite_f16(const void* data, int64_t rows, int64_t cols, int64_t ld) {
  const uint16_t* values = static_cast<const uint16_t*>(data);
  std::atomic<bool> found{false};
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1)), [&](int64_t r0, int64_t r1) {
    uint16_t marks = 0;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < cols; ++j) marks |= static_cast<uint16_t>((values[r * ld + j] & 0x7c00) + 0x400);
    if (marks & 0x8000) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

// AMX tiles for bf16, and for float16 whose operands are all finite: split parts of an
// infinity would meet zero low parts of the other operand (inf x 0 = NaN where a b is inf).
bool amx_path(const GemmArgs& g) {
  if (EMBER_AMX_KERNEL(gemm_amx_bf16) == nullptr) return false;
  return g.dtype == kBFloat16 || (!has_non_finite_f16(g.a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda) &&
                                  !has_non_finite_f16(g.b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb));
}

// The packed kernel where the float32 backends run at the same instruction set as it does:
// then it saves the whole-block conversions (the blocked path, with its float32 backend, stays
// where that backend is wider or better tuned than this kernel).
bool packed_path() { return kernel_build(cpu_capability()) == Capability::AVX2; }

}  // namespace

bool amx_products_available() { return EMBER_AMX_KERNEL(gemm_amx_bf16) != nullptr; }

int64_t amx_packed_b_size(int64_t k, int64_t n) { return (k + 31) / 32 * 32 * ((n + 31) / 32 * 32); }

// A column pack of kAmxNc per pool task (serial when called from a pool task); the panels of
// columns j0.. start at packed + j0 * k rounded up to 32.
void amx_pack_b(bool trans_b, int64_t k, int64_t n, const void* b, int64_t ldb, uint16_t* packed) {
  pack_b_panels(false, true, trans_b, k, n, b, ldb, packed);
}

namespace {
// A product on the calling thread over B panels packed by amx_pack_b, into float32 C.
void run_packed_b(bool trans_a, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const uint16_t* packed_b,
                  float* c, int64_t ldc, bool continue_c, bool transposed_c) {
  PackedGemmTile t{trans_a, false, true, m, n, k, 1.0f, 0.0f, a, lda, nullptr, 0, c, ldc, nullptr,
                   reinterpret_cast<float*>(const_cast<uint16_t*>(packed_b)), nullptr};
  t.b_packed = true;
  t.continue_c = continue_c;
  t.transposed_c = transposed_c;
  const PackedWorkspace sizes = amx_workspace_floats(t);
  t.a_pack = sizes.a_floats > 0 ? aligned_workspace(0, sizes.a_floats) : nullptr;
  t.c_acc = aligned_workspace(2, sizes.c_floats);
  EMBER_AMX_KERNEL(gemm_amx_bf16)(t);
}
}  // namespace

void amx_product_packed_b(bool trans_a, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                          const uint16_t* packed_b, bool accumulate, float* c, int64_t ldc) {
  run_packed_b(trans_a, m, n, k, a, lda, packed_b, c, ldc, accumulate, false);
}

void amx_product_packed_b_transposed_c(int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                                       const uint16_t* packed_b, float* c, int64_t ldc) {
  run_packed_b(false, m, n, k, a, lda, packed_b, c, ldc, false, true);
}

bool ember_gemm_can_run(const GemmArgs& g) { return g.dtype == kBFloat16 || g.dtype == kFloat16; }

void ember_gemm_run(const GemmArgs& g) {
  if (g.m > (g.trans_b ? kFewRowsTransposedB : kFewRowsB)) {
    if (amx_path(g)) return amx_products(g);
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
                  (amx      ? std::string("bf16 and split f16 on AMX-BF16 tiles")
                   : packed ? std::string("packed float32 panels (") + report.kernel_isa + ")"
                            : std::string("float32 blocks"));
  if (amx) report.kernel_isa = "avx512_amx";
  report.fits_cpu = true;
  report.why = std::string("runtime-dispatched SIMD (EMBER_CPU_CAPABILITY): bf16/f16 products of up to 4 rows (8 "
                           "with B transposed) read B in place; larger ones ") +
               (amx ? "run on AMX-BF16 tiles (f16 split into bf16 high and low parts)"
                    : packed ? "widen A and B while packing them for a float32 micro-kernel"
                             : "run as float32 blocks on the fastest float32 backend");
  report.dtypes = {kBFloat16, kFloat16};
  return report;
}

}  // namespace ember::cpu
