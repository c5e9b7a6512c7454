// The public face of the thread pool (ember/parallel.h): thread count and deterministic mode.
#include <atomic>

#include "cpu/parallel.h"
#include "ember/error.h"
#include "ember/parallel.h"

namespace ember {
namespace {
std::atomic<bool> g_deterministic{false};
}

int get_num_threads() { return cpu::num_threads(); }

void set_num_threads(int n) {
  EMBER_CHECK(n > 0, "set_num_threads", "number of threads must be positive, got ", n);
  cpu::set_num_threads(n);
}

void use_deterministic_algorithms(bool mode) { g_deterministic = mode; }
bool are_deterministic_algorithms_enabled() { return g_deterministic; }

}  // namespace ember
