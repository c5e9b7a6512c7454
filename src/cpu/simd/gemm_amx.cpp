// ember's bf16 GEMM on AMX tiles (Note [AMX GEMM] in cpu/gemm_packed.h), in the AVX-512 build
// only (EMBER_AMX_KERNEL); the other builds compile nothing here.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "cpu/gemm_packed.h"
#include "cpu/simd/amx.h"
#include "cpu/simd/pair_panels.h"

#if defined(__AVX512F__) && !defined(EMBER_RT_CPU)

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

using amx::kBlock;
using amx::kChunkPairs;
using amx::kPanelElements;
constexpr int64_t kChunk = 2 * kChunkPairs;  // k values per tile product

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Where A[i][p] lies in blocks of kAmxMc rows x kAmxKc k values of a slab over k_padded.
inline uint16_t* a_block_at(uint16_t* blocks, int64_t k_padded, int64_t i, int64_t p) {
  const int64_t k_blocks = (k_padded + kAmxKc - 1) / kAmxKc;
  return blocks + ((i / kAmxMc) * k_blocks + p / kAmxKc) * kAmxMc * kAmxKc + (i % kAmxMc) * kAmxKc + p % kAmxKc;
}

// 32 float16 values split into bf16 parts, hi = x rounded and lo = x - hi, both exact (Note
// [float16 on AMX-BF16]); lo is 0 where x is not finite (x - hi is NaN there).
struct SplitChunk {
  __m512i hi, lo;
};
EMBER_AMX_TARGET inline SplitChunk split_f16(const uint16_t* x) {
  const __m512 x0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  const __m512 x1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16)));
  const __m512i hi = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
  auto remainder = [](__m512 value, __m256i rounded) {
    const __m512 difference =
        _mm512_sub_ps(value, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(rounded), 16)));
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(difference, difference, _CMP_ORD_Q), difference);
  };
  const __m512 lo0 = remainder(x0, _mm512_castsi512_si256(hi)), lo1 = remainder(x1, _mm512_extracti64x4_epi64(hi, 1));
  return {hi, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(lo1, lo0))};
}

// Term `term` of a split: A's parts in the order (hi, hi, lo, lo), B's (hi, lo, hi, lo).
inline __m512i split_term(const SplitChunk& parts, bool a_order, int64_t term) {
  return (a_order ? term >= 2 : term % 2 == 1) ? parts.lo : parts.hi;
}

// A[i][p] (i < rows, p < k) into blocks of kAmxMc rows x kAmxKc k values (rows kAmxKc apart,
// zero past k up to k_padded), block (ib, pb) at dst + (ib * k_blocks + pb) * kAmxMc * kAmxKc:
// each block a tile product reads is contiguous (A's own rows, thousands of bytes apart, share a
// few L1 sets and evict each other). A[i][p] lies at a[i * row_stride + p * col_stride].
EMBER_AMX_TARGET void pack_a_blocks(const uint16_t* a, int64_t row_stride, int64_t col_stride, int64_t rows,
                                    int64_t k, int64_t k_padded, uint16_t* dst) {
  auto at = [&](int64_t i, int64_t p) { return a_block_at(dst, k_padded, i, p); };
  if (col_stride == 1) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t p0 = 0; p0 < k_padded; p0 += kAmxKc) {
        const int64_t stored = k - p0 < kAmxKc ? (k > p0 ? k - p0 : 0) : kAmxKc;
        const int64_t width = k_padded - p0 < kAmxKc ? k_padded - p0 : kAmxKc;
        std::memcpy(at(i, p0), a + i * row_stride + p0, static_cast<size_t>(stored) * 2);
        std::memset(at(i, p0) + stored, 0, static_cast<size_t>(width - stored) * 2);
      }
    return;
  }
  // A stored transposed (a[p * col_stride + i]): blocks of 16 rows by 32 k values. Two k rows
  // of 16 values make 16 pairs (the even k in the low half of each word, as a row of A holds
  // them); the 16 pairs of a block's 32 k values, transposed 16 x 16 words, are its rows.
  // k outer: the block's 32 k rows stay in L1 while i moves along them.
  for (int64_t p0 = 0; p0 < k_padded; p0 += kChunk)
    for (int64_t i0 = 0; i0 < rows; i0 += 16) {
      const int64_t count = rows - i0 < 16 ? rows - i0 : 16;
      const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1);
      auto widened = [&](int64_t p) {
        return p < k ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, a + p * col_stride + i0))
                     : _mm512_setzero_si512();
      };
      __m512i words[16];
      for (int q = 0; q < 16; ++q)
        words[q] = _mm512_or_si512(widened(p0 + 2 * q), _mm512_slli_epi32(widened(p0 + 2 * q + 1), 16));
      transpose_16x16_epi32(words);
      for (int64_t r = 0; r < count; ++r) _mm512_storeu_si512(at(i0 + r, p0), words[r]);
    }
}

