// The packed bf16/f16 GEMM kernel: one tile of C per call, operands widened to float32 while
// they are packed (Note [Packed low-precision GEMM]). Inline-safe for src/cpu/simd.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// Note [Packed low-precision GEMM]
// Where no backend has a bf16/f16 kernel (CPUs without AVX512-BF16, AVX512-FP16 or AMX, and
// EMBER_CPU_CAPABILITY below them), ember's backend runs a product of many rows as a GotoBLAS
// loop of its own instead of widening whole blocks to float32 for a float32 backend (Note
// [Low-precision GEMM]): B is packed kPackedKc rows by up to kPackedNc columns at a time into
// panels as wide as the micro-kernel's accumulators, A kPackedMc rows at a time into strips
// of kPackedMr rows, and each packing reads the operand in its storage type and writes float32,
// so every element is converted on its way into a panel the micro-kernel reads anyway: no
// float32 copy of a whole operand, no float32 C to round afterwards. The micro-kernel keeps
// kPackedMr x (two registers) float32 accumulators; across k blocks they go through a float32
// buffer of the tile's C, and the last block rounds once into C (fused with + beta * C). Each
// element of C is summed in k order by one thread (the tile grid of Note [GEMM tiles]), so
// results do not depend on the thread count.
inline constexpr int64_t kPackedMr = 6;
inline constexpr int64_t kPackedMaxNr = 32;     // the widest panel (AVX-512: two 16-lane registers)
inline constexpr int64_t kPackedKc = 256;       // k block: a panel's kPackedKc rows stay in L1
inline constexpr int64_t kPackedSingleKc = 384;  // up to this k, one block (no float32 C buffer)
inline constexpr int64_t kPackedMc = 96;        // rows of A packed at a time (in L2)
inline constexpr int64_t kPackedNc = 512;       // columns of B packed at a time
inline constexpr int64_t kPackedMaxRows = 4096;  // rows of C per call (bounds the float32 C buffer to 8 MiB)

// One tile: C[m, n] = alpha * op(A) op(B) + beta * C with A, B of `dtype` (bf16 or f16) at the
// tile's origin, C in dtype or float32 (c_float32). Workspace, float32: a_pack kPackedMc x k
// block, b_pack k block x (kPackedNc + kPackedMaxNr), c_acc m x min(n, kPackedNc) where
// k > kPackedSingleKc (else unused): packed_workspace_floats gives the three sizes.
struct PackedGemmTile {
  bool trans_a, trans_b, c_float32;
  int64_t m, n, k;
  float alpha, beta;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
  float* a_pack;
  float* b_pack;
  float* c_acc;
  bool b_packed = false;  // gemm_amx_bf16: b_pack already holds the tile's B panels (gemm_amx_pack_b)
  // gemm_amx_bf16, float32 C, alpha 1: the sums start from C itself (beta unused), so that
  // calls splitting k at multiples of 32 make one chain of additions per element.
  bool continue_c = false;
  // gemm_amx_bf16: A, B (and C unless c_float32) are float16, each operand split into bf16
  // parts (Note [float16 on AMX-BF16]); B must be b_packed, by gemm_amx_pack_b.
  bool f16 = false;
  // gemm_amx_bf16, float32 C, not continue_c: C is stored transposed, element (i, j) at
  // c[j * ldc + i] (the fused loss's logits from the weight as A, Note [Products sharing B on AMX]).
  bool transposed_c = false;
  // gemm_amx_pack_b of bfloat16: the pairs between one panel's start and the next's (0: k's,
  // rounded up), so that slices of k (b and b_pack advanced to the slice) pack in parallel.
  int64_t b_panel_pairs = 0;
};

inline constexpr int64_t packed_k_block(int64_t k) { return k <= kPackedSingleKc ? k : kPackedKc; }

struct PackedWorkspace {
  int64_t a_floats, b_floats, c_floats;
};
inline constexpr PackedWorkspace packed_workspace_floats(int64_t m, int64_t n, int64_t k) {
  const int64_t kc = packed_k_block(k);
  return {kPackedMc * kc, kc * (kPackedNc + kPackedMaxNr), k > kPackedSingleKc ? m * (n < kPackedNc ? n : kPackedNc) : 0};
}

