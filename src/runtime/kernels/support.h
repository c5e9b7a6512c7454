// Helpers shared by the kernels under src/runtime/kernels: operand checks with messages in
// ember's style ("[op] ..."), attribute reads, broadcasting and the elementwise loops of
// src/cpu (the ones ember's eager ops run, so that results are bitwise equal).
#pragma once
#include <cstring>

#include "cpu/elementwise_ops.h"
#include "cpu/loops.h"
#include "runtime/expr.h"
#include "runtime/kernel.h"

namespace ember::rt::kernels {

inline ScalarType to_ember(program::ScalarType dtype) { return static_cast<ScalarType>(dtype); }

inline bool fail(Error& error, const char* op, const char* what) {
  return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] %s", op, what);
}

// Load time: operand counts, one dtype for all of them (optional inputs: min..max inputs).
inline bool check_operands(const KernelSignature& s, size_t min_inputs, size_t max_inputs, size_t outputs,
                           Error& error) {
  if (s.inputs.size() < min_inputs || s.inputs.size() > max_inputs || s.outputs.size() != outputs)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] takes %zu..%zu inputs and %zu outputs, got %zu and %zu",
                      s.op, min_inputs, max_inputs, outputs, s.inputs.size(), s.outputs.size());
  return true;
}

inline bool check_same_dtype(const KernelSignature& s, Error& error) {
  const program::ScalarType dtype = s.outputs.empty() ? s.inputs[0].dtype : s.outputs[0].dtype;
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const OperandType& operand : *list)
      if (operand.dtype != dtype)
        return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] operands of dtypes %s and %s (the exporter casts "
                          "inputs to one dtype first)", s.op, dtype_name(operand.dtype), dtype_name(dtype));
  return true;
}

// An Int attribute, or an Exprs attribute of one expression evaluated with the bound symbols
// (at load, `symbols` is null and an Exprs attribute reads as `fallback`).
inline bool int_attribute(const program::Call* call, const char* name, const int64_t* symbols, int64_t fallback,
                          int64_t* value) {
  const program::Attribute* a = find_attribute(call, name);
  *value = fallback;
  if (a == nullptr) return true;
  if (a->kind() == program::AttributeKind::Int) {
    *value = a->int_value();
    return true;
  }
  if (a->kind() == program::AttributeKind::Exprs && a->exprs() != nullptr && a->exprs()->size() == 1) {
    if (symbols != nullptr) *value = evaluate(a->exprs()->Get(0), symbols);
    return true;
  }
  return false;
}

// Attribute `name`'s value for spatial dim d of `spatial` (Ints of one value serve every dim).
inline bool per_dim_attribute(const program::Call* call, const char* name, int spatial, int d, int64_t fallback,
                              int64_t* value) {
  const program::Attribute* a = find_attribute(call, name);
  *value = fallback;
  if (a == nullptr) return true;
  if (a->kind() != program::AttributeKind::Ints || a->ints() == nullptr ||
      (a->ints()->size() != 1 && a->ints()->size() != static_cast<uint32_t>(spatial)))
    return false;
  *value = a->ints()->Get(a->ints()->size() == 1 ? 0 : static_cast<uint32_t>(d));
  return true;
}

inline bool float_attribute(const program::Call* call, const char* name, double fallback, double* value) {
  const program::Attribute* a = find_attribute(call, name);
  *value = fallback;
  if (a == nullptr) return true;
  if (a->kind() != program::AttributeKind::Float) return false;
  *value = a->float_value();
  return true;
}

// Strides of `input` broadcast to `out`'s shape (dims aligned at the right; 0 where
// broadcast). False when the shapes do not broadcast.
inline bool broadcast_strides(const TensorView& input, const TensorView& out, int64_t* strides) {
  if (input.dim > out.dim) return false;
  const int offset = out.dim - input.dim;
  for (int d = 0; d < out.dim; ++d) {
    if (d < offset) {
      strides[d] = 0;
      continue;
    }
    const int64_t size = input.sizes[d - offset];
    if (size == out.sizes[d]) {
      strides[d] = size == 1 ? 0 : input.strides[d - offset];
    } else if (size == 1) {
      strides[d] = 0;
    } else {
      return false;
    }
  }
  return true;
}

// out = loop(inputs...) elementwise with broadcasting, through cpu::run_elementwise.
inline bool run_elementwise(const char* op, cpu::InnerLoop loop, const cpu::ElementwiseParams& params,
                            const TensorView& out, std::span<const TensorView> inputs, Error& error) {
  if (loop == nullptr) return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] not implemented for dtype %s", op,
                                         dtype_name(out.dtype));
  int64_t strides[cpu::kMaxOperands][kMaxDims];
  const int64_t* stride_arrays[cpu::kMaxOperands];
  int64_t element_sizes[cpu::kMaxOperands];
  char* base[cpu::kMaxOperands];
  std::memcpy(strides[0], out.strides, sizeof(out.strides));
  element_sizes[0] = element_size(out.dtype);
  base[0] = static_cast<char*>(out.data);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!broadcast_strides(inputs[k], out, strides[k + 1]))
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] input %zu (%d dims) does not broadcast to the output's shape", op,
                        k, inputs[k].dim);
    element_sizes[k + 1] = element_size(inputs[k].dtype);
    base[k + 1] = static_cast<char*>(inputs[k].data);
  }
  for (size_t k = 0; k <= inputs.size(); ++k) stride_arrays[k] = strides[k];
  const cpu::Geometry g =
      cpu::make_geometry(out.dim, out.sizes, static_cast<int>(inputs.size() + 1), stride_arrays, element_sizes);
  cpu::run_elementwise(g, base, loop, &params);
  return true;
}

