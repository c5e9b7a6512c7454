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
// Two levels add VNNI (int8 dot products, vpdpbusd) to a build: avx2_vnni is the AVX2 build
// with AVX-VNNI's VEX forms, avx512_vnni the AVX-512 build with AVX512-VNNI. They run the same
// kernels as the level below them but those of the block-quantized products, which take the
// VNNI forms in functions compiled with __attribute__((target(...))) for that extension alone
// (src/cpu/simd/quantized_kernels.cpp). A CPU may have AVX512-VNNI without AVX-VNNI: the levels
// a CPU supports need not be contiguous.
//
// The level avx512_bf16 is avx512_vnni plus the bf16 dot products (VDPBF16PS; every CPU
// with them has AVX512-VNNI). Kernels that use them live in the AVX-512 build, with
// target("avx512bf16") on each function, and are reached through EMBER_BF16_KERNEL(name): the
// AVX-512 build's function where the level allows it, else null, so the caller keeps its
// float32 path (and EMBER_CPU_CAPABILITY=avx512_vnni or below selects that path on a CPU with
// the instructions).
//
// Above it, avx512_amx is avx512_bf16 plus AMX-BF16 tiles (TDPBF16PS) where the OS grants the
// process the tile state (Linux's arch_prctl request, made once as the library loads). Its
// kernels also live in the AVX-512 build, with target("amx-tile,amx-bf16"), reached through
// EMBER_AMX_KERNEL(name) as the bf16 ones are; each configures the tiles of its own thread
// (Note [AMX tiles] in src/cpu/simd/amx.h).
#pragma once

namespace ember::cpu {

enum class Capability {
  Baseline = 0,
  AVX2 = 1,
  AVX2_VNNI = 2,
  AVX512 = 3,
  AVX512_VNNI = 4,
  AVX512_BF16 = 5,
  AMX = 6
};
inline constexpr Capability kAllCapabilities[] = {Capability::Baseline,    Capability::AVX2,
                                                  Capability::AVX2_VNNI,   Capability::AVX512,
                                                  Capability::AVX512_VNNI, Capability::AVX512_BF16,
                                                  Capability::AMX};

// Best level the CPU and OS support, lowered by
// EMBER_CPU_CAPABILITY=baseline|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16|avx512_amx (to
// the best supported level at or below the one named).
Capability cpu_capability();
const char* capability_name(Capability capability);
// The build of src/cpu/simd a level runs: Baseline, AVX2 or AVX512.
Capability kernel_build(Capability capability);
// For tests: force a level (lowered to the best supported one at or below it). Returns the level set.
Capability set_cpu_capability(Capability capability);
bool cpu_has_avx512_bf16();
// Whether the current level's quantized kernels use VNNI.
bool cpu_has_vnni();
// Whether the current level is `level` or above it; within the AVX-512 build, whether its bf16
// kernels may run (AVX512_BF16), its AMX ones (AMX). Not for the VNNI levels, which are not a
// chain.
inline bool capability_at_least(Capability level) {
  return static_cast<int>(cpu_capability()) >= static_cast<int>(level);
}

template <typename F>
F select_kernel(F baseline, F avx2, F avx512) {
  switch (kernel_build(cpu_capability())) {
    case Capability::AVX512: return avx512;
    case Capability::AVX2: return avx2;
    default: return baseline;
  }
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

// A kernel of the AVX-512 build that needs AMX-BF16 tiles (declared in namespace avx512 only).
#define EMBER_AMX_KERNEL(name) \
  (::ember::cpu::capability_at_least(::ember::cpu::Capability::AMX) ? &::ember::cpu::avx512::name : nullptr)
