#include "core/allocator.h"

#include <atomic>
#include <algorithm>
#include <cstdlib>
#include <new>

#include "ember/error.h"
#include "ember/memory.h"

namespace ember {
namespace {

std::atomic<int64_t> g_allocated{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_count{0};

constexpr size_t kAlignment = 64;

}  // namespace

namespace core {

void* allocate_bytes(size_t nbytes) {
  // Round up so aligned_alloc's size requirement holds; zero-byte tensors still get a pointer.
  size_t rounded = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  EMBER_CHECK(rounded >= nbytes, "allocate", "size ", nbytes, " bytes overflows");
  void* data = std::aligned_alloc(kAlignment, rounded);
  EMBER_CHECK(data != nullptr, "allocate", "out of memory allocating ", nbytes, " bytes");
  int64_t now = g_allocated.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  g_count.fetch_add(1, std::memory_order_relaxed);
  return data;
}

void free_bytes(void* data, size_t nbytes) {
  if (!data) return;
  std::free(data);
  g_allocated.fetch_sub(static_cast<int64_t>(nbytes));
}

}  // namespace core

MemoryStats memory_stats() {
  return {g_allocated.load(), g_peak.load(), g_count.load()};
}

void reset_peak_memory_stats() { g_peak.store(g_allocated.load()); }

}  // namespace ember
