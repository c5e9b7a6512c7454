// Memory statistics of ember's one allocator (all tensor memory comes from it).
#pragma once
#include <cstdint>
#include <memory>

namespace ember {

// libtorch's torch::make_unique (from before C++14 was required) is std::make_unique.
using std::make_unique;

struct MemoryStats {
  int64_t allocated_bytes = 0;       // live bytes now
  int64_t peak_allocated_bytes = 0;  // highest live bytes since start or the last reset
  int64_t num_allocations = 0;       // allocations made since start
};

MemoryStats memory_stats();
void reset_peak_memory_stats();
// Returns cached free blocks to the system (see Note [Large block cache] in allocator.cpp).
void empty_cache();

}  // namespace ember
