// Kernels of the block-quantized weight products (Note [Block-quantized weights] in
// cpu/quantized.h): activations in blocks of 32 int8 values with one scale each, weights in
// int8 or int4 blocks, dot products of a block exact in int32, scaled and summed in float32.
// Compiled once per instruction set (Note [Kernel dispatch]); the AVX2 and AVX-512 builds hold
// a second copy of the product whose dot products take VNNI's vpdpbusd, compiled for that
// extension alone and run where the level has it.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu/quantized_format.h"
#include "cpu/simd/float_vector.h"

#define EMBER_UNROLLED _Pragma("GCC unroll 16")
#if defined(__AVX512F__)
#define EMBER_ANDNOT(mask, v) _mm512_andnot_ps(mask, v)
#elif defined(__AVX2__)
#define EMBER_ANDNOT(mask, v) _mm256_andnot_ps(mask, v)
#endif

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

inline float scale_to_float(uint16_t half) {
#if defined(__F16C__)
  return _cvtsh_ss(half);
#else
  return half_to_float(half);
#endif
}

// The weight formats as the product reads them. int8 blocks are signed values (their sign is
// moved onto the activations before a product); int4 blocks are the stored unsigned q in [0, 15]
// (kUnsigned), whose offset of 8 each product takes off as 8 times the activations' sum. In
// registers: one block in an AVX2 register; at AVX-512 a pair of int8 blocks a register
// (product_rows), four int4 blocks a load (product_rows_int4_quads).
struct Int8Blocks {
  static constexpr int64_t kBlockBytes = kQuantBlock;
  static constexpr bool kUnsigned = false;
  static int32_t value(const uint8_t* block, int64_t t) { return static_cast<int8_t>(block[t]); }
#if defined(__AVX2__)
  static __m256i one(const uint8_t* block) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)); }
#endif
#if defined(__AVX512F__)
  static __m512i pair(const uint8_t* blocks) { return _mm512_loadu_si512(blocks); }
  // The activations of a pair in the order of pair(): as stored. Lanes 0-7 of a product belong
  // to the first block, 8-15 to the second.
  static __m512i pair_activations(const int8_t* a) { return _mm512_loadu_si512(a); }
  static __m512i pair_lane_blocks() { return _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0); }
#endif
};

struct Int4Blocks {
  static constexpr int64_t kBlockBytes = kQuantBlock / 2;
  static constexpr bool kUnsigned = true;
  static constexpr int kOffset = 8;
  static int32_t value(const uint8_t* block, int64_t t) {
    const int32_t byte = block[t % 16];
    return (t < 16 ? byte & 15 : byte >> 4) - kOffset;
  }
#if defined(__AVX2__)
  // q of one block in value order: the low halves of its 16 bytes, then their high halves (a
  // 64-bit shift moves each byte's high half down; the mask drops what crossed from the next).
  static __m256i one(const uint8_t* block) {
    const __m256i packed = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)));
    return _mm256_and_si256(_mm256_srlv_epi64(packed, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(15));
  }
#endif
};

