// SwiGLU: out = silu(a) * b = a * sigmoid(a) * b elementwise, and its backward.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// a, b, out: n contiguous elements of `dtype`.
void swiglu_forward(ScalarType dtype, const void* a, const void* b, void* out, int64_t n);

// From grad (n elements): grad_a = grad * b * s * (1 + a * (1 - s)) with s = sigmoid(a), and
// grad_b = grad * silu(a); either output may be nullptr.
void swiglu_backward(ScalarType dtype, const void* grad, const void* a, const void* b, void* grad_a, void* grad_b,
                     int64_t n);

}  // namespace ember::cpu

EMBER_DECLARE_KERNEL(void, swiglu_forward_run,
                     (::ember::ScalarType dtype, const void* a, const void* b, void* out, int64_t n))
EMBER_DECLARE_KERNEL(void, swiglu_backward_run,
                     (::ember::ScalarType dtype, const void* grad, const void* a, const void* b, void* grad_a,
                      void* grad_b, int64_t n))
