// Runs a test body once per instruction-set level the CPU has (Note [Kernel dispatch]):
// kernels are compiled per set and each must pass on its own; the quantized products' tests also
// run the VNNI levels, whose copies of those kernels are their own.
#pragma once
#include <gtest/gtest.h>

#include "cpu/dispatch.h"

namespace ember::cpu {

template <typename Levels, typename Body>
void for_each_capability_of(const Levels& levels, const Body& body) {
  const Capability original = cpu_capability();
  for (Capability wanted : levels) {
    if (set_cpu_capability(wanted) != wanted) continue;
    SCOPED_TRACE(capability_name(wanted));
    body();
  }
  set_cpu_capability(original);
}

// The three builds of src/cpu/simd, and the AVX-512 build with its bf16 kernels and with its AMX ones.
template <typename Body>
void for_each_capability(const Body& body) {
  constexpr Capability kBuilds[] = {Capability::Baseline, Capability::AVX2, Capability::AVX512,
                                    Capability::AVX512_BF16, Capability::AMX};
  for_each_capability_of(kBuilds, body);
}

}  // namespace ember::cpu