// Block dot products of int8 activations a and weights w, four products summed per 32-bit lane,
// exact in int32. Signed weights: |w| (unsigned, <= 128) times a with w's sign (|a| <= 127).
// Unsigned weights u (<= 15): u times a, added to a start value (the offset's share). Without
// VNNI, pairs summed in int16 first (vpmaddubsw: 2 * 128 * 127 stays inside int16), then in
// int32; with VNNI, vpdpbusd sums the four in int32 at once. Both are exact, so both give the
// same result.
#if defined(__AVX512F__)
using ivec = __m512i;
constexpr int64_t kBlocksPerOperand = 2;
// Two blocks of signed weights (or one, zero-extended).
struct SignedPair {
  __m512i magnitude;
  __mmask64 negative;
  explicit SignedPair(__m512i w) : magnitude(_mm512_abs_epi8(w)), negative(_mm512_movepi8_mask(w)) {}
  __m512i signed_activations(__m512i a) const { return _mm512_mask_sub_epi8(a, negative, _mm512_setzero_si512(), a); }
};
inline __m512i load_single(const int8_t* a) {
  return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
}
struct MaddDot {
  static __m512i dots(const SignedPair& w, __m512i a) {
    return _mm512_madd_epi16(_mm512_maddubs_epi16(w.magnitude, w.signed_activations(a)), _mm512_set1_epi16(1));
  }
  static __m512i unsigned_dots(__m512i start, __m512i u, __m512i a) {
    return _mm512_add_epi32(start, _mm512_madd_epi16(_mm512_maddubs_epi16(u, a), _mm512_set1_epi16(1)));
  }
};
struct VnniDot {
  __attribute__((target("avx512vnni"))) static __m512i dots(const SignedPair& w, __m512i a) {
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.magnitude, w.signed_activations(a));
  }
  __attribute__((target("avx512vnni"))) static __m512i unsigned_dots(__m512i start, __m512i u, __m512i a) {
    return _mm512_dpbusd_epi32(start, u, a);
  }
};
#elif defined(__AVX2__)
using ivec = __m256i;
constexpr int64_t kBlocksPerOperand = 1;
struct SignedPair {  // one block of signed weights
  __m256i weights, magnitude;
  explicit SignedPair(__m256i w) : weights(w), magnitude(_mm256_sign_epi8(w, w)) {}
  __m256i signed_activations(__m256i a) const { return _mm256_sign_epi8(a, weights); }
};
struct MaddDot {
  static __m256i dots(const SignedPair& w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.magnitude, w.signed_activations(a)), _mm256_set1_epi16(1));
  }
  static __m256i unsigned_dots(__m256i start, __m256i u, __m256i a) {
    return _mm256_add_epi32(start, _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), _mm256_set1_epi16(1)));
  }
};
struct VnniDot {
  __attribute__((target("avxvnni"))) static __m256i dots(const SignedPair& w, __m256i a) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w.magnitude, w.signed_activations(a));
  }
  __attribute__((target("avxvnni"))) static __m256i unsigned_dots(__m256i start, __m256i u, __m256i a) {
    return _mm256_dpbusd_avx_epi32(start, u, a);
  }
};
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
// One operand of the products: a block (pair) of weights as the format's dots take it.
struct UnsignedPair {
  ivec values;
  explicit UnsignedPair(ivec u) : values(u) {}
};
template <class Weights>
using WeightOperand = std::conditional_t<Weights::kUnsigned, UnsignedPair, SignedPair>;

// The start of an unsigned product: minus the offset times the activations' sum, per lane.
template <class Weights, class Dot>
inline ivec offset_start(ivec a) {
  if constexpr (Weights::kUnsigned) {
#if defined(__AVX512F__)
    const ivec zero = _mm512_setzero_si512(), offset = _mm512_set1_epi8(Weights::kOffset);
    return _mm512_sub_epi32(zero, Dot::unsigned_dots(zero, offset, a));
#else
    const ivec zero = _mm256_setzero_si256(), offset = _mm256_set1_epi8(Weights::kOffset);
    return _mm256_sub_epi32(zero, Dot::unsigned_dots(zero, offset, a));
#endif
  } else {
    return a;
  }
}

template <class Weights, class Dot>
inline ivec block_dots(const WeightOperand<Weights>& w, ivec a, ivec start) {
  if constexpr (Weights::kUnsigned) return Dot::unsigned_dots(start, w.values, a);
  else return Dot::dots(w, a);
}
#endif

// Note [Weight streaming] for the blocks' values: twice the bf16 distance ahead (decoding
// Qwen2.5-0.5B int4 ran 2-4% faster so, alternated; four times gained nothing more).
inline void prefetch_values_ahead(const uint8_t* p) { prefetch_stream_ahead(p + kStreamPrefetchBytes); }

// Nearest integer, ties to even, for |x| < 2^22 (the sum rounds away the fraction): no libm
// call at any instruction set.
inline float round_to_int(float x) { return (x + 12582912.0f) - 12582912.0f; }