// Note [AMX GEMM]
// On CPUs with AMX-BF16 (Capability::AMX) ember's backend runs bf16 products of many rows on
// tiles (Note [AMX tiles] in src/cpu/simd/amx.h). B is packed once for the whole product, a
// column pack of kAmxNc per task on the pool (in slices of kAmxKc k values where there are
// fewer packs than threads), into the panels the tiles read (32 columns of k pairs, zero past n
// and past k up to a multiple of 32); then tasks of whole 32-row blocks of rows, as many a
// thread as load the threads most evenly (and column groups where rows alone are too few for
// the pool) share it, each a PackedGemmTile (its
// workspaces as raw memory, sizes from amx_workspace_floats). A task packs its rows of A once
// (a slab at most kAmxSlabBytes) into blocks of kAmxMc rows x kAmxKc k values, each
// contiguous, unless it reads A where it lies (amx_reads_a_in_place: rows on cache lines, not
// transposed, bf16). With the tile grid of the other backends (Note [GEMM tiles]) every
// 256 x 256 tile packed its own rows of A and columns of B: half the time of 2048^3 went to
// packing. A k of one k block (at most kAmxKc, as the GPT's x·Wᵀ at k = 192) goes row block by
// row block along the column pack, each block rounded into C while the tiles multiply the
// next (row_of_blocks in gemm_amx.cpp), unless C is continued or stored transposed. Else, for
// each kAmxMc rows, a column of 32 x 32 blocks at a time, k goes by kAmxKc: a panel's kAmxKc
// rows (16 KB) stay in L1 while the blocks of A's rows pass over them, read with
// the streaming hint (TILELOADDT1: A's block, 64 KB, would otherwise evict the panel), and the
// float32 sums of the column (kAmxMc x 32, 16 KB) wait in L1 between k blocks (tile stores and
// loads), over a span of at most kAmxSpanK values of k (amx_k_span); the last rounds once into
// C with alpha and + beta * C (a whole row of a block of bf16 C as one vector, its halves
// rounded by one VCVTNE2PS2BF16: 7-8% at k = 192-512). Both orders
// and hints were timed in one process: column-first with streamed A ran 3.5-6.5% faster than
// k-block-first with the sums of kAmxMc x kAmxNc in L2 at 1024^3 and GPT-like shapes, 2048^3
// from 3% slower to 8% faster across runs (Xeon with AMX, one thread, 2026-12-06). Every buffer
// a tile reads is 64-byte aligned (rows straddling two cache lines ran at 0.6x). Sums run in k
// order per element, whatever the tasks: results do not depend on the thread count.
inline constexpr int64_t kAmxMc = 128;
inline constexpr int64_t kAmxNc = 256;
inline constexpr int64_t kAmxKc = 256;
inline constexpr int64_t kAmxSlabBytes = int64_t(16) << 20;  // A packed at most this much at a time

// Note [float16 on AMX-BF16]
// AMX-BF16 has no float16 products (AMX-FP16 is a later extension) and AVX512-FP16 sums in
// float16, so float16 products of many rows run on the bf16 tiles with each operand split in
// two bf16 values: x = hi + lo with hi = x rounded to bf16 and lo = x - hi. A float16 value has
// 11 significant bits; hi keeps 8, and lo, a multiple of x's float16 ulp at most hi's half ulp,
// has at most 3: both are exact, so x = hi + lo exactly (non-finite x: hi = x, lo = 0). The
// products of bf16 values are exact in the tiles' float32 sums, so
//   a b = ah bh + ah bl + al bh + al bl
// are four tile products of exact terms, summed in float32 as the float32 path sums a b. The
// split is done while packing: each 32-value chunk of k becomes `terms` chunks, A's as
// (hi, hi, lo, lo) and B's as (hi, lo, hi, lo), so the product is an ordinary bf16 product of
// `terms` times the k. With a float16 C and k >= kSplitThreeTermsMinK the last term is
// dropped (three terms, 3/4 of the tile work): |al bl| <= 2^-16 |a b|, so the error it leaves,
// at most 2^-16 sum |a b|, is within the bound of float32 summation itself ((k - 1) 2^-24
// sum |a b|) and far below C's rounding (2^-11 |c|, but for sums that cancel). A float32 C,
// or a shorter k, keeps all four.
inline constexpr int64_t kSplitThreeTermsMinK = 256;
inline constexpr int64_t amx_split_terms(bool f16, bool c_float32, int64_t k) {
  return f16 ? (c_float32 || k < kSplitThreeTermsMinK ? 4 : 3) : 1;
}
// The k of the tiles' bf16 product: k rounded up to 32, times the split's terms.
inline constexpr int64_t amx_tile_k(int64_t k, bool f16, bool c_float32) {
  return (k + 31) / 32 * 32 * amx_split_terms(f16, c_float32, k);
}

