// The SIMD vocabulary of the kernels compiled once per instruction set (Note [Kernel
// dispatch]): 8-lane float vectors for row kernels, and the native registers for micro-kernels.
//
// Float work runs on 8-lane GCC vector types (one AVX2 register, two SSE registers at
// baseline) rather than relying on auto-vectorization, which -O3 turns into slow shuffles
// for reductions and mixed loops. A kernel is written once over V = the 8-lane vector or a
// plain scalar (row tails, float64); every lane does exactly the scalar math. The vectors
// only pass between inline functions of the including file, so the baseline build's note
// about the AVX calling convention does not apply.
#pragma once
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <type_traits>

#include "cpu/simd/simd_common.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {

constexpr int kWidth = 8;
typedef float Floats __attribute__((vector_size(32)));
typedef int32_t Ints __attribute__((vector_size(32)));
typedef uint32_t UInts __attribute__((vector_size(32)));
typedef float Floats4 __attribute__((vector_size(16)));
typedef double Doubles4 __attribute__((vector_size(32)));
typedef uint16_t Shorts8 __attribute__((vector_size(16)));

template <typename V>
constexpr bool is_vector_v = std::is_same_v<V, Floats>;
template <typename V>
constexpr int width_v = is_vector_v<V> ? kWidth : 1;

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The vector type for storage type T: 8 float lanes, or plain double for float64.
template <typename T>
using vec_t = std::conditional_t<std::is_same_v<T, double>, double, Floats>;

template <typename To, typename From>
static inline To bits_as(const From& value) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(static_cast<void*>(&out), &value, sizeof(To));
  return out;
}

// `value` in every lane of V.
template <typename V, typename S>
static inline V splat(S value) {
  if constexpr (is_vector_v<V>) return Floats{} + static_cast<float>(value);
  else return static_cast<V>(value);
}

// bf16 <-> float32 on every lane of V (the 8-lane Floats, or the native vf below), Words and
// Halves being V's lanes as 32- and 16-bit integers. bf16 is the top half of a float;
// narrowing rounds to nearest even and keeps a NaN's top bits, quieted, as float_to_bf16.
// The 8- and 16-lane forms zero-extend and pack with one instruction each where the build has
// one: GCC's __builtin_convertvector splits them into halves and shuffles, which made a bf16
// SwiGLU or RMSNorm up to 2x slower than its float32 form.
template <typename V, typename Words, typename Halves>
static inline V widen_bf16(const uint16_t* p) {
#if defined(__AVX2__)
  if constexpr (sizeof(V) == 32)
    return bits_as<V>(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
#endif
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64)
    return bits_as<V>(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
#endif
  Halves raw;
  std::memcpy(&raw, p, sizeof(raw));
  return bits_as<V>(__builtin_convertvector(raw, Words) << 16);
}

template <typename Words, typename Halves, typename V>
static inline void narrow_bf16(uint16_t* p, V value) {
  const Words x = bits_as<Words>(value);
  const Words rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const Words bits = value != value ? (x >> 16) | 0x40u : rounded;  // a float compare finds NaN in one step
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64)
    return _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits_as<__m512i>(bits)));
  if constexpr (sizeof(V) == 32)
    return _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtepi32_epi16(bits_as<__m256i>(bits)));
#elif defined(__AVX2__)
  if constexpr (sizeof(V) == 32) {
    const __m256i words = bits_as<__m256i>(bits);  // each below 2^16: packing saturates nothing
    return _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                            _mm_packus_epi32(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1)));
  }
#endif
  const Halves narrow = __builtin_convertvector(bits, Halves);
  std::memcpy(p, &narrow, sizeof(narrow));
}

// Note [Narrowing pairs]
// Float32 values rounded to bf16 as narrow_bf16 does, two 8-lane vectors at once at the AVX2
// build: one compare finds a NaN in either (rare: that pair takes narrow_bf16's blend) and one
// pack narrows both, about 10 instructions for 8 values against 15. The gemm narrowing and
// kernels that round results they just computed (adds, RMSNorm, rotary, SwiGLU's blocks) were
// bound by those instructions, not by memory. The other builds narrow vector by vector
// (AVX-512's masks make the NaN blend one instruction, and it packs in one), and their kernels
// keep no paired loops, nor does ember-rt's copy of the kernels (Note [Runtime size]: its size
// limit; the bits are the same).
#if defined(__AVX2__) && !defined(__AVX512F__) && !defined(EMBER_RT_CPU)
constexpr bool kNarrowsInPairs = true;
#else
constexpr bool kNarrowsInPairs = false;
#endif