// One activation block: d = max|x| / 127, q = round(x / d) (as x * (1 / d)); q = 0 when d is 0
// or not finite, and d NaN when the block holds a NaN, so that the product gives NaN.
inline void quantize_block(const float* x, int8_t* q, float* scale) {
  float amax = 0.0f, probe = 0.0f;
  int64_t t = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  vf vmax_abs = vset(0.0f), vprobe = vset(0.0f);
  const vf sign_mask = vset(-0.0f);
  for (; t < kQuantBlock; t += kNativeWidth) {
    const vf v = vload(x + t);
    vmax_abs = vmax(vmax_abs, EMBER_ANDNOT(sign_mask, v));
    vprobe = vadd(vprobe, vmul(v, vset(0.0f)));
  }
  amax = hmax(vmax_abs);
  probe = hsum(vprobe);
#endif
  for (; t < kQuantBlock; ++t) {
    const float v = x[t];
    amax = v > amax ? v : (-v > amax ? -v : amax);
    probe += v * 0.0f;
  }
  const float d = probe != probe ? probe : amax / 127.0f;
  *scale = d;
  const float inverse = d > 0.0f && d < __builtin_inff() ? 1.0f / d : 0.0f;
  for (int64_t u = 0; u < kQuantBlock; ++u) {
    float r = round_to_int(x[u] * inverse);
    r = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
    q[u] = static_cast<int8_t>(r);
  }
}

template <class Weights>
inline int32_t block_dot_scalar(const int8_t* a, const uint8_t* block) {
  int32_t sum = 0;
  for (int64_t t = 0; t < kQuantBlock; ++t) sum += int32_t{a[t]} * Weights::value(block, t);
  return sum;
}

