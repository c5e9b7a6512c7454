// Conversions between float32 and the 16-bit storage formats (IEEE binary16 and bfloat16,
// round-to-nearest-even), written once for ember::Half and ember::BFloat16 (dtype.h) and for
// the loads and stores of the SIMD kernels (src/cpu/simd/simd_common.h). They are `static` on
// purpose: every translation unit keeps its own copy, compiled for its own instruction set,
// so the per-ISA kernel builds never share one (Note [Kernel dispatch] in src/cpu/dispatch.h).
#pragma once
#include <cstdint>
#include <cstring>

namespace ember::detail {

static inline uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs < 0x38800000u) {  // subnormal or zero in half
    float f;
    uint32_t a = abs;
    std::memcpy(&f, &a, 4);
    f += 0.5f;  // aligns the half subnormal grid with float's integer grid, rounding RNE
    uint32_t r;
    std::memcpy(&r, &f, 4);
    return static_cast<uint16_t>(sign | (r - 0x3f000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
  return static_cast<uint16_t>(sign | (rounded >> 13));
}
static inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

// NaN stays NaN, made quiet.
static inline uint16_t float_to_bf16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
static inline float bf16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

}  // namespace ember::detail
