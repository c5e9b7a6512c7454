// The kernels of the op table's unary and binary rows marked Runtime (ember/detail/op_table.def):
// out = f(x), or a op b with broadcasting (add and sub: a + alpha * b), on the inner loops of
// ember's unary_op and binary_op, so results are bitwise eager's. Each row's Kernel object is
// registered only where an op list names it (cmake/runtime.cmake); --gc-sections drops the rest.
#include "runtime/kernels/support.h"

#define EMBER_RT_ELEMENTWISE_Runtime(name, check, run) EMBER_RT_KERNEL(name, check, run)
#define EMBER_RT_ELEMENTWISE_Interpreter(name, check, run)
#define EMBER_RT_ELEMENTWISE_NotExported(name, check, run)
#define EMBER_UNARY(name, program, Kernel, ...) \
  EMBER_RT_ELEMENTWISE_##program(name, check_unary, run_unary<cpu::UnaryOp::Kernel>)
#define EMBER_BINARY(name, program, Kernel, ...) \
  EMBER_RT_ELEMENTWISE_##program(name, check_binary, run_binary<cpu::BinaryOp::Kernel>)
#include "ember/detail/op_table.def"
