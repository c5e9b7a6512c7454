// Reductions on Gloo's math functions, and 16-bit float widening.
#include "distributed/reduction.h"

#include <cstdint>

#include <gloo/math.h>

#include "ember/error.h"

namespace ember::distributed {
namespace {

template <typename T>
ReduceFunction typed_reduce_function(ReduceOp reduce_op) {
  switch (reduce_op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return [](void* c, const void* a, const void* b, size_t n) { gloo::sum<T>(c, a, b, n); };
    case ReduceOp::PRODUCT:
      return [](void* c, const void* a, const void* b, size_t n) { gloo::product<T>(c, a, b, n); };
    case ReduceOp::MIN: return [](void* c, const void* a, const void* b, size_t n) { gloo::min<T>(c, a, b, n); };
    case ReduceOp::MAX: return [](void* c, const void* a, const void* b, size_t n) { gloo::max<T>(c, a, b, n); };
  }
  return nullptr;
}

template <typename T>
void divide(void* data, size_t n, int size) {
  T* values = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) values[i] /= static_cast<T>(size);
}

}  // namespace

ScalarType reduction_dtype(ScalarType dtype) { return dtype == kBFloat16 || dtype == kFloat16 ? kFloat32 : dtype; }

void check_reducible(ScalarType dtype, ReduceOp reduce_op, const char* op) {
  EMBER_CHECK(dtype != kBool, op, "cannot reduce bool tensors (supported: float32, float64, bfloat16, float16, ",
              "int32, int64, int8, uint8)");
  EMBER_CHECK(reduce_op != ReduceOp::AVG || is_floating_point(dtype), op,
              "ReduceOp::AVG needs a floating dtype, got ", dtype_name(dtype));
}

ReduceFunction reduce_function(ScalarType dtype, ReduceOp reduce_op) {
  switch (dtype) {
    case kFloat32: return typed_reduce_function<float>(reduce_op);
    case kFloat64: return typed_reduce_function<double>(reduce_op);
    case kInt32: return typed_reduce_function<int32_t>(reduce_op);
    case kInt64: return typed_reduce_function<int64_t>(reduce_op);
    case kInt8: return typed_reduce_function<int8_t>(reduce_op);
    case kUInt8: return typed_reduce_function<uint8_t>(reduce_op);
    default: return nullptr;
  }
}

void divide_by_size(void* data, ScalarType dtype, size_t n, int size) {
  if (dtype == kFloat64) {
    divide<double>(data, n, size);
  } else {
    divide<float>(data, n, size);
  }
}

void widen(const void* src, ScalarType src_dtype, float* dst, size_t n) {
  const uint16_t* bits = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i)
    dst[i] = src_dtype == kBFloat16 ? BFloat16::to_float(bits[i]) : Half::to_float(bits[i]);
}

void narrow(const float* src, void* dst, ScalarType dst_dtype, size_t n) {
  uint16_t* bits = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < n; ++i)
    bits[i] = dst_dtype == kBFloat16 ? BFloat16::from_float(src[i]) : Half::from_float(src[i]);
}

}  // namespace ember::distributed