// c[i, j] = sum over blocks b of (a_scale[i, b] * w_scale[j, b]) * dot(a[i, b], w[j, b]),
// Rows rows of a against weight rows [0, n), one weight row at a time, each read once, in
// address order (Note [Weight streaming]: tiles of two or four weight rows, whose interleaved
// streams read them, ran 10-30% slower at two threads than this loop, though faster from cache).
template <int Rows, class Weights, class Dot>
void product_rows(int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const uint8_t* w,
                  const uint16_t* w_scales, float* c, int64_t ldc) {
  const int64_t k = blocks * kQuantBlock, row_bytes = blocks * Weights::kBlockBytes;
#if defined(__AVX512F__) || defined(__AVX2__)
  // Row i's activation operand o: a pair of blocks in the AVX-512 order, or one block.
  const int64_t operands = (blocks + kBlocksPerOperand - 1) / kBlocksPerOperand;
  const auto load_operand = [&](int i, int64_t o, bool single) {
    const int8_t* at = a + i * k + o * kBlocksPerOperand * kQuantBlock;
#if defined(__AVX512F__)
    return single ? load_single(at) : Weights::pair_activations(at);
#else
    (void)single;
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
#endif
  };
  // Unsigned weights: the operands and their offset starts are the same for every weight row,
  // so they are made once a call, on the stack (a heap buffer kept by each thread grew on a
  // worker's first larger call: runs must allocate nothing once warm), up to kMaxPrepared of
  // them (32 KiB at AVX-512: one activation row of up to 16384 values, four of up to 4096);
  // more, and ember-rt (short of room), make them at each use: the same values.
#if defined(EMBER_RT_CPU)
  constexpr bool kPrepared = false;
#else
  constexpr bool kPrepared = Weights::kUnsigned;
#endif
  constexpr int64_t kMaxPrepared = 256;
  struct PreparedOperand {
    ivec activations, start;
  };
  PreparedOperand prepared[kPrepared ? kMaxPrepared : 1];
  const bool use_prepared = kPrepared && Rows * operands <= kMaxPrepared;
  if (use_prepared)
    for (int i = 0; i < Rows; ++i)
      for (int64_t o = 0; o < operands; ++o) {
        const ivec activations = load_operand(i, o, (o + 1) * kBlocksPerOperand > blocks);
        prepared[i * operands + o] = {activations, offset_start<Weights, Dot>(activations)};
      }
  // The operand and its start (for signed weights, the start is unused).
  const auto activation_operand = [&](int i, int64_t o, bool single, ivec* start) {
    if (use_prepared) {
      *start = prepared[i * operands + o].start;
      return prepared[i * operands + o].activations;
    }
    const ivec activations = load_operand(i, o, single);
    *start = offset_start<Weights, Dot>(activations);
    return activations;
  };
#endif
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = w + j * row_bytes;
    const uint16_t* row_scales = w_scales + j * blocks;
    float sums[Rows];
    int64_t b = 0;
#if defined(__AVX512F__)
    // Two accumulators a row, even and odd pairs of blocks: one chain of dependent FMAs held a
    // row to a pair per FMA latency (16 weights a cycle), below what two cores stream from DRAM.
    vf acc[Rows], acc_odd[Rows];
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) acc[i] = acc_odd[i] = vset(0.0f);
    // Up to 16 blocks share one conversion of their weight scales and one product with each
    // row's activation scales; each pair of blocks then picks its two scales by a permute. An
    // odd last block runs alone in the register's low half, the high half zero.
    for (; b < blocks; b += 16) {
      const int64_t group = blocks - b < 16 ? blocks - b : 16;
      const __mmask16 lanes = static_cast<__mmask16>((1u << group) - 1);
      prefetch_stream_ahead(row_scales + b);  // the scales are a second stream
      const vf w_scale = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, row_scales + b));
      vf scales[Rows];
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) scales[i] = _mm512_mul_ps(w_scale, _mm512_maskz_loadu_ps(lanes, a_scales + i * blocks + b));
      const auto add_pair = [&](int64_t pair, vf* sums) {
        const uint8_t* at = row + (b + pair) * Weights::kBlockBytes;
        // one prefetch a cache line
        if (Weights::kBlockBytes * 2 >= 64 || (pair & 2) == 0) prefetch_values_ahead(at);
        const WeightOperand<Weights> weights(Weights::pair(at));
        const __m512i pick = _mm512_add_epi32(Weights::pair_lane_blocks(), _mm512_set1_epi32(static_cast<int>(pair)));
        EMBER_UNROLLED
        for (int i = 0; i < Rows; ++i) {
          __m512i start;
          const __m512i activations = activation_operand(i, (b + pair) / 2, false, &start);
          const __m512i dots = block_dots<Weights, Dot>(weights, activations, start);
          sums[i] = vfma(_mm512_cvtepi32_ps(dots), _mm512_permutexvar_ps(pick, scales[i]), sums[i]);
        }
      };
      int64_t pair = 0;
      for (; pair + 4 <= group; pair += 4) {
        add_pair(pair, acc);
        add_pair(pair + 2, acc_odd);
      }
      if (pair + 2 <= group) {
        add_pair(pair, acc);
        pair += 2;
      }
      if (pair < group) {
        const __m512i single = _mm512_set1_epi32(static_cast<int>(pair));
        const WeightOperand<Weights> weights(
            _mm512_zextsi256_si512(Weights::one(row + (b + pair) * Weights::kBlockBytes)));
        EMBER_UNROLLED
        for (int i = 0; i < Rows; ++i) {
          __m512i start;
          const __m512i activations = activation_operand(i, (b + pair) / 2, true, &start);
          const __m512i dots = block_dots<Weights, Dot>(weights, activations, start);
          acc_odd[i] = vfma(_mm512_cvtepi32_ps(dots), _mm512_permutexvar_ps(single, scales[i]), acc_odd[i]);
        }
      }
    }
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) sums[i] = hsum_tree(vadd(acc[i], acc_odd[i]));
#elif defined(__AVX2__)
    vf acc[Rows], acc_odd[Rows];  // even and odd blocks, as in the AVX-512 loop
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) acc[i] = acc_odd[i] = vset(0.0f);
    const auto add_block = [&](int64_t block, vf* sums) {
      const uint8_t* at = row + block * Weights::kBlockBytes;
      if (Weights::kBlockBytes >= 32 || (block & 1) == 0) prefetch_values_ahead(at);
      if (block % 16 == 0) prefetch_stream_ahead(row_scales + block);  // the scales are a second stream
      const float wb = scale_to_float(row_scales[block]);
      const WeightOperand<Weights> weights(Weights::one(at));
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) {
        __m256i start;
        const __m256i activations = activation_operand(i, block, false, &start);
        const __m256i dots = block_dots<Weights, Dot>(weights, activations, start);
        sums[i] = vfma(_mm256_cvtepi32_ps(dots), vset(a_scales[i * blocks + block] * wb), sums[i]);
      }
    };
    for (; b + 2 <= blocks; b += 2) {
      add_block(b, acc);
      add_block(b + 1, acc_odd);
    }
    if (b < blocks) add_block(b, acc);
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) sums[i] = hsum_tree(vadd(acc[i], acc_odd[i]));
#else
    // Baseline only: the vector builds keep no scalar loop, since GCC 12 auto-vectorized one in
    // the VNNI copy into vpdpbusd with the int8 weights taken as unsigned (wrong sums).
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) sums[i] = 0.0f;
    for (; b < blocks; ++b) {
      const float wb = scale_to_float(row_scales[b]);
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) {
        const int32_t dot = block_dot_scalar<Weights>(a + i * k + b * kQuantBlock, row + b * Weights::kBlockBytes);
        sums[i] += static_cast<float>(dot) * (a_scales[i * blocks + b] * wb);
      }
    }
