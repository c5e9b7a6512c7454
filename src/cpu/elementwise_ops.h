// Op codes and parameters shared by the elementwise kernels and their callers, from the op
// table (Note [Op table] in ember/detail/op_table.h).
// Included by src/cpu/simd/ files: keep it free of library headers with inline functions.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "cpu/loops.h"
#include "ember/detail/op_table.h"
#include "ember/dtype.h"

namespace ember::cpu {

// One code per row of the op table, in the table's order.
enum class UnaryOp {
#define EMBER_UNARY(name, program, Kernel, ...) Kernel,
#define EMBER_UNARY_WITH_PARAMS(name, program, Kernel, ...) Kernel,
#include "ember/detail/op_table.def"
};
enum class BinaryOp {
#define EMBER_BINARY(name, program, Kernel, ...) Kernel,
#include "ember/detail/op_table.def"
};
enum class CompareOp {
#define EMBER_COMPARE(name, Kernel, api) Kernel,
#include "ember/detail/op_table.def"
};
enum class PredicateOp {
#define EMBER_PREDICATE(name, Kernel) Kernel,
#include "ember/detail/op_table.def"
};

// An elementwise op's row, indexed by its code: kUnaryRows[static_cast<int>(op)].
struct ElementwiseRow {
  const char* name;
  detail::OpProgram program;
  detail::OpDtype dtype;
};
inline constexpr ElementwiseRow kUnaryRows[] = {
#define EMBER_UNARY(name, program, Kernel, dtype, ...) {#name, detail::OpProgram::program, detail::OpDtype::dtype},
#define EMBER_UNARY_WITH_PARAMS(name, program, Kernel, dtype, ...) \
  {#name, detail::OpProgram::program, detail::OpDtype::dtype},
#include "ember/detail/op_table.def"
};
inline constexpr ElementwiseRow kBinaryRows[] = {
#define EMBER_BINARY(name, program, Kernel, dtype, ...) {#name, detail::OpProgram::program, detail::OpDtype::dtype},
#include "ember/detail/op_table.def"
};

struct ElementwiseParams {
  double alpha = 1;      // add/sub: a + alpha * b; pow: exponent; round: decimals
  double low = 0;        // clamp
  double high = 0;
  bool has_low = false;
  bool has_high = false;
};

}  // namespace ember::cpu

// Kernel lookups: each returns the inner loop for (op, dtype), or nullptr where the op's dtype
// rule has no kernel for `dtype`. binary/unary: out, a[, b] all of `dtype`. compare/predicate:
// out bool, inputs `dtype`. cast: out `to`, in `from`. where: out, cond(bool), a, b.
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, binary_loop, (::ember::cpu::BinaryOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, unary_loop, (::ember::cpu::UnaryOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, compare_loop, (::ember::cpu::CompareOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, predicate_loop, (::ember::cpu::PredicateOp op, ::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, cast_loop, (::ember::ScalarType from, ::ember::ScalarType to))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, where_loop, (::ember::ScalarType dtype))
// Lookups that reference only their own kernels: one op's (unary_op_loop<UnaryOp::Exp>,
// binary_op_loop<BinaryOp::Add>), gelu's in the dtypes decoders compute in (float32, bfloat16),
// rsqrt's for float32 and float64 alone (ember-rt's layer_norm), and cast_loop from a dtype to
// itself (an exact copy). A binary that needs a few (ember-rt, with --gc-sections) links only
// those instead of every op and dtype pair.
EMBER_DECLARE_KERNEL(template <::ember::cpu::UnaryOp kOp> ::ember::cpu::InnerLoop, unary_op_loop,
                     (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(template <::ember::cpu::BinaryOp kOp> ::ember::cpu::InnerLoop, binary_op_loop,
                     (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, copy_loop, (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, rsqrt_loop, (::ember::ScalarType dtype))
EMBER_DECLARE_KERNEL(::ember::cpu::InnerLoop, gelu_loop, (bool approximate_tanh, ::ember::ScalarType dtype))
