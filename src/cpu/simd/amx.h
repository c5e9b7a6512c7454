// AMX-BF16 tile products for the AVX-512 build of src/cpu/simd (Note [AMX tiles]); the other
// builds see nothing here. Inline-safe: included by the kernels that run on tiles.
#pragma once
#include "cpu/simd/simd_common.h"

#if defined(__AVX512F__)
#include <immintrin.h>

namespace ember::cpu::EMBER_CPU_CAPABILITY::amx {

// Note [AMX tiles]
// An AMX unit holds eight tile registers of up to 16 rows x 64 bytes; TDPBF16PS adds to a
// float32 tile C[16][16] the products of A[16][16 pairs] (rows of 32 bf16 values) by
// B[16 pairs][16 columns] (each row 16 columns' pairs of consecutive k values): 16 x 16 x 32
// multiply-adds an instruction. The pair layout is the one VDPBF16PS reads, so the bf16 operand
// forms of ember's kernels (A by rows of k pairs, B in panels of 32 columns of k pairs: 128
// bytes a pair row) are tile operands as they lie: an A tile is 16 rows at the operand's row
// stride, a B tile 16 pair rows at 128 bytes, the left or right 16 columns of a panel.
// Every kernel here computes blocks of 32 x 32 of C: tiles 0-3 accumulate its four 16 x 16
// quarters, tiles 4-5 hold its two row halves of A, tiles 6-7 the panel's two column halves,
// so each pair of A tiles and pair of B tiles loaded feeds four products. A block with 16 rows
// or fewer uses tiles 0-1 and 4 alone. The tile shapes live in a per-thread configuration
// (LDTILECFG) that any other AMX user on the thread (oneDNN) replaces, so each kernel checks
// for its own on entry (load_config); the OS must have granted the process the tile state
// (Capability::AMX).
#define EMBER_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512bf16")))

constexpr int kBlock = 32;        // rows and columns of C per block
constexpr int kChunkPairs = 16;   // k pairs per tile product (32 k values)
constexpr int kPanelBytes = 128;  // a panel's pair row: 32 columns x 2 bf16
constexpr int64_t kPanelElements = kPanelBytes / 2;

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The block's tiles for `top` rows in tiles 0-1 and 4 and `bottom` (possibly 0) in tiles 2-3
// and 5; B tiles are always full.
inline TileConfig block_config(int top, int bottom) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.colsb[t] = 64;
  config.rows[0] = config.rows[1] = config.rows[4] = static_cast<uint8_t>(top);
  config.rows[2] = config.rows[3] = config.rows[5] = static_cast<uint8_t>(bottom > 0 ? bottom : 1);
  config.rows[6] = config.rows[7] = kChunkPairs;
  return config;
}

// Loads `config` unless the thread's tiles hold it already (often so: the previous call of
// the same kernel left it). LDTILECFG costs about 300 cycles, STTILECFG about 30: the many
// small products of a short sequence's attention paid the load on every call (its forward and
// backward at T = 128 ran 0.89x the time with the check).
__attribute__((target("amx-tile"))) inline void load_config(const TileConfig& config) {
  TileConfig current;
  _tile_storeconfig(&current);
  if (_mm512_cmpneq_epi32_mask(_mm512_load_si512(&current), _mm512_load_si512(&config)) != 0)
    _tile_loadconfig(&config);
}

// Loads the configuration for blocks of `rows` rows (1-32), unless `*configured` says it is
// already there; *configured is the rows the thread's tiles are set for (0: not known).
EMBER_AMX_TARGET inline void configure_rows(int rows, int* configured) {
  if (*configured == rows) return;
  load_config(block_config(rows < 16 ? rows : 16, rows > 16 ? rows - 16 : 0));
  *configured = rows;
}

// The block's sums: tiles 0-3 (0-1 for one row tile) loaded from c (a float32 block [32][ld]),
// or zeroed when c is null.
template <bool TwoRowTiles>
EMBER_AMX_TARGET inline void start_sums(const float* c, int64_t ld) {
  if (c) {
    _tile_loadd(0, c, ld * 4);
    _tile_loadd(1, c + 16, ld * 4);
    if constexpr (TwoRowTiles) {
      _tile_loadd(2, c + 16 * ld, ld * 4);
      _tile_loadd(3, c + 16 * ld + 16, ld * 4);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (TwoRowTiles) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
}

// Tiles 0-3 += A[rows][chunks * 32] x panel chunks; A rows `a_stride` bytes apart, the panel's
// pair rows kPanelBytes apart. StreamA loads A with the hint that it is not reused soon
// (TILELOADDT1), for callers whose A passes once over a panel kept in L1.
template <bool TwoRowTiles, bool StreamA>
EMBER_AMX_TARGET inline void add_products(const uint16_t* a, int64_t a_stride, const uint16_t* panel, int64_t chunks) {
  const char* a_bytes = reinterpret_cast<const char*>(a);
  const char* b_bytes = reinterpret_cast<const char*>(panel);
  for (int64_t q = 0; q < chunks; ++q) {
    const char* aq = a_bytes + q * 64;
    const char* bq = b_bytes + q * kChunkPairs * kPanelBytes;
    if constexpr (StreamA) _tile_stream_loadd(4, aq, a_stride);
    else _tile_loadd(4, aq, a_stride);
    _tile_loadd(6, bq, kPanelBytes);
    _tile_loadd(7, bq + 64, kPanelBytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (TwoRowTiles) {
      if constexpr (StreamA) _tile_stream_loadd(5, aq + 16 * a_stride, a_stride);
      else _tile_loadd(5, aq + 16 * a_stride, a_stride);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
}

// Tiles 0-3 into out, a float32 block [32][ld].
template <bool TwoRowTiles>
EMBER_AMX_TARGET inline void store_sums(float* out, int64_t ld) {
  _tile_stored(0, out, ld * 4);
  _tile_stored(1, out + 16, ld * 4);
  if constexpr (TwoRowTiles) {
    _tile_stored(2, out + 16 * ld, ld * 4);
    _tile_stored(3, out + 16 * ld + 16, ld * 4);
  }
}

// out = (c_in, or 0 when null) + A x panel chunks for a block of up to 32 rows (float32 blocks
// [32][ld_block]). The configuration for its rows must be loaded.
template <bool TwoRowTiles, bool StreamA>
EMBER_AMX_TARGET inline void block_product(const uint16_t* a, int64_t a_stride, const uint16_t* panel,
                                           int64_t chunks, const float* c_in, float* out, int64_t ld_block) {
  start_sums<TwoRowTiles>(c_in, ld_block);
  add_products<TwoRowTiles, StreamA>(a, a_stride, panel, chunks);
  store_sums<TwoRowTiles>(out, ld_block);
}

// block_product for a block of `rows` rows (1-32): two row tiles or one (StreamA: add_products).
template <bool StreamA = false>
EMBER_AMX_TARGET inline void block_product_rows(int rows, const uint16_t* a, int64_t a_stride, const uint16_t* panel,
                                                int64_t chunks, const float* c_in, float* out, int64_t ld_block) {
  if (rows > 16) block_product<true, StreamA>(a, a_stride, panel, chunks, c_in, out, ld_block);
  else block_product<false, StreamA>(a, a_stride, panel, chunks, c_in, out, ld_block);
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY::amx

#endif