// Rows x cols of float32 C (ldc) into the sums of its columns of 32 x 32 blocks (column q at
// sums + q * column_floats, rows 32 floats apart), zero past cols: row by row, so that each
// row of C is read along its length (C's rows a page apart, as the fused loss's weight
// gradient, defeat the prefetchers read 32 columns at a time: that product's step, its
// gradient alone, ran ~5% faster this way).
EMBER_AMX_TARGET void load_c(const float* c, int64_t ldc, int64_t rows, int64_t cols, float* sums,
                             int64_t column_floats) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; j += kBlock) {
      const int64_t rest = cols - j;
      const __mmask16 low = rest >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << rest) - 1);
      const __mmask16 high =
          rest >= 32 ? __mmask16(0xffff) : rest > 16 ? static_cast<__mmask16>((1u << (rest - 16)) - 1) : __mmask16(0);
      float* row = sums + (j / kBlock) * column_floats + i * kBlock;
      _mm512_store_ps(row, _mm512_maskz_loadu_ps(low, c + i * ldc + j));
      _mm512_store_ps(row + 16, _mm512_maskz_loadu_ps(high, c + i * ldc + j + 16));
    }
}

// C rows (float32 accumulators acc, ld_acc) into C: alpha * acc + beta * C, rounded to bf16
// (f16: float16) unless C is float32.
EMBER_AMX_TARGET void store_c(const float* acc, int64_t ld_acc, int64_t rows, int64_t cols, float alpha, float beta,
                              bool c_float32, bool f16, void* c, int64_t ldc) {
  const __m512 scale = _mm512_set1_ps(alpha), keep = _mm512_set1_ps(beta);
  if (cols == 32 && !c_float32 && !f16 && beta == 0.0f) {
    // A whole block's row of bf16 C: two vectors rounded by one instruction, one store (7-8%
    // faster products at k = 192-512, 2048 rows; the same bits).
    for (int64_t i = 0; i < rows; ++i) {
      const __m512 low = _mm512_mul_ps(scale, _mm512_loadu_ps(acc + i * ld_acc));
      const __m512 high = _mm512_mul_ps(scale, _mm512_loadu_ps(acc + i * ld_acc + 16));
      _mm512_storeu_si512(static_cast<uint16_t*>(c) + i * ldc, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low)));
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 lanes = cols - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (cols - j)) - 1);
      __m512 value = _mm512_mul_ps(scale, _mm512_maskz_loadu_ps(lanes, acc + i * ld_acc + j));
      if (c_float32) {
        float* out = static_cast<float*>(c) + i * ldc + j;
        if (beta != 0.0f) value = _mm512_fmadd_ps(keep, _mm512_maskz_loadu_ps(lanes, out), value);
        _mm512_mask_storeu_ps(out, lanes, value);
      } else if (f16) {
        uint16_t* out = static_cast<uint16_t*>(c) + i * ldc + j;
        if (beta != 0.0f) value = _mm512_fmadd_ps(keep, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, out)), value);
        _mm256_mask_storeu_epi16(out, lanes, _mm512_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      } else {
        uint16_t* out = static_cast<uint16_t*>(c) + i * ldc + j;
        if (beta != 0.0f) {
          const __m256i stored = _mm256_maskz_loadu_epi16(lanes, out);
          const __m512 wide = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(stored), 16));
          value = _mm512_fmadd_ps(keep, wide, value);
        }
        _mm256_mask_storeu_epi16(out, lanes, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(value)));
      }
    }
}