// Whether a kernel storing T rounds two vectors at once.
template <typename T>
constexpr bool narrows_in_pairs_v = kNarrowsInPairs && std::is_same_v<T, BFloat16>;

static inline void narrow_bf16_pair(uint16_t* p, Floats first, Floats second) {
#if defined(__AVX2__) && !defined(__AVX512F__) && !defined(EMBER_RT_CPU)
  const __m256 a = bits_as<__m256>(first), b = bits_as<__m256>(second);
  const __m256 unordered = _mm256_cmp_ps(a, b, _CMP_UNORD_Q);
  if (_mm256_testz_ps(unordered, unordered)) [[likely]] {
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const auto round = [&](__m256 value) {
      const __m256i x = _mm256_castps_si256(value);
      return _mm256_srli_epi32(
          _mm256_add_epi32(_mm256_add_epi32(x, bias), _mm256_and_si256(_mm256_srli_epi32(x, 16), one)), 16);
    };
    // packus interleaves 128-bit halves (a low, b low, a high, b high); the permute restores order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(round(a), round(b)), 0xd8);
    return _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
  }
#endif
  narrow_bf16<UInts, Shorts8>(p, first);
  narrow_bf16<UInts, Shorts8>(p + kWidth, second);
}

// src[0..count) rounded to bf16 into dst by pairs where that pays (kNarrowsInPairs); with
// Clear, src reads zero afterwards (stored as it is read). Returns how many it did (a multiple
// of 2 * kWidth; 0 at builds that narrow by their native vectors).
template <bool Clear = false>
static inline int64_t narrow_bf16_pairs(std::conditional_t<Clear, float*, const float*> src, uint16_t* dst,
                                        int64_t count) {
  int64_t i = 0;
  if constexpr (kNarrowsInPairs) {
    for (; i + 2 * kWidth <= count; i += 2 * kWidth) {
      Floats first, second;
      std::memcpy(&first, src + i, sizeof(first));
      std::memcpy(&second, src + i + kWidth, sizeof(second));
      if constexpr (Clear) std::memset(src + i, 0, 2 * sizeof(first));
      narrow_bf16_pair(dst + i, first, second);
    }
  } else {
    (void)src, (void)dst, (void)count;
  }
  return i;
}

// One element (scalar V) or kWidth elements (vector V) of T, as V.
template <typename V, typename T>
static inline V load_as(const T* p) {
  if constexpr (!is_vector_v<V>) {
    return load(p);
  } else if constexpr (std::is_same_v<T, float>) {
    Floats value;
    std::memcpy(&value, p, sizeof(value));
    return value;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return widen_bf16<Floats, UInts, Shorts8>(reinterpret_cast<const uint16_t*>(p));
  } else {
    float lanes[kWidth];
    for (int j = 0; j < kWidth; ++j) lanes[j] = load(p + j);
    return bits_as<Floats>(lanes);
  }
}

template <typename T, typename V>
static inline void store_as(T* p, V value) {
  if constexpr (!is_vector_v<V>) {
    store(p, value);
  } else if constexpr (std::is_same_v<T, float>) {
    std::memcpy(p, &value, sizeof(value));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    narrow_bf16<UInts, Shorts8>(reinterpret_cast<uint16_t*>(p), value);
  } else {
    float lanes[kWidth];
    std::memcpy(lanes, &value, sizeof(lanes));
    for (int j = 0; j < kWidth; ++j) store(p + j, lanes[j]);
  }
}

// Note [Narrowing in blocks]
// A kernel with a long chain of float math per vector writes its bf16/f16 results into a
// float32 block first and narrows the block in a loop of its own: narrowed inside the chain,
// fewer iterations stayed in flight, and a bf16 SwiGLU cost 1.7x float32's time (at avx2, in
// the cache: 0.74 ns/element against 0.44; in blocks 0.56). The blocks narrow in pairs (Note
// [Narrowing pairs]); SwiGLU measured slower narrowing pairs straight from its chain.
constexpr int64_t kNarrowBlock = 256;

// out[0..count) = block[0..count) rounded to T, count a multiple of kWidth.
template <typename T>
static inline void narrow_floats(const float* block, T* out, int64_t count) {
  int64_t j = 0;
  if constexpr (narrows_in_pairs_v<T>) j = narrow_bf16_pairs(block, reinterpret_cast<uint16_t*>(out), count);
  for (; j < count; j += kWidth) store_as(out + j, load_as<Floats>(block + j));
}