// Copies `src` into contiguous memory at `dst` converted to `dtype` (Tensor::to(dtype).contiguous():
// the copy loop within a dtype, the cast loop across dtypes).
inline bool make_contiguous_as(const char* op, const TensorView& src, program::ScalarType dtype, void* dst,
                               TensorView* out, Error& error) {
  *out = src;
  out->data = dst;
  out->dtype = dtype;
  int64_t stride = 1;
  for (int d = src.dim - 1; d >= 0; --d) {
    out->strides[d] = stride;
    stride *= src.sizes[d];
  }
  const TensorView inputs[1] = {src};
  const cpu::InnerLoop loop = dtype == src.dtype ? EMBER_KERNEL(copy_loop)(to_ember(src.dtype))
                                                 : EMBER_KERNEL(cast_loop)(to_ember(src.dtype), to_ember(dtype));
  return run_elementwise(op, loop, {}, *out, inputs, error);
}

// Copies `src` into contiguous memory at `dst` (Tensor::contiguous).
inline bool make_contiguous(const char* op, const TensorView& src, void* dst, TensorView* out, Error& error) {
  return make_contiguous_as(op, src, src.dtype, dst, out, error);
}

// `view` itself when contiguous, else its contiguous copy in `scratch`.
inline bool contiguous_or_copy(const char* op, const TensorView& view, void* scratch, TensorView* out, Error& error) {
  if (view.is_contiguous()) {
    *out = view;
    return true;
  }
  return make_contiguous(op, view, scratch, out, error);
}

inline bool same_sizes(const TensorView& a, const TensorView& b) {
  if (a.dim != b.dim) return false;
  for (int d = 0; d < a.dim; ++d)
    if (a.sizes[d] != b.sizes[d]) return false;
  return true;
}

inline int64_t aligned_bytes(int64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace ember::rt::kernels

namespace ember::rt::kernels {

// The binary family (add, sub, mul, div, ...): out = a op b with broadcasting; add and sub
// take alpha (a + alpha * b), as binary_op in src/ops/elementwise.cpp.
inline bool check_binary(const KernelSignature& s, Error& error) {
  double alpha = 1;
  if (!check_operands(s, 2, 2, 1, error) || !check_same_dtype(s, error)) return false;
  if (!float_attribute(s.call, "alpha", 1.0, &alpha))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] attribute alpha must be a Float", s.op);
  return true;
}

// binary_loop(kOp, dtype) through the lookup of that op alone (elementwise_ops.h).
template <cpu::BinaryOp kOp>
cpu::InnerLoop binary_loop(program::ScalarType dtype) {
  return EMBER_KERNEL(binary_op_loop<kOp>)(to_ember(dtype));
}

// out += bias (broadcast over out's leading dims) by the binary add kernel, as eager's
// `product + bias` after a linear layer's product.
inline bool add_bias(const char* op, const TensorView& out, const TensorView& bias, Error& error) {
  const TensorView inputs[2] = {out, bias};
  return run_elementwise(op, binary_loop<cpu::BinaryOp::Add>(out.dtype), {}, out, inputs, error);
}

template <cpu::BinaryOp kOp>
bool run_binary(const KernelCall& c, Error& error) {
  cpu::ElementwiseParams params;
  float_attribute(c.call, "alpha", 1.0, &params.alpha);
  return run_elementwise(c.op, binary_loop<kOp>(c.outputs[0].dtype), params, c.outputs[0], c.inputs, error);
}

// The unary family (relu, silu, exp, ...): out = f(x), same shape.
inline bool check_unary(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 1, 1, 1, error) || !check_same_dtype(s, error)) return false;
  if (s.inputs[0].dim != s.outputs[0].dim)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] input of %d dims, output of %d", s.op, s.inputs[0].dim,
                      s.outputs[0].dim);
  return true;
}

template <cpu::UnaryOp kOp>
bool run_unary(const KernelCall& c, Error& error) {
  for (int d = 0; d < c.outputs[0].dim; ++d)
    if (c.inputs[0].sizes[d] != c.outputs[0].sizes[d]) return fail(error, c.op, "input and output sizes differ");
  return run_elementwise(c.op, EMBER_KERNEL(unary_op_loop<kOp>)(to_ember(c.outputs[0].dtype)), {}, c.outputs[0],
                         c.inputs, error);
}

}  // namespace ember::rt::kernels

// Defines the Kernel named `op` (the name in Program.operators) from a check and a run function.
#define EMBER_RT_KERNEL(op, check, run) \
  namespace ember::rt::kernels {        \
  extern const Kernel op;               \
  const Kernel op{#op, check, run};     \
  }

// A kernel that writes its input `input` in place (see Kernel::writes_input).
#define EMBER_RT_KERNEL_IN_PLACE(op, check, run, input) \
  namespace ember::rt::kernels {                        \
  extern const Kernel op;                               \
  const Kernel op{#op, check, run, input};              \
  }
