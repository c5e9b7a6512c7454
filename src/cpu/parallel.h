// The library's one thread pool. Work is split into chunks whose boundaries depend only
// on (begin, end, grain), never on the thread count, so a kernel that combines per-chunk
// partial results in chunk order is bitwise reproducible for any number of threads.
#pragma once
#include <cstdint>

#include "cpu/function_ref.h"

namespace ember::cpu {

// A chunk function fn(chunk_begin, chunk_end), called before parallel_for returns.
using ChunkFn = FunctionRef<void(int64_t, int64_t)>;

int num_threads();
void set_num_threads(int n);

// True while the calling thread is running a chunk of a parallel_for.
bool in_parallel_region();

// Calls fn(chunk_begin, chunk_end) for every chunk [begin + k*grain, min(end, begin + (k+1)*grain)).
// Chunks run concurrently on the pool; a nested call runs serially on the calling thread.
// The first exception thrown by fn is rethrown here after all chunks have stopped.
void parallel_for(int64_t begin, int64_t end, int64_t grain, ChunkFn fn);

inline int64_t num_chunks(int64_t begin, int64_t end, int64_t grain) {
  return end > begin ? (end - begin + grain - 1) / grain : 0;
}

}  // namespace ember::cpu
