#include "cpu/cpu_info.h"

#include <cpuid.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

namespace ember::cpu {
namespace {

struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool bit(unsigned value, int i) { return (value >> i) & 1u; }

// XCR0: which register states the OS saves (AVX needs bits 1-2, AVX-512 5-7, AMX 17-18).
uint64_t xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  size_t start = s.find_first_not_of(' ');
  return start == std::string::npos ? "" : s.substr(start);
}

// Cache sizes as Linux reports them for CPU 0 (index*/level and type); 0 when absent.
int64_t cache_bytes(int level, bool data) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int found_level = 0;
    std::string type, size;
    if (!(level_file >> found_level) || !(type_file >> type) || !(size_file >> size)) continue;
    if (found_level != level || (data ? type == "Instruction" : type == "Data")) continue;
    int64_t value = std::atoll(size.c_str());
    if (size.back() == 'K') value <<= 10;
    if (size.back() == 'M') value <<= 20;
    return value;
  }
  return 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  static_cast<IsaFeatures&>(f) = detect_isa_features();
  Regs r0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor, &r0.ebx, 4);
  std::memcpy(vendor + 4, &r0.edx, 4);
  std::memcpy(vendor + 8, &r0.ecx, 4);
  f.vendor = vendor;
  if (cpuid(0x80000000).eax >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      Regs r = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    f.model = trimmed(brand);
  }
  cpu_set_t set;
  f.logical_cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                                 : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  f.l1d_bytes = cache_bytes(1, true);
  f.l2_bytes = cache_bytes(2, true);
  f.l3_bytes = cache_bytes(3, true);
  return f;
}

}  // namespace

IsaFeatures detect_isa_features() {
  IsaFeatures f;
  const Regs r0 = cpuid(0), r1 = cpuid(1);
  const bool osxsave = bit(r1.ecx, 27);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool os_avx = (xcr & 0x6) == 0x6, os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;
  const bool os_amx = (xcr & 0x60000) == 0x60000;
  f.intel = r0.ebx == 0x756e6547 && r0.edx == 0x49656e69 && r0.ecx == 0x6c65746e;  // "Genu" "ineI" "ntel"
  f.avx = os_avx && bit(r1.ecx, 28);
  f.fma = os_avx && bit(r1.ecx, 12);
  f.f16c = os_avx && bit(r1.ecx, 29);
  if (r0.eax >= 7) {
    const Regs r7 = cpuid(7, 0), r7_1 = cpuid(7, 1);
    f.avx2 = f.avx && bit(r7.ebx, 5);
    f.bmi2 = bit(r7.ebx, 8);
    f.avx512f = os_avx512 && bit(r7.ebx, 16);
    f.avx512dq = f.avx512f && bit(r7.ebx, 17);
    f.avx512bw = f.avx512f && bit(r7.ebx, 30);
    f.avx512vl = f.avx512f && bit(r7.ebx, 31);
    f.avx512_vnni = f.avx512f && bit(r7.ecx, 11);
    f.avx512_fp16 = f.avx512f && bit(r7.edx, 23);
    f.avx512_bf16 = f.avx512f && bit(r7_1.eax, 5);
    f.avx_vnni = f.avx && bit(r7_1.eax, 4);
    f.amx_bf16 = os_amx && bit(r7.edx, 22);
    f.amx_tile = os_amx && bit(r7.edx, 24);
    f.amx_int8 = os_amx && bit(r7.edx, 25);
    f.amx_fp16 = os_amx && bit(r7_1.eax, 21);
  }
  return f;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::AVX512: return "avx512";
    case Isa::AVX2: return "avx2";
    case Isa::AVX: return "avx";
    default: return "sse";
  }
}

Isa IsaFeatures::best_vector_isa() const {
  if (avx512f && avx512bw && avx512vl && avx512dq) return Isa::AVX512;
  if (avx2 && fma) return Isa::AVX2;
  return avx ? Isa::AVX : Isa::SSE;
}

std::vector<std::string> CpuFeatures::extension_names() const {
  const std::pair<bool, const char*> all[] = {
      {avx, "avx"},           {avx2, "avx2"},           {fma, "fma"},
      {f16c, "f16c"},         {avx_vnni, "avx_vnni"},   {avx512f, "avx512f"},
      {avx512bw, "avx512bw"}, {avx512vl, "avx512vl"},   {avx512dq, "avx512dq"},
      {avx512_vnni, "avx512_vnni"}, {avx512_bf16, "avx512_bf16"}, {avx512_fp16, "avx512_fp16"},
      {amx_tile, "amx_tile"}, {amx_bf16, "amx_bf16"},   {amx_int8, "amx_int8"},
      {amx_fp16, "amx_fp16"}};
  std::vector<std::string> names;
  for (const auto& [present, name] : all)
    if (present) names.push_back(name);
  return names;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace ember::cpu