// A block of float32 sums (rows x cols of a 32 x 32 block, kBlock apart) into float32 C
// transposed: sums[i][j] to c[j * ldc + i] as alpha * sum + beta * C, 16 x 16 at a time.
EMBER_AMX_TARGET void store_c_transposed(const float* acc, int64_t rows, int64_t cols, float alpha, float beta,
                                         float* c, int64_t ldc) {
  const __m512 scale = _mm512_set1_ps(alpha), keep = _mm512_set1_ps(beta);
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      __m512i block[16];
      for (int64_t i = 0; i < 16; ++i) block[i] = _mm512_load_si512(acc + (i0 + i) * kBlock + j0);
      transpose_16x16_epi32(block);  // block[j]: column j0 + j of the sums, rows i0..i0 + 15
      const int64_t lanes_count = rows - i0 < 16 ? rows - i0 : 16;
      const __mmask16 lanes = static_cast<__mmask16>((1u << lanes_count) - 1);
      for (int64_t j = 0; j < 16 && j0 + j < cols; ++j) {
        float* out = c + (j0 + j) * ldc + i0;
        __m512 value = _mm512_mul_ps(scale, _mm512_castsi512_ps(block[j]));
        if (beta != 0.0f) value = _mm512_fmadd_ps(keep, _mm512_maskz_loadu_ps(lanes, out), value);
        _mm512_mask_storeu_ps(out, lanes, value);
      }
    }
}

// A row block's blocks of C over a column pack, k in one k block (k_padded <= kAmxKc): A's
// rows (a_stride bytes apart) stay in L1 while the pack's panels pass, and each block's
// rounding into C (c_row: the row block's C at the pack's first column) waits until the next
// block's tile products are issued, so that the vector units round one block while the tiles
// multiply the next; the sums alternate between two blocks of `sums`. At k = 192 (the GPT's
// x·Wᵀ) this ran 1.12-1.4x faster on one thread and 1.12-1.56x on two than column by column
// with each block rounded at once (bf16 C, alternated builds, 2026-12-06): bf16 C written down
// a column of blocks, rows a kilobyte apart, cost about 40% of the product.
template <bool TwoRowTiles>
EMBER_AMX_TARGET void row_of_blocks(const PackedGemmTile& t, int64_t rows, const uint16_t* a, int64_t a_stride,
                                    const uint16_t* panels, int64_t panel_elements, int64_t chunks, int64_t cols,
                                    float* sums, char* c_row, int64_t c_item) {
  constexpr int64_t kBlockFloats = kBlock * kBlock;
  auto round_block = [&](int64_t jb) {  // a lambda has no target of its own: store_c has one
    const int64_t block_cols = cols - jb < kBlock ? cols - jb : kBlock;
    store_c(sums + (jb / kBlock % 2) * kBlockFloats, kBlock, rows, block_cols, t.alpha, t.beta, t.c_float32, t.f16,
            c_row + jb * c_item, t.ldc);
  };
  for (int64_t jb = 0; jb < cols; jb += kBlock) {
    amx::start_sums<TwoRowTiles>(nullptr, kBlock);
    amx::add_products<TwoRowTiles, false>(a, a_stride, panels + jb / kBlock * panel_elements, chunks);
    if (jb > 0) round_block(jb - kBlock);
    amx::store_sums<TwoRowTiles>(sums + (jb / kBlock % 2) * kBlockFloats, kBlock);
  }
  round_block((cols - 1) / kBlock * kBlock);
}

}  // namespace

