// Runs a test body once per instruction-set level the CPU has (Note [Kernel dispatch]):
// kernels are compiled per set, the VNNI levels take their own copies of the quantized
// kernels, and each must pass on its own.
#pragma once
#include <gtest/gtest.h>

#include "cpu/dispatch.h"

namespace ember::cpu {

template <typename Body>
void for_each_capability(const Body& body) {
  const Capability original = cpu_capability();
  for (Capability wanted : kAllCapabilities) {
    if (set_cpu_capability(wanted) != wanted) continue;
    SCOPED_TRACE(capability_name(wanted));
    body();
  }
  set_cpu_capability(original);
}

}  // namespace ember::cpu
