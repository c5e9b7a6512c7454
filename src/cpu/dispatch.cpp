#include "cpu/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cpu/cpu_info.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ember::cpu {
namespace {

// Linux hands a process the AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
// XTILEDATA); until then a tile instruction faults. Asked once, for the whole process.
bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  static const bool permitted = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
#else
  return false;
#endif
}

bool supported(Capability level) {
  const IsaFeatures f = detect_isa_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  switch (level) {
    case Capability::Baseline: return true;
    case Capability::AVX2: return avx2;
    case Capability::AVX2_VNNI: return avx2 && f.avx_vnni;
    case Capability::AVX512: return avx512;
    case Capability::AVX512_VNNI: return avx512 && f.avx512_vnni;
    case Capability::AVX512_BF16: return avx512 && f.avx512_vnni && f.avx512_bf16;
    case Capability::AMX:
      return avx512 && f.avx512_vnni && f.avx512_bf16 && f.amx_tile && f.amx_bf16 && amx_permitted();
  }
  return false;
}

// The best supported level at or below `wanted`.
Capability lower_to_supported(Capability wanted) {
  for (int level = static_cast<int>(wanted); level > 0; --level)
    if (supported(static_cast<Capability>(level))) return static_cast<Capability>(level);
  return Capability::Baseline;
}

Capability from_env() {
  Capability wanted = Capability::AMX;
  if (const char* env = std::getenv("EMBER_CPU_CAPABILITY"))
    for (Capability level : kAllCapabilities)
      if (!std::strcmp(env, capability_name(level))) wanted = level;
  return lower_to_supported(wanted);
}

const Capability g_best = lower_to_supported(Capability::AMX);
std::atomic<Capability> g_current{from_env()};

}  // namespace

extern const bool g_stream_prefetch_temporal = detect_isa_features().intel;

Capability cpu_capability() { return g_current.load(std::memory_order_relaxed); }

Capability set_cpu_capability(Capability capability) {
  capability = lower_to_supported(capability);
  g_current = capability;
  return capability;
}

const char* capability_name(Capability capability) {
  switch (capability) {
    case Capability::AMX: return "avx512_amx";
    case Capability::AVX512_BF16: return "avx512_bf16";
    case Capability::AVX512_VNNI: return "avx512_vnni";
    case Capability::AVX512: return "avx512";
    case Capability::AVX2_VNNI: return "avx2_vnni";
    case Capability::AVX2: return "avx2";
    default: return "baseline";
  }
}

Capability kernel_build(Capability capability) {
  switch (capability) {
    case Capability::AMX:
    case Capability::AVX512_BF16:
    case Capability::AVX512_VNNI:
    case Capability::AVX512: return Capability::AVX512;
    case Capability::AVX2_VNNI:
    case Capability::AVX2: return Capability::AVX2;
    default: return Capability::Baseline;
  }
}

bool cpu_has_vnni() {
  const Capability level = cpu_capability();
  return level == Capability::AVX2_VNNI || level == Capability::AVX512_VNNI || level == Capability::AVX512_BF16 ||
         level == Capability::AMX;
}

bool cpu_has_avx512_bf16() {
  static const bool has = detect_isa_features().avx512_bf16;
  return kernel_build(g_best) == Capability::AVX512 && has;
}

}  // namespace ember::cpu
