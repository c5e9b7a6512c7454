// Shared helpers for op functions: validation, broadcasting, type promotion, and running
// elementwise kernels over tensors (internal).
#pragma once
#include <vector>

#include "autograd/function.h"
#include "core/graph_capture.h"
#include "core/record_op.h"
#include "core/tensor_impl.h"
#include "cpu/elementwise_ops.h"
#include "ember/functions.h"

namespace ember::ops {

std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

// PyTorch's result_type: dimensioned tensors decide unless a zero-dim tensor or a scalar
// is of a higher category (bool < integer < floating). A Scalar counts at its category's
// default dtype (int64, float32).
// The dtype integer inputs of a floating op, and floating Python numbers mixed with integer
// tensors, compute in: the default dtype (float32 unless set_default_dtype changed it to another
// floating dtype), as libtorch's.
inline ScalarType default_floating_dtype() {
  const ScalarType d = get_default_dtype_as_scalartype();
  return is_floating_point(d) ? d : kFloat32;
}
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);
bool can_cast(ScalarType from, ScalarType to);

// A 0-dim tensor holding `value` as `dtype`.
Tensor scalar_to_tensor(const Scalar& value, ScalarType dtype);

// Strides of `t` viewed at the broadcast shape `sizes` (0 on expanded dims), in elements.
std::vector<int64_t> broadcast_strides(const Tensor& t, IntArrayRef sizes, const char* op);

// Runs `loop` with out = operand 0 and `inputs` broadcast to out's shape.
void run_loop(const Tensor& out, const std::vector<Tensor>& inputs, cpu::InnerLoop loop,
              const cpu::ElementwiseParams& params = {});

// `src`, or a copy of it when it shares storage with `dst` in another layout: a kernel
// writing `dst` while reading `src` would otherwise read values it already wrote.
Tensor unaliased(const Tensor& src, const Tensor& dst);

// Writes `src` (broadcast, any dtype) into `dst` without autograd.
void copy_into(const Tensor& dst, const Tensor& src);

// An empty `sizes` tensor (like's rank) whose dimensions lie in memory in the order of like's
// strides, as PyTorch's attention allocates its output after the query: the transposed view of
// a [B, L, H, E] projection gives a result whose transpose back is contiguous. Contiguous where
// like's last dimension is not its innermost with stride 1, or while an export trace runs (its
// memory plan holds contiguous results only).
Tensor empty_in_layout_of(const Tensor& like, IntArrayRef sizes, ScalarType dtype);

// Whether t's elements fill its memory without gaps: its strides, ordered, are those of a
// contiguous tensor of its sizes in some order of its dimensions (size-1 dimensions aside).
bool is_dense_permutation(const Tensor& t);

// For an in-place op: when autograd must record, computes `out_of_place(self.clone())` and
// writes it into `self`, which takes over the result's history; otherwise runs `direct`.
// Either way bumps self's version.
template <typename OutOfPlace, typename Direct>
Tensor& inplace(const Tensor& self, const char* op, const std::vector<Tensor>& others, OutOfPlace out_of_place,
                Direct direct) {
  profiler::RecordFunction record;  // named "add_" for add: the string is built only while profiling
  if (profiler::is_enabled()) record.begin(std::string(op) + "_", profiler::Category::Op);
  core::TraceOp trace(op);
  EMBER_CHECK(!trace.active(), op, "(in place) cannot be exported: ember::export_program records no in-place "
              "writes but copy_; use the out-of-place op");  // Note [Export trace]
  autograd::check_inplace(self, op, others);
  std::vector<Tensor> all = others;
  all.push_back(self);
  if (autograd::should_record(all)) {
    Tensor result = out_of_place(self.clone());
    EMBER_CHECK(result.scalar_type() == self.scalar_type() || can_cast(result.scalar_type(), self.scalar_type()), op,
                "result type ", dtype_name(result.scalar_type()), " can't be cast to the desired output type ",
                dtype_name(self.scalar_type()));
    EMBER_CHECK(result.sizes() == self.sizes(), op, "output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", result.sizes());
    copy_into(self, result);
    self.storage().bump_version();
    if (result.grad_fn()) autograd::set_history(self, result.grad_fn(), result.unsafeGetTensorImpl()->autograd->output_nr);
  } else {
    direct();
    self.storage().bump_version();
  }
  return const_cast<Tensor&>(self);  // tensors are handles: in-place methods are const, as in libtorch
}

}  // namespace ember::ops
