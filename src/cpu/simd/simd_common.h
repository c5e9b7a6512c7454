// Helpers for kernels compiled once per instruction set (see Note [Kernel dispatch]).
// Everything here lives in the per-ISA namespace, so no copy can leak across levels.
#pragma once
#include <cstdint>
#include <cstring>

#include "ember/dtype.h"

#ifndef EMBER_CPU_CAPABILITY
#error "src/cpu/simd files are compiled by CMake once per instruction set"
#endif

namespace ember::cpu::EMBER_CPU_CAPABILITY {

static inline float bf16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

static inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

static inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

static inline uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    float f;
    std::memcpy(&f, &abs, 4);
    f += 0.5f;
    uint32_t r;
    std::memcpy(&r, &f, 4);
    return static_cast<uint16_t>(sign | (r - 0x3f000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  return static_cast<uint16_t>(sign | ((abs + 0xc8000fffu + mant_odd) >> 13));
}

// Storage type -> arithmetic type and conversions between them.
template <typename T> struct Arith { using type = T; };
template <> struct Arith<Half> { using type = float; };
template <> struct Arith<BFloat16> { using type = float; };
template <typename T> using acc_t = typename Arith<T>::type;

template <typename T>
static inline acc_t<T> load(const T* p) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return bf16_to_float(b);
  } else if constexpr (std::is_same_v<T, Half>) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return half_to_float(b);
  } else {
    return *p;
  }
}

template <typename T, typename A>
static inline void store(T* p, A value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    uint16_t b = float_to_bf16(static_cast<float>(value));
    std::memcpy(static_cast<void*>(p), &b, 2);
  } else if constexpr (std::is_same_v<T, Half>) {
    uint16_t b = float_to_half(static_cast<float>(value));
    std::memcpy(static_cast<void*>(p), &b, 2);
  } else if constexpr (std::is_same_v<T, bool>) {
    *p = value != A(0);
  } else {
    *p = static_cast<T>(value);
  }
}

// Calls f(T{}) with the C++ type of a floating `dtype`; other dtypes call nothing.
template <typename F>
static inline void by_float_dtype(ScalarType dtype, F f) {
  switch (dtype) {
    case ScalarType::Float16: f(Half{}); break;
    case ScalarType::BFloat16: f(BFloat16{}); break;
    case ScalarType::Float32: f(float{}); break;
    case ScalarType::Float64: f(double{}); break;
    default: break;  // callers only pass floating dtypes
  }
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
