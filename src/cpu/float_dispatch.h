// Dispatch for the kernels written for float32 and float64 only (convolution, pooling,
// batch norm); other dtypes reach them as float32 copies or not at all.
#pragma once
#include "cpu/type_dispatch.h"
#include "ember/error.h"

namespace ember::cpu {

// Calls body(TypeTag<float>{}) or body(TypeTag<double>{}); any other dtype is an error naming `op`.
template <typename Body>
void dispatch_float32_or_64(ScalarType dtype, const char* op, Body&& body) {
  if (dtype == kFloat32) return body(TypeTag<float>{});
  EMBER_CHECK(dtype == kFloat64, op, "not implemented for dtype ", dtype_name(dtype));
  body(TypeTag<double>{});
}

}  // namespace ember::cpu
