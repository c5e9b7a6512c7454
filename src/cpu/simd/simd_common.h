// Helpers for kernels compiled once per instruction set (see Note [Kernel dispatch]).
// Everything here lives in the per-ISA namespace, so no copy can leak across levels.
#pragma once
#include <cstdint>
#include <cstring>

#include "ember/dtype.h"

#ifndef EMBER_CPU_CAPABILITY
#error "src/cpu/simd files are compiled by CMake once per instruction set"
#endif

namespace ember::cpu {
// Streams prefetch with the T0 hint, not NTA (Note [Weight streaming]); set in dispatch.cpp.
extern const bool g_stream_prefetch_temporal;
}  // namespace ember::cpu

namespace ember::cpu::EMBER_CPU_CAPABILITY {

// The 16-bit float conversions, written once in ember/detail/float16.h (internal linkage:
// this instruction set's copy stays in this file).
using ::ember::detail::bf16_to_float;
using ::ember::detail::float_to_bf16;
using ::ember::detail::float_to_half;
using ::ember::detail::half_to_float;

// Note [Weight streaming]
// A decoding step reads every weight of the model once, from DRAM: the products with few
// rows are bound by how fast the weights stream. Their kernels read a weight strictly in
// address order, each thread one contiguous share of it (interleaved short streams read at
// less than half the bandwidth: 151936x896 bf16 on 2 cores, 27 GB/s against 60), and on top
// of the hardware prefetcher ask for the bytes kStreamPrefetchBytes ahead, non-temporal (read
// once, they should not evict the activations): a Qwen2.5-0.5B bf16 decoding step ran 8-15%
// faster with it (Zen 5, 2 cores, alternated runs; 1 KB ahead gained 2-6%, 4-8 KB the most).
// A quantized weight is two streams, values and their scales, and both are prefetched: with
// the scales left to the hardware, each row's first scale load waited on DRAM, and decoding
// ran 10-25% slower (Qwen2.5-0.5B int4 and int8, alternated runs).
// Intel's CPUs are the exception: there a non-temporal prefetch fills L1 alone, not L2, so
// lines fetched that far ahead are mostly evicted before use. They prefetch into every level
// (the T0 hint; `g_stream_prefetch_temporal`, set by vendor): on a Xeon with AMX (2 cores of a
// VM), an int8 product of 896 x 4864 from L3 ran at 7 GB/s on one thread with NTA and 17 with
// T0, and the products of Qwen2.5-0.5B's 24 layers for one token (from DRAM, alternated runs)
// at bf16 16.4-17.2 / int8 12.2-13.5 / int4 7.7-10.2 GB/s with NTA against 17.9-18.4 /
// 18.4-19.7 / 16.5-18.5 with T0; T1 and T2 did as well as T0, no prefetch in between.
constexpr uintptr_t kStreamPrefetchBytes = 4096;

// Prefetches the cache line kStreamPrefetchBytes past `p`. Prefetches never fault, so reaching
// past the end of the weight is harmless; the address is formed as an integer.
inline void prefetch_stream_ahead(const void* p) {
  const void* ahead = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kStreamPrefetchBytes);
  if (g_stream_prefetch_temporal) __builtin_prefetch(ahead, 0, 3);
  else __builtin_prefetch(ahead, 0, 0);
}

// Storage type -> arithmetic type and conversions between them.
template <typename T> struct Arith { using type = T; };
template <> struct Arith<Half> { using type = float; };
template <> struct Arith<BFloat16> { using type = float; };
template <typename T> using acc_t = typename Arith<T>::type;

// a * b + c, with one rounding where the build has FMA (as vfma and as GCC contracts the
// elementwise kernels' a + alpha * b there), two where it does not.
static inline float scalar_fma(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

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
