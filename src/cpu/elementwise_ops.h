// Op codes and parameters shared by the elementwise kernels and their callers.
// Included by src/cpu/simd/ files: keep it free of library headers with inline functions.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "cpu/loops.h"
#include "ember/dtype.h"

namespace ember::cpu {

enum class BinaryOp { Add, Sub, Mul, Div, Maximum, Minimum, Pow, Atan2, Remainder, Fmod, BitwiseAnd, BitwiseOr, BitwiseXor };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor };
enum class UnaryOp {
  Exp, Log, Log1p, Expm1, Sqrt, Rsqrt, Abs, Neg, Sin, Cos, Tan, Tanh, Sigmoid, Relu, GeluErf, GeluTanh, Silu, Erf,
  Sign, Reciprocal, PowScalar, Clamp, Floor, Ceil, Trunc, Round, Frac, BitwiseNot,
};
enum class PredicateOp { LogicalNot, IsNan, IsInf, IsFinite };

struct ElementwiseParams {
  double alpha = 1;      // add/sub: a + alpha * b; pow: exponent; round: decimals
  double low = 0;        // clamp
  double high = 0;
  bool has_low = false;
  bool has_high = false;
};

}  // namespace ember::cpu

// Kernel lookups: each returns the inner loop for (op, dtype), or nullptr if unsupported.
// binary/unary: out, a[, b] all of `dtype`. compare/predicate: out bool, inputs `dtype`.
// cast: out `to`, in `from`. where: out, cond(bool), a, b.
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, binary_loop, (::ember::cpu::BinaryOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, unary_loop, (::ember::cpu::UnaryOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, compare_loop, (::ember::cpu::CompareOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, predicate_loop, (::ember::cpu::PredicateOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, cast_loop, (::ember::ScalarType from, ::ember::ScalarType to))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, where_loop, (::ember::ScalarType dtype))
// Lookups that reference only their own kernels: binary_loop for one op, gelu's unary_loop, and cast_loop from a
// dtype to itself (an exact copy). A binary that needs a few (ember-rt, with --gc-sections)
// links only those instead of every op and dtype pair.
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, add_loop, (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, sub_loop, (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, mul_loop, (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, div_loop, (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, copy_loop, (::ember::ScalarType dtype))
// unary_loop(Rsqrt, dtype) for float32 and float64 alone (ember-rt's layer_norm).
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, rsqrt_loop, (::ember::ScalarType dtype))
// unary_loop(GeluTanh or GeluErf, dtype) for the gelu op alone, in the dtypes decoders
// compute in (float32, bfloat16; nullptr for others): ember-rt's size limit.
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, gelu_loop, (bool approximate_tanh, ::ember::ScalarType dtype))
