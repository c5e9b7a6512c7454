// Threads and determinism.
#pragma once

namespace ember {

// Size of ember's thread pool (default: EMBER_NUM_THREADS or the number of cores).
int get_num_threads();
void set_num_threads(int n);

// With true, ops that have a non-deterministic fast path use the deterministic one. ember's
// reductions and index accumulations are deterministic for any thread count either way.
void use_deterministic_algorithms(bool mode);
bool are_deterministic_algorithms_enabled();

}  // namespace ember