#endif
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) c[i * ldc + j] = sums[i];
  }
}

#if defined(__AVX512F__)
// Int4 at AVX-512, four blocks (64 bytes) a load: the register's 128-bit lanes are the four
// blocks, the low halves of their bytes values 0-15 and the high halves values 16-31, so one
// AND and one shift give both operands and the weights need no shuffle (a pair a register
// took a broadcast and a variable shift per 64 weights, and made the int4 products
// compute-bound beside bf16's streams). The activations are put in that order: per four
// blocks, `low` holds values 0-15 of each block and `high` values 16-31, with the offset's
// share as the dots' start and each block's activation scale on its four lanes. A row is one
// flat loop over its quads, each taking its four weight scales with one 8-byte load (groups of
// 16 scales with a permute a quad ran the loop's control in scalar code, half the time of a
// row of 896 values). Past the row's end (fewer than four blocks left) the loads are masked to
// zero: the missing blocks add nothing.
struct Int4Quad {
  __m512i low, high, start;
  __m512 scale;
};

// The 16 lanes of a quad's sums take the four blocks' values in order, four lanes each.
inline __m512i quad_lane_blocks() { return _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0); }

template <class Dot>
inline Int4Quad int4_quad_activations(const int8_t* a, const float* a_scales, int64_t blocks_left) {
  const __mmask64 first = blocks_left >= 2 ? ~__mmask64{0} : __mmask64{0xFFFFFFFF};
  const __mmask64 second = blocks_left >= 4 ? ~__mmask64{0} : blocks_left == 3 ? __mmask64{0xFFFFFFFF} : __mmask64{0};
  const __m512i x0 = _mm512_maskz_loadu_epi8(first, a), x1 = _mm512_maskz_loadu_epi8(second, a + 64);
  Int4Quad q;
  q.low = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(2, 0, 2, 0));
  q.high = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));
  const __m512i zero = _mm512_setzero_si512(), offset = _mm512_set1_epi8(Int4Blocks::kOffset);
  q.start = _mm512_sub_epi32(zero, Dot::unsigned_dots(Dot::unsigned_dots(zero, offset, q.low), offset, q.high));
  const __mmask8 present = static_cast<__mmask8>((1u << (blocks_left < 4 ? blocks_left : 4)) - 1);
  q.scale = _mm512_permutexvar_ps(quad_lane_blocks(), _mm512_castps128_ps512(_mm_maskz_loadu_ps(present, a_scales)));
  return q;
}

