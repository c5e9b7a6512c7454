#include "cpu/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cpu/cpu_info.h"

namespace ember::cpu {
namespace {

Capability detect() {
  const IsaFeatures f = detect_isa_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  if (avx512 && f.avx512_bf16) return Capability::AVX512_BF16;
  return avx512 ? Capability::AVX512 : avx2 ? Capability::AVX2 : Capability::Baseline;
}

Capability from_env(Capability best) {
  const char* env = std::getenv("EMBER_CPU_CAPABILITY");
  if (!env) return best;
  Capability wanted = best;
  if (!std::strcmp(env, "baseline")) wanted = Capability::Baseline;
  if (!std::strcmp(env, "avx2")) wanted = Capability::AVX2;
  if (!std::strcmp(env, "avx512")) wanted = Capability::AVX512;
  if (!std::strcmp(env, "avx512_bf16")) wanted = Capability::AVX512_BF16;
  return static_cast<int>(wanted) < static_cast<int>(best) ? wanted : best;
}

const Capability g_best = detect();
std::atomic<Capability> g_current{from_env(g_best)};

}  // namespace

Capability cpu_capability() { return g_current.load(std::memory_order_relaxed); }

Capability set_cpu_capability(Capability capability) {
  if (static_cast<int>(capability) > static_cast<int>(g_best)) capability = g_best;
  g_current = capability;
  return capability;
}

const char* capability_name(Capability capability) {
  switch (capability) {
    case Capability::AVX512_BF16: return "avx512_bf16";
    case Capability::AVX512: return "avx512";
    case Capability::AVX2: return "avx2";
    default: return "baseline";
  }
}

bool cpu_has_avx512_bf16() { return g_best == Capability::AVX512_BF16; }

}  // namespace ember::cpu