// Rows of A packed at a time: all of m where it fits kAmxSlabBytes, else a multiple of kAmxMc.
inline constexpr int64_t amx_slab_rows(int64_t m, int64_t k) {
  const int64_t k_blocked = (k + kAmxKc - 1) / kAmxKc * kAmxKc;
  const int64_t fit = kAmxSlabBytes / (2 * k_blocked) / kAmxMc * kAmxMc;
  const int64_t slab = fit > kAmxMc ? fit : kAmxMc;
  return m < slab ? m : slab;
}
// k values of the tiles' product a column of blocks takes at a time: at most kAmxSpanK, so that
// the kAmxMc rows of A over them (512 KB) stay in L2 while the pack's columns pass over them. A
// longer k goes in spans, rows in groups of kAmxSpanRows: a span passes over every row block of
// the group before the next span starts, so that the span's panels of a column pack (1 MB) are
// read from L2 by all of them, and the group's sums (kAmxSpanRows x kAmxNc, 512 KB) wait in
// c_acc between spans. Alternated in one process, two threads, 2026-12-06: spans took float16
// 2048^3 (k 6144 on the tiles) to 0.79-0.82x the time and bf16 at k = 6144 to 0.82x; the
// groups then to 0.94-0.99x and 0.83-0.96x of that.
inline constexpr int64_t kAmxSpanK = 2048;
static_assert(kAmxSpanK % kAmxKc == 0, "a span holds whole k blocks");
inline constexpr int64_t amx_k_span(int64_t k_padded) { return k_padded <= kAmxSpanK ? k_padded : kAmxSpanK; }
inline constexpr int64_t kAmxSpanRows = 4 * kAmxMc;
// Whether gemm_amx_bf16 reads A's rows where they lie: stored by rows over whole 32-value
// chunks of k, each row on a cache line's start. Its tiles load with the streaming hint (Note
// [AMX GEMM]), so rows a multiple of 2 KB apart are read in place too: packed, they ran 6-26%
// slower at lda 1024-4096 (one thread, alternated in one process, 2026-12-06). Read in place
// by several column packs as well, A costs less than packed once: 0.90-0.93x the time at the
// GPT's products of 512 and 576 columns (k 192 and 512, B plain or transposed), 0.95x at 2048^3
// (two threads, alternated in one process, 2026-12-06).
inline bool amx_reads_a_in_place(const PackedGemmTile& t) {
  return !t.f16 && !t.trans_a && t.k % 32 == 0 && t.lda % 32 == 0 &&
         reinterpret_cast<uintptr_t>(t.a) % 64 == 0;
}
// Workspace floats of gemm_amx_bf16: a_pack (none when A is read in place; with float16, the
// split slab, then the slab as stored), b_pack (all the tile's panels when b_packed, else one
// column pack), c_acc (the sums of one column of 32 x 32 blocks, or of row_of_blocks' two
// blocks; of a column pack's, continuing C; of a group of rows' column pack, with k in spans).
// gemm_amx_pack_b of float16 takes a_pack for one column pack as stored:
// amx_f16_pack_b_stage_floats(k).
inline PackedWorkspace amx_workspace_floats(const PackedGemmTile& t) {
  const int64_t k_padded = amx_tile_k(t.k, t.f16, t.c_float32);
  const int64_t k_blocked = (k_padded + kAmxKc - 1) / kAmxKc * kAmxKc;
  const int64_t slab_rows = (amx_slab_rows(t.m, k_padded) + kAmxMc - 1) / kAmxMc * kAmxMc;
  const int64_t stored_k_blocked = (t.k + kAmxKc - 1) / kAmxKc * kAmxKc;
  const int64_t a_floats = amx_reads_a_in_place(t) ? 0 : slab_rows * (k_blocked + (t.f16 ? stored_k_blocked : 0)) / 2;
  const int64_t b_columns = t.b_packed ? (t.n + 31) / 32 * 32 : kAmxNc;
  const bool spans = amx_k_span(k_padded) < k_padded;
  const int64_t sums_floats = spans ? kAmxSpanRows * kAmxNc : kAmxMc * (t.continue_c ? kAmxNc : 32);
  return {a_floats, k_padded * b_columns / 2, sums_floats};
}
inline constexpr int64_t amx_f16_pack_b_stage_floats(int64_t k) { return (k + 31) / 32 * 32 * kAmxNc / 2; }

}  // namespace ember::cpu

// bf16 (and split float16) products on AMX tiles (EMBER_AMX_KERNEL: null below avx512_amx), and
// the packing of B alone: the panels of the tile's columns, over the whole k, into tile.b_pack
// (amx_tile_k times n rounded up to 32 values), for tiles that share them (b_packed); float16
// B (at most kAmxNc columns a call) is first packed as stored into tile.a_pack.
namespace ember::cpu::avx512 {
void gemm_amx_bf16(const ::ember::cpu::PackedGemmTile& tile);
void gemm_amx_pack_b(const ::ember::cpu::PackedGemmTile& tile);
}

EMBER_DECLARE_KERNEL(void, gemm_packed_bf16, (const ::ember::cpu::PackedGemmTile& tile))
EMBER_DECLARE_KERNEL(void, gemm_packed_f16, (const ::ember::cpu::PackedGemmTile& tile))