static inline float lane(Floats value, int j) { return value[j]; }
static inline float lane(float value, int) { return value; }
static inline double lane(double value, int) { return value; }

// The sum of the lanes of V, added in lane order.
template <typename V>
static inline auto lane_sum(V value) {
  auto sum = lane(value, 0);
  for (int j = 1; j < width_v<V>; ++j) sum += lane(value, j);
  return sum;
}

// Double accumulators: one per lane of V.
struct Doubles8 {
  Doubles4 low = {}, high = {};
};
template <typename V>
using sum_t = std::conditional_t<is_vector_v<V>, Doubles8, double>;

static inline void accumulate(double& sum, float value) { sum += value; }
static inline void accumulate(double& sum, double value) { sum += value; }
static inline void accumulate(Doubles8& sum, Floats value) {
  const Floats4 low = {value[0], value[1], value[2], value[3]};
  const Floats4 high = {value[4], value[5], value[6], value[7]};
  sum.low += __builtin_convertvector(low, Doubles4);
  sum.high += __builtin_convertvector(high, Doubles4);
}

static inline double lane(const Doubles8& sum, int j) { return j < 4 ? sum.low[j] : sum.high[j - 4]; }

// Note [Vectorizable expf]
// exp(x) = 2^n * exp(r) with n = round(x / ln2) and r = x - n*ln2, where ln2 is split into
// a short high part (n*hi is exact) and a low part, so |r| <= ln2/2 to float precision.
// exp(r) is Cephes' degree-6 polynomial (about 1 ulp in all). 2^n is built from exponent
// bits in two halves, 2^(n/2) * 2^(n - n/2), so subnormal results round once and results
// past FLT_MAX overflow to inf. Inputs are clamped first: below -104 the result rounds to 0
// (so -inf -> 0), above 88.8 to inf; NaN passes through the arithmetic. Straight-line code
// with selects only, written once for a float or an 8-lane vector.
template <typename V>
static inline V expf_poly(V x) {
  using I = std::conditional_t<is_vector_v<V>, Ints, int32_t>;
  using U = std::conditional_t<is_vector_v<V>, UInts, uint32_t>;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRoundShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  V clamped = x > 88.8f ? splat<V>(88.8f) : x;
  clamped = clamped < -104.0f ? splat<V>(-104.0f) : clamped;
  const V shifted = clamped * kLog2e + kRoundShift;
  const V n = shifted - kRoundShift;
  V r = clamped - n * kLn2Hi;
  r = r - n * kLn2Lo;
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const V exp_r = p * r * r + r + 1.0f;
  // n as an integer (subtracted unsigned: a NaN's bits must not overflow a signed int).
  const I k = bits_as<I>(bits_as<U>(shifted) - bits_as<U>(splat<V>(kRoundShift)));
  const I k_low = k >> 1, k_high = k - k_low;
  const V scale_low = bits_as<V>((k_low + 127) << 23);
  const V scale_high = bits_as<V>((k_high + 127) << 23);
  return exp_r * scale_low * scale_high;
}

// exp in the precision of V: the polynomial for float lanes, libm for float64.
static inline Floats exp_of(Floats x) { return expf_poly(x); }
static inline float exp_of(float x) { return expf_poly(x); }
static inline double exp_of(double x) { return __builtin_exp(x); }

