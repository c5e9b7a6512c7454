// The op table's vocabulary: what the columns of ember/detail/op_table.def mean.
//
// Note [Op table]
// Every elementwise op, and every op an exported program may call, is declared once, as one
// row of ember/detail/op_table.def. The rows are X-macros: a consumer defines the row macros
// it needs, includes the file, and gets one expansion per row, so what it builds cannot
// drift from the row:
//   - the kernel codes cpu::UnaryOp, BinaryOp, CompareOp, PredicateOp, each op's row by its
//     code (name, program, dtype rule) and the (op, dtype) -> inner loop lookups
//     (src/cpu/elementwise_ops.h, src/cpu/simd/elementwise.cpp);
//   - the Tensor methods and free functions (include/ember/tensor.h, functions.h) and their
//     definitions, result dtypes, backward formulas and export records (src/ops/elementwise.cpp);
//   - ExportedProgram::run's kernels for the elementwise rows (src/export/interpreter.cpp);
//   - the runtime's kernels for the elementwise rows marked Runtime
//     (src/runtime/kernels/elementwise.cpp) and the op list of every binary that links them
//     all (cmake/runtime.cmake reads each row's name and program columns);
//   - the op index of docs/RUNTIME_OPS.md (tests/export/test_op_table.cpp regenerates it
//     and fails when the file differs).
// What a row cannot say is written by hand and checked against the table: each op's scalar
// formula (unary, binary in src/cpu/simd/elementwise.cpp; a row without one does not
// compile), the API of the ops with parameters, and the other program ops' functions,
// interpreter entries and runtime kernels (test_op_table, and the runtime's kernel list
// against the table in tests/runtime/test_kernels.cpp); the export tracer refuses an op that
// records itself without a row (src/export/tracer.cpp).
#pragma once

namespace ember::detail {

// Column `program`: what an exported program (ember::export_program) does with the op.
enum class OpProgram {
  Runtime,      // programs may call it; ExportedProgram::run and the runtime run it (ember-rt
                // links the kernels its op list names: src/runtime/kernels/gpt.ops)
  Interpreter,  // programs may call it; ExportedProgram::run runs it, the runtime has no kernel
  NotExported,  // an export that reaches it is refused, naming the op
};

// Column `dtype` of the elementwise rows: which dtypes the op computes in. Binary ops first
// promote their operands to one dtype (PyTorch's result_type).
enum class OpDtype {
  Floating,   // floating dtypes; integer and bool inputs compute in float32 (exp(int) is float)
  FloatOnly,  // floating dtypes only: integer inputs are an error
  Numeric,    // integers keep their dtype (kernels for every dtype but bool); bool is an error
  Integral,   // bool and integers only
};

// Column `saves` of the binary rows: what the backward formulas read.
enum class OpSaves {
  Nothing,          // neither operand (so add and sub take inference tensors, as PyTorch)
  Inputs,           // a and b
  InputsAndResult,  // a, b and y
  NotDifferentiable,
};

}  // namespace ember::detail

// Column `api`: the overloads a row declares, as methods (tensor.h) and free functions
// (functions.h); src/ops/elementwise.cpp defines them.
//   Unary              x.name(), ember::name(x)
//   UnaryInplace       Unary and x.name_()
//   UnaryFree          ember::name(x) only
//   Binary             a.name(b), ember::name(a, b)
//   BinaryInplace      Binary and a.name_(b)
//   BinaryScalar       BinaryInplace, each with b a Tensor or a Scalar
//   BinaryScalarAlpha  BinaryScalar with a trailing `const Scalar& alpha = 1` (a + alpha * b)
#define EMBER_OP_METHODS_Unary(name) Tensor name() const;
#define EMBER_OP_METHODS_UnaryInplace(name) \
  Tensor name() const;                      \
  Tensor& name##_() const;
#define EMBER_OP_METHODS_UnaryFree(name)
#define EMBER_OP_METHODS_Binary(name) Tensor name(const Tensor& other) const;
#define EMBER_OP_METHODS_BinaryInplace(name) \
  EMBER_OP_METHODS_Binary(name)              \
  Tensor& name##_(const Tensor& other) const;
#define EMBER_OP_METHODS_BinaryScalar(name) \
  EMBER_OP_METHODS_BinaryInplace(name)      \
  Tensor name(const Scalar& other) const;   \
  Tensor& name##_(const Scalar& other) const;
#define EMBER_OP_METHODS_BinaryScalarAlpha(name)                        \
  Tensor name(const Tensor& other, const Scalar& alpha = 1) const;     \
  Tensor name(const Scalar& other, const Scalar& alpha = 1) const;     \
  Tensor& name##_(const Tensor& other, const Scalar& alpha = 1) const; \
  Tensor& name##_(const Scalar& other, const Scalar& alpha = 1) const;

#define EMBER_OP_FUNCTIONS_Unary(name) Tensor name(const Tensor& x);
#define EMBER_OP_FUNCTIONS_UnaryInplace(name) EMBER_OP_FUNCTIONS_Unary(name)
#define EMBER_OP_FUNCTIONS_UnaryFree(name) EMBER_OP_FUNCTIONS_Unary(name)
#define EMBER_OP_FUNCTIONS_Binary(name) Tensor name(const Tensor& a, const Tensor& b);
#define EMBER_OP_FUNCTIONS_BinaryInplace(name) EMBER_OP_FUNCTIONS_Binary(name)
#define EMBER_OP_FUNCTIONS_BinaryScalar(name) \
  EMBER_OP_FUNCTIONS_Binary(name)             \
  Tensor name(const Tensor& a, const Scalar& b);
#define EMBER_OP_FUNCTIONS_BinaryScalarAlpha(name)                        \
  Tensor name(const Tensor& a, const Tensor& b, const Scalar& alpha = 1); \
  Tensor name(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
