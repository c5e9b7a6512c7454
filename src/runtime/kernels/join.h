// cat and stack, as ember::cat / ember::stack (src/ops/join.cpp): every input copied by the
// cast loop to its own dtype into its slice of the contiguous output (a pure copy, so bitwise
// eager's). Attribute dim (Int, >= 0: the exporter wraps it). Inputs share the output's dtype.
#pragma once
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {

// kStack: inputs of one shape gain a dim at `dim`; else (cat) they join along `dim`.
template <bool kStack>
bool check_join(const KernelSignature& s, Error& error) {
  if (s.inputs.empty() || s.outputs.size() != 1)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] takes at least one input and one output, got %zu and %zu",
                      s.op, s.inputs.size(), s.outputs.size());
  if (!check_same_dtype(s, error)) return false;
  int64_t dim = 0;
  const program::Attribute* a = find_attribute(s.call, "dim");
  if (a == nullptr || a->kind() != program::AttributeKind::Int)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] needs an Int attribute dim", s.op);
  dim = a->int_value();
  const int rank = s.outputs[0].dim;
  if (dim < 0 || dim >= rank)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] dim %lld outside the output's %d dims", s.op,
                      static_cast<long long>(dim), rank);
  for (const OperandType& input : s.inputs)
    if (input.dim != rank - (kStack ? 1 : 0))
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] inputs of %d dims for an output of %d", s.op, input.dim,
                        rank);
  return true;
}

template <bool kStack>
bool run_join(const KernelCall& c, Error& error) {
  const TensorView& out = c.outputs[0];
  const int dim = static_cast<int>(find_attribute(c.call, "dim")->int_value());
  if (!out.is_contiguous()) return fail(error, c.op, "the output must be contiguous");
  if (kStack && out.sizes[dim] != static_cast<int64_t>(c.inputs.size()))
    return fail(error, c.op, "the output's stacked dim differs from the number of inputs");
  int64_t offset = 0;
  for (const TensorView& input : c.inputs) {
    // The input's slice of out: out's strides (less the stacked dim), at `offset` along dim.
    TensorView slice = out;
    slice.dim = input.dim;
    for (int d = 0, o = 0; d < input.dim; ++d, ++o) {
      if (kStack && o == dim) ++o;
      const bool along = !kStack && d == dim;
      if (!along && input.sizes[d] != out.sizes[o])
        return fail(error, c.op, "an input's sizes differ from the output's off the joined dim");
      slice.sizes[d] = input.sizes[d];
      slice.strides[d] = out.strides[o];
    }
    const int64_t extent = kStack ? 1 : input.sizes[dim];
    if (offset + extent > out.sizes[dim]) return fail(error, c.op, "the inputs overrun the output along dim");
    slice.data = static_cast<char*>(out.data) + offset * out.strides[dim] * element_size(out.dtype);
    offset += extent;
    const TensorView parts[1] = {input};
    if (!run_elementwise(c.op, EMBER_KERNEL(copy_loop)(to_ember(out.dtype)), {}, slice, parts, error)) return false;
  }
  if (offset != out.sizes[dim]) return fail(error, c.op, "the inputs do not fill the output along dim");
  return true;
}

}  // namespace ember::rt::kernels