EMBER_AMX_TARGET void gemm_amx_bf16(const PackedGemmTile& t) {
  const uint16_t* a = static_cast<const uint16_t*>(t.a);
  const uint16_t* b = static_cast<const uint16_t*>(t.b);
  // k of the tiles' product: with float16, each chunk of 32 split into `terms` chunks.
  const int64_t terms = amx_split_terms(t.f16, t.c_float32, t.k), stored_k_padded = round_up(t.k, kChunk);
  const int64_t k_padded = stored_k_padded * terms, pairs = k_padded / 2;
  const int64_t k_blocks = (k_padded + kAmxKc - 1) / kAmxKc;
  const int64_t slab = amx_slab_rows(t.m, k_padded);
  uint16_t* a_pack = reinterpret_cast<uint16_t*>(t.a_pack);
  uint16_t* b_pack = reinterpret_cast<uint16_t*>(t.b_pack);
  const int64_t c_item = t.c_float32 ? 4 : 2;
  int configured = 0;
  const bool a_in_place = amx_reads_a_in_place(t);
  const int64_t span_k = amx_k_span(k_padded), spans = (k_padded + span_k - 1) / span_k;
  const bool pack_sums = t.continue_c || spans > 1;
  // One k block: row block by row block (row_of_blocks); else a column of blocks at a time.
  const bool one_k_block = k_padded <= kAmxKc && !pack_sums && !t.transposed_c;
  // A's rows of the slab at s0 from its row i0 and k p0 (a multiple of kAmxKc), a_ld values
  // apart: packed, or where they lie.
  const int64_t a_ld = a_in_place ? t.lda : kAmxKc;
  auto a_block_of = [&](int64_t s0, int64_t i0, int64_t p0) {
    return a_in_place ? a + (s0 + i0) * t.lda + p0
                      : a_pack + ((i0 / kAmxMc) * k_blocks + p0 / kAmxKc) * kAmxMc * kAmxKc;
  };
  for (int64_t s0 = 0; s0 < t.m; s0 += slab) {
    const int64_t slab_rows = t.m - s0 < slab ? t.m - s0 : slab;
    const uint16_t* a_rows = a + (t.trans_a ? s0 : s0 * t.lda);
    if (t.f16) {  // packed as stored after the split slab, then split into it
      uint16_t* stored = a_pack + round_up(slab, kAmxMc) * k_blocks * kAmxKc;
      pack_a_blocks(a_rows, t.trans_a ? 1 : t.lda, t.trans_a ? t.lda : 1, slab_rows, t.k, stored_k_padded, stored);
      for (int64_t i = 0; i < slab_rows; ++i)
        for (int64_t p = 0; p < stored_k_padded; p += kChunk) {
          const SplitChunk parts = split_f16(a_block_at(stored, stored_k_padded, i, p));
          for (int64_t term = 0; term < terms; ++term)  // the terms' chunks may lie in two k blocks
            _mm512_storeu_si512(a_block_at(a_pack, k_padded, i, p * terms + term * kChunk), split_term(parts, true, term));
        }
    } else if (!a_in_place) {
      pack_a_blocks(a_rows, t.trans_a ? 1 : t.lda, t.trans_a ? t.lda : 1, slab_rows, t.k, k_padded, a_pack);
    }
    for (int64_t j0 = 0; j0 < t.n; j0 += kAmxNc) {
      const int64_t cols = t.n - j0 < kAmxNc ? t.n - j0 : kAmxNc;
      const uint16_t* panels = t.b_packed ? b_pack + j0 * k_padded : b_pack;
      if (!t.b_packed)
        pack_pair_panels(b + (t.trans_b ? j0 * t.ldb : j0), t.trans_b ? 1 : t.ldb, t.trans_b ? t.ldb : 1, t.k, cols,
                         k_padded, b_pack);
      // k in spans (amx_k_span). One span: row block by row block, a column's sums done before
      // the next column's start. Several: rows in groups of kAmxSpanRows, each span over all the
      // group's row blocks before the next span, so that the span's panels (kAmxNc columns over
      // it, 1 MB) stay in L2 for them; every sum of the group waits in c_acc between spans.
      const int64_t group_rows = spans > 1 ? kAmxSpanRows : kAmxMc;
      for (int64_t g0 = 0; g0 < slab_rows; g0 += group_rows) {
        const int64_t g1 = slab_rows - g0 < group_rows ? slab_rows : g0 + group_rows;
        for (int64_t ks = 0; ks < k_padded; ks += span_k) {
          const int64_t span_end = k_padded - ks < span_k ? k_padded : ks + span_k;
          for (int64_t i0 = g0; i0 < g1; i0 += kAmxMc) {
            const int64_t rows = g1 - i0 < kAmxMc ? g1 - i0 : kAmxMc;
            if (one_k_block) {
              const uint16_t* a_block = a_block_of(s0, i0, 0);
              for (int64_t ib = 0; ib < rows; ib += kBlock) {
                const int block_rows = static_cast<int>(rows - ib < kBlock ? rows - ib : kBlock);
                amx::configure_rows(block_rows, &configured);
                char* c_row = static_cast<char*>(t.c) + ((s0 + i0 + ib) * t.ldc + j0) * c_item;
                (block_rows > 16 ? row_of_blocks<true> : row_of_blocks<false>)(
                    t, block_rows, a_block + ib * a_ld, a_ld * 2, panels, pairs * kPanelElements, k_padded / kChunk, cols,
                    t.c_acc, c_row, c_item);
              }
              continue;
            }
            // A row block's sums: a column of blocks (kAmxMc x 32 floats, in L1 over the k
            // blocks), or all its columns' when they wait for another span or continue C.
            constexpr int64_t kColumnFloats = kAmxMc * kBlock;
            float* block_sums = t.c_acc + (spans > 1 ? (i0 - g0) / kAmxMc * kAmxMc * kAmxNc : 0);
            if (t.continue_c && ks == 0)
              load_c(static_cast<const float*>(t.c) + (s0 + i0) * t.ldc + j0, t.ldc, rows, cols, block_sums,
                     kColumnFloats);
            for (int64_t jb = 0; jb < cols; jb += kBlock) {
              const int64_t block_cols = cols - jb < kBlock ? cols - jb : kBlock;
              float* column_sums = block_sums + (pack_sums ? jb / kBlock * kColumnFloats : 0);
              for (int64_t p0 = ks; p0 < span_end; p0 += kAmxKc) {
                const int64_t chunks = (k_padded - p0 < kAmxKc ? k_padded - p0 : kAmxKc) / kChunk;
                const uint16_t* a_block = a_block_of(s0, i0, p0);
                const uint16_t* panel = panels + (jb / kBlock) * pairs * kPanelElements + (p0 / 2) * kPanelElements;
                for (int64_t ib = 0; ib < rows; ib += kBlock) {
                  const int block_rows = static_cast<int>(rows - ib < kBlock ? rows - ib : kBlock);
                  amx::configure_rows(block_rows, &configured);
                  float* sums = column_sums + ib * kBlock;
                  amx::block_product_rows<true>(block_rows, a_block + ib * a_ld, a_ld * 2, panel, chunks,
                                                p0 == 0 && !t.continue_c ? nullptr : sums, sums, kBlock);
                }
              }
              if (span_end < k_padded) continue;
              for (int64_t ib = 0; ib < rows; ib += kBlock) {
                const int64_t block_rows = rows - ib < kBlock ? rows - ib : kBlock;
                if (t.transposed_c)
                  store_c_transposed(column_sums + ib * kBlock, block_rows, block_cols, t.alpha, t.beta,
                                     static_cast<float*>(t.c) + (j0 + jb) * t.ldc + s0 + i0 + ib, t.ldc);
                else
                  store_c(column_sums + ib * kBlock, kBlock, block_rows, block_cols, t.alpha,
                          t.continue_c ? 0.0f : t.beta, t.c_float32, t.f16,
                          static_cast<char*>(t.c) + ((s0 + i0 + ib) * t.ldc + j0 + jb) * c_item, t.ldc);
              }
            }
          }
        }
      }
    }
  }
}

