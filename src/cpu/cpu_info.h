// What the CPU is and has: model, instruction-set extensions (as the OS enables them),
// cores and caches. Read once; `ember info` and the GEMM backends' fit use it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember::cpu {

// Vector instruction-set levels, ordered.
enum class Isa { SSE = 0, AVX = 1, AVX2 = 2, AVX512 = 3 };
const char* isa_name(Isa isa);

// The instruction-set extensions the CPU has and the OS enables (CPUID and XCR0). Reading
// them builds no string: kernel dispatch (cpu/dispatch.cpp) uses this alone, also in ember-rt.
struct IsaFeatures {
  bool avx = false, avx2 = false, fma = false, f16c = false, bmi2 = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false, amx_fp16 = false;
  bool intel = false;  // the vendor is GenuineIntel (Note [Weight streaming]'s prefetch hint)

  Isa best_vector_isa() const;
};

IsaFeatures detect_isa_features();

struct CpuFeatures : IsaFeatures {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"
  std::string model;   // the brand string
  int logical_cpus = 0;  // the CPUs this process may run on
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;

  // The extensions present, by their Linux /proc/cpuinfo names ("avx2", "avx512_bf16", "amx_tile").
  std::vector<std::string> extension_names() const;
};

const CpuFeatures& cpu_features();

}  // namespace ember::cpu