template <int Rows, class Dot>
void product_rows_int4_quads(int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const uint8_t* w,
                             const uint16_t* w_scales, float* c, int64_t ldc) {
  const int64_t k = blocks * kQuantBlock, row_bytes = blocks * Int4Blocks::kBlockBytes;
  const int64_t quads = (blocks + 3) / 4, full_quads = blocks / 4;
  // Made once a call, on the stack, as product_rows' operands (32 KiB: one activation row of up
  // to 16384 values, four of up to 4096); more, and ember-rt, make them at each use.
#if defined(EMBER_RT_CPU)
  constexpr int64_t kMaxPrepared = 1;
  const bool use_prepared = false;
#else
  constexpr int64_t kMaxPrepared = 128;
  const bool use_prepared = Rows * quads <= kMaxPrepared;
#endif
  Int4Quad prepared[kMaxPrepared];
  const auto make_operand = [&](int i, int64_t q) {
    return int4_quad_activations<Dot>(a + i * k + q * 4 * kQuantBlock, a_scales + i * blocks + q * 4, blocks - q * 4);
  };
  if (use_prepared)
    for (int i = 0; i < Rows; ++i)
      for (int64_t q = 0; q < quads; ++q) prepared[i * quads + q] = make_operand(i, q);
  const __m512i nibble = _mm512_set1_epi8(15), lane_blocks = quad_lane_blocks();
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = w + j * row_bytes;
    const uint16_t* row_scales = w_scales + j * blocks;
    // Two accumulators a row, even and odd quads (one FMA chain would bound the row), named so
    // that both stay in registers.
    vf acc[Rows], acc_odd[Rows];
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) acc[i] = acc_odd[i] = vset(0.0f);
    const auto add_quad = [&](int64_t q, vf* sums, bool partial) {
      const uint8_t* at = row + q * 4 * Int4Blocks::kBlockBytes;
      prefetch_values_ahead(at);  // one prefetch a cache line
      if ((q & 7) == 0) prefetch_stream_ahead(row_scales + q * 4);  // the scales are a second stream
      const int64_t left = blocks - q * 4;
      const __m512i x = partial ? _mm512_maskz_loadu_epi8((__mmask64{1} << (16 * left)) - 1, at) : _mm512_loadu_si512(at);
      const __m128i packed_scales = partial ? _mm_maskz_loadu_epi16(static_cast<__mmask8>((1u << left) - 1), row_scales + q * 4)
                                            : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row_scales + q * 4));
      const vf w_scale = _mm512_permutexvar_ps(lane_blocks, _mm512_castps128_ps512(_mm_cvtph_ps(packed_scales)));
      const __m512i low = _mm512_and_si512(x, nibble), high = _mm512_and_si512(_mm512_srli_epi16(x, 4), nibble);
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) {
        const Int4Quad op = use_prepared ? prepared[i * quads + q] : make_operand(i, q);
        const __m512i dots = Dot::unsigned_dots(Dot::unsigned_dots(op.start, low, op.low), high, op.high);
        sums[i] = vfma(_mm512_mul_ps(_mm512_cvtepi32_ps(dots), op.scale), w_scale, sums[i]);
      }
    };
    int64_t q = 0;
    for (; q + 2 <= full_quads; q += 2) {
      add_quad(q, acc, false);
      add_quad(q + 1, acc_odd, false);
    }
    if (q < full_quads) add_quad(q++, acc, false);
    if (q < quads) add_quad(q, acc_odd, true);
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) c[i * ldc + j] = hsum_tree(vadd(acc[i], acc_odd[i]));
  }
}
#endif

// Rows rows of a against every weight row: int4 at AVX-512 by quads, everything else by
// product_rows.
template <int Rows, class Weights, class Dot>
inline void product_row_pass(int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const uint8_t* w,
                             const uint16_t* w_scales, float* c, int64_t ldc) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<Weights, Int4Blocks>) {
    product_rows_int4_quads<Rows, Dot>(n, blocks, a, a_scales, w, w_scales, c, ldc);
  } else {
    product_rows<Rows, Weights, Dot>(n, blocks, a, a_scales, w, w_scales, c, ldc);
  }
#else
  product_rows<Rows, Weights, Dot>(n, blocks, a, a_scales, w, w_scales, c, ldc);
#endif
}

// All m rows, in passes of 4, 2 and 1.
template <class Weights, class Dot>
inline void product_all_rows(int64_t m, int64_t n, int64_t blocks, const int8_t* a, const float* a_scales,
                             const uint8_t* w, const uint16_t* w_scales, float* c, int64_t ldc) {
  const int64_t k = blocks * kQuantBlock;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4)
    product_row_pass<4, Weights, Dot>(n, blocks, a + i * k, a_scales + i * blocks, w, w_scales, c + i * ldc, ldc);
  if (m - i >= 2) {
    product_row_pass<2, Weights, Dot>(n, blocks, a + i * k, a_scales + i * blocks, w, w_scales, c + i * ldc, ldc);
    i += 2;
  }
  if (i < m) product_row_pass<1, Weights, Dot>(n, blocks, a + i * k, a_scales + i * blocks, w, w_scales, c + i * ldc, ldc);
}

template <class Weights>
void product_plain(int64_t m, int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const uint8_t* w,
                   const uint16_t* w_scales, float* c, int64_t ldc) {
#if defined(__AVX512F__) || defined(__AVX2__)
  product_all_rows<Weights, MaddDot>(m, n, blocks, a, a_scales, w, w_scales, c, ldc);
#else
  product_all_rows<Weights, void>(m, n, blocks, a, a_scales, w, w_scales, c, ldc);
#endif
}