// ---- Native registers ---------------------------------------------------------------------
// Micro-kernels (the flex attention tiles, the few-rows GEMM) work on the widest float register of the
// instruction set: 16 lanes under AVX-512, 8 under AVX2, 4 at baseline (SSE2 has no FMA, so
// there vfma is a multiply and an add). Intrinsics rather than GCC vectors, so that vfma is
// one fused operation whatever -ffp-contract says.
#if defined(__AVX512F__)
using vf = __m512;
using vi = __m512i;
constexpr int kNativeWidth = 16;
#define EMBER_NATIVE(op) _mm512_##op
#elif defined(__AVX2__)
using vf = __m256;
using vi = __m256i;
constexpr int kNativeWidth = 8;
#define EMBER_NATIVE(op) _mm256_##op
#else
using vf = __m128;
using vi = __m128i;
constexpr int kNativeWidth = 4;
#define EMBER_NATIVE(op) _mm_##op
#endif
static inline vf vload(const float* p) { return EMBER_NATIVE(loadu_ps)(p); }
static inline void vstore(float* p, vf v) { EMBER_NATIVE(storeu_ps)(p, v); }
static inline vf vset(float x) { return EMBER_NATIVE(set1_ps)(x); }
static inline vf vadd(vf a, vf b) { return EMBER_NATIVE(add_ps)(a, b); }
static inline vf vsub(vf a, vf b) { return EMBER_NATIVE(sub_ps)(a, b); }
static inline vf vmul(vf a, vf b) { return EMBER_NATIVE(mul_ps)(a, b); }
static inline vf vmax(vf a, vf b) { return EMBER_NATIVE(max_ps)(a, b); }
static inline vi vi_add(vi a, vi b) { return EMBER_NATIVE(add_epi32)(a, b); }
static inline vi vi_set(int32_t x) { return EMBER_NATIVE(set1_epi32)(x); }
static inline vi vi_exponent(vi a) { return EMBER_NATIVE(slli_epi32)(a, 23); }
static inline vi vto_int(vf a) { return EMBER_NATIVE(cvtps_epi32)(a); }  // rounds to nearest even
#undef EMBER_NATIVE

// The operations whose intrinsics differ by more than their prefix.
#if defined(__AVX512F__)
static inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vfloat_bits(vi a) { return _mm512_castsi512_ps(a); }
static inline vf vround(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vzero_below(vf x, vf value, float limit) {
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, vset(limit), _CMP_GE_OQ), value);
}
#elif defined(__AVX2__)
static inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vfloat_bits(vi a) { return _mm256_castsi256_ps(a); }
static inline vf vround(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vzero_below(vf x, vf value, float limit) {
  return _mm256_and_ps(_mm256_cmp_ps(x, vset(limit), _CMP_GE_OQ), value);
}
#else
static inline vf vfma(vf a, vf b, vf c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
static inline vf vfloat_bits(vi a) { return _mm_castsi128_ps(a); }
static inline vf vround(vf a) { return _mm_cvtepi32_ps(vto_int(a)); }
static inline vf vzero_below(vf x, vf value, float limit) { return _mm_and_ps(_mm_cmpge_ps(x, vset(limit)), value); }
#endif

// bf16 and float16 storage to and from native registers (float16 by F16C where the build has
// it, else value by value), rounding to nearest even.
typedef uint16_t NativeHalves __attribute__((vector_size(2 * kNativeWidth)));
typedef uint32_t NativeWords __attribute__((vector_size(4 * kNativeWidth)));
static inline vf vload_bf16(const uint16_t* p) { return widen_bf16<vf, NativeWords, NativeHalves>(p); }
static inline void vstore_bf16(uint16_t* p, vf v) { narrow_bf16<NativeWords, NativeHalves>(p, v); }
#if defined(__AVX512F__)
static inline vf vload_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
static inline void vstore_f16(uint16_t* p, vf v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#elif defined(__F16C__)
static inline vf vload_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
static inline void vstore_f16(uint16_t* p, vf v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#else
static inline vf vload_f16(const uint16_t* p) {
  float lanes[kNativeWidth];
  for (int i = 0; i < kNativeWidth; ++i) lanes[i] = half_to_float(p[i]);
  return vload(lanes);
}
static inline void vstore_f16(uint16_t* p, vf v) {
  float lanes[kNativeWidth];
  vstore(lanes, v);
  for (int i = 0; i < kNativeWidth; ++i) p[i] = float_to_half(lanes[i]);
}
#endif

// The sum and the maximum of the lanes.
static inline float hsum(vf v) {
  float lanes[kNativeWidth];
  vstore(lanes, v);
  float s = 0;
  for (int i = 0; i < kNativeWidth; ++i) s += lanes[i];
  return s;
}

// The lanes' sum as a tree (halves added until one lane is left): a third of hsum's
// instructions, for kernels that reduce once per output element, as a decoding step's
// products do for every weight row (their sum order is then the tree's, at each level).
static inline float hsum_tree(vf v) {
#if defined(__AVX512F__)
  const __m256 half = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
#elif defined(__AVX2__)
  const __m256 half = v;
#endif
#if defined(__AVX512F__) || defined(__AVX2__)
  __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
#else
  __m128 quarter = v;
#endif
  quarter = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_shuffle_ps(quarter, quarter, 1)));
}

static inline float hmax(vf v) {
  float lanes[kNativeWidth];
  vstore(lanes, v);
  float m = lanes[0];
  for (int i = 1; i < kNativeWidth; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
