// Runtime choice of the instruction set for kernels under src/cpu/simd/.
//
// Note [Kernel dispatch]
// Every file in src/cpu/simd/ is compiled three times (CMakeLists.txt): baseline x86-64,
// AVX2+FMA and AVX-512, with EMBER_CPU_CAPABILITY naming the namespace its functions go
// in (ember::cpu::baseline / avx2 / avx512). Callers declare a kernel once with
// EMBER_DECLARE_KERNEL and call EMBER_KERNEL(name)(args...), which picks the best version
// the running CPU supports. Those files must include only headers whose inline functions
// are safe to duplicate per instruction set (kernel_math.h, dtype.h), never <vector> etc.,
// so no AVX-512 copy of a shared inline function can leak into baseline code.
//
// The level above AVX-512, avx512_bf16, adds the bf16 dot products (VDPBF16PS). Kernels that use
// them live in the AVX-512 build, with target("avx512bf16") on each function, and are reached
// through EMBER_BF16_KERNEL(name): the AVX-512 build's function where the level allows it, else
// null, so the caller keeps its float32 path (and EMBER_CPU_CAPABILITY=avx512 selects that path
// on a CPU with the instructions).
#pragma once

namespace ember::cpu {

enum class Capability { Baseline = 0, AVX2 = 1, AVX512 = 2, AVX512_BF16 = 3 };

// Best level the CPU and OS support, lowered by EMBER_CPU_CAPABILITY=baseline|avx2|avx512|avx512_bf16.
Capability cpu_capability();
const char* capability_name(Capability capability);
// For tests: force a level (clamped to what the CPU supports). Returns the level set.
Capability set_cpu_capability(Capability capability);
bool cpu_has_avx512_bf16();
inline bool capability_at_least(Capability level) {
  return static_cast<int>(cpu_capability()) >= static_cast<int>(level);
}

template <typename F>
F select_kernel(F baseline, F avx2, F avx512) {
  if (capability_at_least(Capability::AVX512)) return avx512;
  return capability_at_least(Capability::AVX2) ? avx2 : baseline;
}

}  // namespace ember::cpu

#define EMBER_DECLARE_KERNEL(ret, name, params)   \
  namespace ember::cpu::baseline { ret name params; } \
  namespace ember::cpu::avx2 { ret name params; }     \
  namespace ember::cpu::avx512 { ret name params; }

#define EMBER_KERNEL(name) \
  (::ember::cpu::select_kernel(&::ember::cpu::baseline::name, &::ember::cpu::avx2::name, &::ember::cpu::avx512::name))

// A kernel of the AVX-512 build that needs AVX512-BF16 (declared in namespace avx512 only).
#define EMBER_BF16_KERNEL(name) \
  (::ember::cpu::capability_at_least(::ember::cpu::Capability::AVX512_BF16) ? &::ember::cpu::avx512::name : nullptr)