// ember-rt's builds (EMBER_RT_CPU) leave the VNNI copy out: it sums exactly as the plain copy
// does, so the results are the same bits, and ember-rt has no room for both (Note [Runtime size]
// in cmake/runtime.cmake).
#if (defined(__AVX512F__) || defined(__AVX2__)) && !defined(EMBER_RT_CPU)
// The VNNI copy: flatten inlines the whole product into this function, which alone is compiled
// for the extension (a function without it may not inline VnniDot::dots).
#if defined(__AVX512F__)
#define EMBER_VNNI_TARGET __attribute__((target("avx512vnni"), flatten))
#else
#define EMBER_VNNI_TARGET __attribute__((target("avxvnni"), flatten))
#endif
template <class Weights>
EMBER_VNNI_TARGET void product_vnni(int64_t m, int64_t n, int64_t blocks, const int8_t* a, const float* a_scales,
                                    const uint8_t* w, const uint16_t* w_scales, float* c, int64_t ldc) {
  product_all_rows<Weights, VnniDot>(m, n, blocks, a, a_scales, w, w_scales, c, ldc);
}
#endif

}  // namespace

void q8_quantize_rows(const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values, float* scales) {
  const int64_t blocks = k / kQuantBlock;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b)
      quantize_block(a + r * ld + b * kQuantBlock, values + r * k + b * kQuantBlock, scales + r * blocks + b);
}

// out[r, b * 32 + t] = d[r, b] * q (int4: q - 8), each product exact in float32.
void dequantize_rows(QuantFormat format, const void* values, const uint16_t* scales, int64_t rows, int64_t k,
                     float* out) {
  const int64_t blocks = k / kQuantBlock;
  const bool int4 = format == QuantFormat::Int4;
  const int64_t block_bytes = int4 ? Int4Blocks::kBlockBytes : Int8Blocks::kBlockBytes;
  const uint8_t* bytes = static_cast<const uint8_t*>(values);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* block = bytes + (r * blocks + b) * block_bytes;
      float* x = out + r * k + b * kQuantBlock;
      const float d = scale_to_float(scales[r * blocks + b]);
#if defined(__AVX512F__) || defined(__AVX2__)
      // The block's values 0-15 and 16-31 as int8.
      __m128i low, high;
      if (int4) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
        const __m128i nibble = _mm_set1_epi8(15), offset = _mm_set1_epi8(Int4Blocks::kOffset);
        low = _mm_sub_epi8(_mm_and_si128(packed, nibble), offset);
        high = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble), offset);
      } else {
        low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
        high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16));
      }
#if defined(__AVX512F__)
      const __m512 scale = _mm512_set1_ps(d);
      _mm512_storeu_ps(x, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(low))));
      _mm512_storeu_ps(x + 16, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(high))));
#else
      const __m256 scale = _mm256_set1_ps(d);
      const __m128i parts[4] = {low, _mm_srli_si128(low, 8), high, _mm_srli_si128(high, 8)};
      for (int p = 0; p < 4; ++p)
        _mm256_storeu_ps(x + 8 * p, _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[p]))));
#endif
#else
      for (int64_t t = 0; t < kQuantBlock; ++t)
        x[t] = d * static_cast<float>(int4 ? Int4Blocks::value(block, t) : Int8Blocks::value(block, t));
#endif
    }
}

void quantized_product_rows(QuantFormat format, bool vnni, int64_t m, int64_t n, int64_t blocks, const int8_t* a,
                            const float* a_scales, const void* w, const uint16_t* w_scales, float* c, int64_t ldc) {
  const uint8_t* bytes = static_cast<const uint8_t*>(w);
  const bool int4 = format == QuantFormat::Int4;
#if (defined(__AVX512F__) || defined(__AVX2__)) && !defined(EMBER_RT_CPU)
  if (vnni) {
    if (int4) product_vnni<Int4Blocks>(m, n, blocks, a, a_scales, bytes, w_scales, c, ldc);
    else product_vnni<Int8Blocks>(m, n, blocks, a, a_scales, bytes, w_scales, c, ldc);
    return;
  }
#endif
  if (int4) product_plain<Int4Blocks>(m, n, blocks, a, a_scales, bytes, w_scales, c, ldc);
  else product_plain<Int8Blocks>(m, n, blocks, a, a_scales, bytes, w_scales, c, ldc);
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