EMBER_AMX_TARGET void gemm_amx_pack_b(const PackedGemmTile& t) {
  const uint16_t* b = static_cast<const uint16_t*>(t.b);
  const int64_t row_stride = t.trans_b ? 1 : t.ldb, col_stride = t.trans_b ? t.ldb : 1;
  const int64_t stored_k_padded = round_up(t.k, kChunk);
  if (!t.f16) {
    pack_pair_panels(b, row_stride, col_stride, t.k, t.n, stored_k_padded, reinterpret_cast<uint16_t*>(t.b_pack),
                     t.b_panel_pairs);
    return;
  }
  // Panels as stored into a_pack, then each chunk (kChunkPairs pair rows) split into `terms`.
  const int64_t terms = amx_split_terms(true, t.c_float32, t.k);
  uint16_t* stored = reinterpret_cast<uint16_t*>(t.a_pack);
  pack_pair_panels(b, row_stride, col_stride, t.k, t.n, stored_k_padded, stored);
  const int64_t chunk = kChunkPairs * kPanelElements, chunks = stored_k_padded / kChunk;
  uint16_t* split = reinterpret_cast<uint16_t*>(t.b_pack);
  for (int64_t q = 0; q < (t.n + kBlock - 1) / kBlock * chunks; ++q)  // every panel's chunks in turn
    for (int64_t r = 0; r < chunk; r += 32) {
      const SplitChunk parts = split_f16(stored + q * chunk + r);
      for (int64_t term = 0; term < terms; ++term)
        _mm512_storeu_si512(split + (q * terms + term) * chunk + r, split_term(parts, false, term));
    }
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY

#endif
