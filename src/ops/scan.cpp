// cumsum and cumprod: the kernels in cpu/scan, backward from ops.
#include "cpu/scan.h"
#include "ops/reduce_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;
using cpu::ScanOp;

// Integer and bool inputs scan in int64 unless a dtype is given, as in PyTorch.
ScalarType scan_dtype(const Tensor& x, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return x.is_floating_point() ? x.scalar_type() : kInt64;
}

// Inclusive scan of x.to(dtype) along `dim`, from the end when `reverse`.
Tensor scan_values(ScanOp op, const Tensor& x, int64_t dim, ScalarType dtype, bool reverse, const char* name) {
  EMBER_RECORD_OP(name, x);
  EMBER_CHECK(dtype != kBool, name, "does not support dtype bool; pass an integer or floating dtype");
  NoGradGuard guard;
  const Tensor input = x.to(dtype);
  const ops::ReduceLayout L = ops::reduce_layout(input, dim, true, name);
  Tensor out = core::make_tensor(input.sizes(), dtype);
  core::launch(name, [&] {
    return [op, dtype, in = L.input.data_ptr(), o = out.data_ptr(), outer = L.outer, R = L.R, inner = L.inner,
            reverse] { cpu::scan(op, dtype, in, o, outer, R, inner, reverse); };
  });
  return out;
}

// cumsum, or the suffix sum when `reverse` (the gradient of cumsum, and vice versa).
Tensor cumsum_impl(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype, bool reverse) {
  EMBER_CHECK(x.defined(), "cumsum", "called on an undefined tensor");
  const int64_t d = core::wrap_dim(dim, x.dim(), "cumsum");
  Tensor out = scan_values(ScanOp::Sum, x, d, scan_dtype(x, dtype), reverse, "cumsum");
  if (autograd::should_record({x}) && out.is_floating_point()) {
    const ScalarType in_dtype = x.scalar_type();
    autograd::record("CumsumBackward", {x}, {out},
                     [d, reverse, in_dtype](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {cumsum_impl(g[0], d, std::nullopt, !reverse).to(in_dtype)};
                     });
  }
  return out;
}

// Note [cumprod backward]
// With y = cumprod(x), dx_i = sum_{j>=i} g_j * prod_{k<=j, k!=i} x_k. Before the first zero
// of a slice that is suffix_sum(g * y)_i / x_i. At the first zero z the products skip x_z,
// which is cumprod of x with x_z replaced by 1: dx_z = suffix_sum(g * cumprod(x'))_z.
// After z every product contains x_z, so the gradient is 0. Built from differentiable ops.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  const Tensor is_zero = x == 0;
  if (!is_zero.any().item<bool>()) return cumsum_impl(g * y, d, std::nullopt, true) / x;
  const Tensor zeros_so_far = is_zero.cumsum(d);
  const Tensor before_zero = zeros_so_far == 0;
  const Tensor first_zero = is_zero.logical_and(zeros_so_far == 1);
  const Tensor before = cumsum_impl(g * y, d, std::nullopt, true) / where(before_zero, x, 1.0);
  const Tensor skipping_zero = where(first_zero, 1.0, x).cumprod(d);
  const Tensor at_zero = cumsum_impl(g * skipping_zero, d, std::nullopt, true);
  return where(before_zero, before, where(first_zero, at_zero, 0.0));
}

Tensor cumprod_impl(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  EMBER_CHECK(x.defined(), "cumprod", "called on an undefined tensor");
  const int64_t d = core::wrap_dim(dim, x.dim(), "cumprod");
  Tensor out = scan_values(ScanOp::Prod, x, d, scan_dtype(x, dtype), false, "cumprod");
  if (autograd::should_record({x}) && out.is_floating_point()) {
    const ScalarType in_dtype = x.scalar_type(), out_dtype = out.scalar_type();
    SavedTensor sx(x), so(out, true);
    autograd::record("CumprodBackward", {x}, {out},
                     [=](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {cumprod_backward(g[0], sx.get().to(out_dtype), so.get(), d).to(in_dtype)};
                     });
  }
  return out;
}

}  // namespace

Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const { return cumsum_impl(*this, dim, dtype, false); }
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const { return cumprod_impl(*this, dim, dtype); }

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) { return cumsum_impl(x, dim, dtype, false); }
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) { return cumprod_impl(x, dim, dtype); }

}  // namespace ember
