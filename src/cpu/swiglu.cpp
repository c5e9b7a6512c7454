#include "cpu/swiglu.h"

#include "cpu/parallel.h"

namespace ember::cpu {
namespace {

constexpr int64_t kChunk = 16384;

const char* at(const void* p, int64_t offset) { return p ? static_cast<const char*>(p) + offset : nullptr; }
char* at(void* p, int64_t offset) { return p ? static_cast<char*>(p) + offset : nullptr; }

}  // namespace

void swiglu_forward(ScalarType dtype, const void* a, const void* b, void* out, int64_t n) {
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  auto kernel = EMBER_KERNEL(swiglu_forward_run);
  parallel_for(0, n, kChunk, [&](int64_t lo, int64_t hi) {
    kernel(dtype, at(a, lo * item), at(b, lo * item), at(out, lo * item), hi - lo);
  });
}

void swiglu_backward(ScalarType dtype, const void* grad, const void* a, const void* b, void* grad_a, void* grad_b,
                     int64_t n) {
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  auto kernel = EMBER_KERNEL(swiglu_backward_run);
  parallel_for(0, n, kChunk, [&](int64_t lo, int64_t hi) {
    kernel(dtype, at(grad, lo * item), at(a, lo * item), at(b, lo * item), at(grad_a, lo * item), at(grad_b, lo * item),
           hi - lo);
  });
}

}  // namespace ember::cpu
