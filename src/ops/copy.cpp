// Copies and dtype conversion.
#include "ops/op_utils.h"

namespace ember {

Tensor Tensor::clone() const {
  EMBER_CHECK(defined(), "clone", "called on an undefined tensor");
  EMBER_RECORD_OP("clone", *this);
  Tensor out = core::make_tensor(sizes(), scalar_type());
  ops::copy_into(out, *this);
  autograd::record("CloneBackward", {*this}, {out},
                   [](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> { return {g[0]}; });
  return ember_trace_op_.result(out);
}

Tensor Tensor::contiguous() const {
  EMBER_CHECK(defined(), "contiguous", "called on an undefined tensor");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::to(ScalarType dtype, bool, bool copy) const {
  EMBER_CHECK(defined(), "to", "called on an undefined tensor");
  if (dtype == scalar_type() && !copy) return *this;
  EMBER_RECORD_OP("to", *this);
  Tensor out = core::make_tensor(sizes(), dtype);
  ops::copy_into(out, *this);
  if (ember::is_floating_point(dtype)) {
    ScalarType from = scalar_type();
    autograd::record("ToCopyBackward", {*this}, {out},
                     [from](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {g[0].to(from)};
                     });
  }
  ember_trace_op_.attr("dtype", static_cast<int64_t>(dtype));
  return ember_trace_op_.result(out);
}

Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy) const {
  check_device_available(options.device(), "to");
  EMBER_CHECK(!options.requires_grad(), "to",
              "a TensorOptions with requires_grad(true) is not taken here (as in libtorch): call requires_grad_()");
  return to(options.has_dtype() ? options.dtype() : scalar_type(), non_blocking, copy);
}

Tensor Tensor::to(Device device, ScalarType dtype, bool non_blocking, bool copy) const {
  check_device_available(device, "to");
  return to(dtype, non_blocking, copy);
}

Tensor& Tensor::copy_(const Tensor& src, bool) const {
  EMBER_CHECK(defined() && src.defined(), "copy_", "called with an undefined tensor");
  EMBER_RECORD_OP("copy_", *this, src);
  auto shape = ops::broadcast_shapes(sizes(), src.sizes(), "copy_");
  EMBER_CHECK(shape == sizes(), "copy_", "source of shape ", src.sizes(), " cannot be broadcast to ", sizes());
  autograd::check_inplace(*this, "copy_", {src});
  ops::copy_into(*this, src);
  storage().bump_version();
  if (autograd::should_record({src})) {
    std::vector<int64_t> src_sizes = src.sizes();
    ScalarType src_dtype = src.scalar_type();
    auto node = std::make_shared<autograd::FunctionNode>(
        "CopyBackward", [src_sizes, src_dtype](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
          return {autograd::sum_to(g[0], src_sizes).to(src_dtype)};
        });
    node->sequence_nr = autograd::next_sequence_nr();
    node->next_edges.push_back(autograd::gradient_edge(src));
    autograd::set_history(*this, node, 0);
  } else if (requires_grad() && !is_leaf()) {
    detach_();  // the old history no longer influences the values
  }
  ember_trace_op_.in_place();
  return const_cast<Tensor&>(*this);  // a handle: const like libtorch, data mutable
}

Tensor& Tensor::fill_(const Scalar& value) const {
  EMBER_CHECK(defined(), "fill_", "called on an undefined tensor");
  EMBER_RECORD_OP("fill_", *this);
  EMBER_CHECK(!ember_trace_op_.active(), "fill_", "(in place) cannot be exported: ember::export_program records no "
              "in-place writes but copy_; compute the value with out-of-place ops");
  autograd::check_inplace(*this, "fill_");
  ops::copy_into(*this, ops::scalar_to_tensor(value, scalar_type()));
  storage().bump_version();
  if (requires_grad() && !is_leaf()) detach_();
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::zero_() const { return fill_(0); }

}  // namespace ember
