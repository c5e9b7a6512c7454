#include "ember/dtype.h"

#include <atomic>

namespace ember {

namespace {
std::atomic<ScalarType> default_dtype{kFloat32};
}  // namespace

void set_default_dtype(TypeMeta dtype) { default_dtype.store(dtype.toScalarType(), std::memory_order_relaxed); }
TypeMeta get_default_dtype() { return TypeMeta(get_default_dtype_as_scalartype()); }
ScalarType get_default_dtype_as_scalartype() { return default_dtype.load(std::memory_order_relaxed); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  // PyTorch promotes uint8 with int8 to int16; ember has no int16, so it uses int32.
  // Index order: Bool, UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64.
  constexpr ScalarType b1 = kBool, u1 = kUInt8, i1 = kInt8, i4 = kInt32, i8 = kInt64, f2 = kFloat16,
                       bf = kBFloat16, f4 = kFloat32, f8 = kFloat64;
  static constexpr ScalarType table[kNumScalarTypes][kNumScalarTypes] = {
      /* b1 */ {b1, u1, i1, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i4, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i4, i1, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

}  // namespace ember
