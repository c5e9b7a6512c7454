#include "core/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "ember/error.h"
#include "ember/memory.h"
#include "ember/profiler.h"

namespace ember {
namespace {

std::atomic<int64_t> g_allocated{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_count{0};

constexpr size_t kAlignment = 64;

// Note [Large block cache]
// Blocks of 128 KiB and more (glibc's mmap threshold) come from mmap in glibc and go back to
// the OS on free, so every large temporary pays page faults and zeroing again (a 64 MiB
// `a + b` spent more time faulting than adding; a bf16 training step, whose activations are
// half the bytes of float32's and fell below a 1 MiB threshold, took twice float32's page
// faults). Freed large blocks are kept here, by rounded size, up to a cap, and reused;
// memory_stats() counts live tensor bytes only, not the cache. Sizes round up to 2 MiB from
// 1 MiB, below it to a quarter of their power of two (at most 25% more than asked).
constexpr size_t kLargeBlock = size_t{128} << 10;
constexpr size_t kHugeBlock = size_t{1} << 20;
constexpr size_t kHugeGranule = size_t{2} << 20;
constexpr size_t kCacheCapBytes = size_t{2} << 30;

// Note [Huge pages for large blocks]
// Blocks rounded to whole 2 MiB granules are mapped on a 2 MiB boundary and marked for
// transparent huge pages (most kernels give them only where asked: THP "madvise"). A decode
// step streams every weight once; with 4 KiB pages that is a TLB miss every 4 KiB and the
// hardware prefetchers stop at each page boundary (bf16 decode of a 0.5B model: +10%).
void* map_huge_block(size_t rounded) {
  const size_t span = rounded + kHugeGranule;
  void* mapping = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(mapping);
  const uintptr_t aligned = (start + kHugeGranule - 1) & ~(uintptr_t{kHugeGranule} - 1);
  // The unaligned head and the tail beyond the block go back at once.
  if (aligned > start) munmap(mapping, aligned - start);
  const size_t tail = start + span - (aligned + rounded);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + rounded), tail);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);  // advice: failure leaves 4 KiB pages
#endif
  return reinterpret_cast<void*>(aligned);
}

void* allocate_block(size_t rounded) {
  return rounded >= kHugeGranule ? map_huge_block(rounded) : std::aligned_alloc(kAlignment, rounded);
}

void release_block(void* data, size_t rounded) {
  if (rounded >= kHugeGranule) munmap(data, rounded);
  else std::free(data);
}

class LargeBlockCache {
 public:
  void* take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(rounded);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= rounded;
    return p;
  }
  bool give(void* p, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + rounded > kCacheCapBytes) return false;
    free_[rounded].push_back(p);
    cached_ += rounded;
    return true;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) release_block(p, size);
    free_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

LargeBlockCache& cache() {
  static LargeBlockCache* instance = new LargeBlockCache();  // outlives static tensors at exit
  return *instance;
}

size_t rounded_size(size_t nbytes) {
  size_t n = std::max<size_t>(nbytes, 1);
  size_t granule = kAlignment;
  if (n >= kHugeBlock) granule = kHugeGranule;
  else if (n >= kLargeBlock) granule = std::bit_floor(n) / 4;
  EMBER_CHECK(n <= SIZE_MAX - granule, "allocate", "size ", nbytes, " bytes overflows");
  return (n + granule - 1) / granule * granule;
}

}  // namespace

namespace core {

void* allocate_bytes(size_t nbytes) {
  const size_t rounded = rounded_size(nbytes);
  void* data = rounded >= kLargeBlock ? cache().take(rounded) : nullptr;
  if (!data) data = allocate_block(rounded);
  EMBER_CHECK(data != nullptr, "allocate", "out of memory allocating ", nbytes, " bytes");
  int64_t now = g_allocated.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  g_count.fetch_add(1, std::memory_order_relaxed);
  if (profiler::detail::state() & profiler::detail::kMemory)
    profiler::detail::record_memory(now, static_cast<int64_t>(nbytes));
  return data;
}

void free_bytes(void* data, size_t nbytes) {
  if (!data) return;
  const int64_t now = g_allocated.fetch_sub(static_cast<int64_t>(nbytes)) - static_cast<int64_t>(nbytes);
  if (profiler::detail::state() & profiler::detail::kMemory)
    profiler::detail::record_memory(now, -static_cast<int64_t>(nbytes));
  const size_t rounded = rounded_size(nbytes);
  if (rounded >= kLargeBlock && cache().give(data, rounded)) return;
  release_block(data, rounded);
}

}  // namespace core

MemoryStats memory_stats() { return {g_allocated.load(), g_peak.load(), g_count.load()}; }

void reset_peak_memory_stats() { g_peak.store(g_allocated.load()); }

void empty_cache() { cache().clear(); }

}  // namespace ember
