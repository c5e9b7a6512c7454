// var, std, norm and logsumexp: reductions composed of ordinary ops.
//
// They view the reduction layout as [outer, R, inner] and reduce its middle dim with
// ordinary ops (float64 for var/std/norm), so they inherit sum's fixed chunking: results are
// bitwise identical for any thread count.
#include <cmath>

#include "ops/reduce_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;

// ---- var, std ------------------------------------------------------------------------------

ops::ReduceLayout floating_layout(const Tensor& x, IntArrayRef dims, bool keepdim, const char* name) {
  EMBER_CHECK(x.defined(), name, "called on an undefined tensor");
  EMBER_CHECK(x.is_floating_point(), name, "only supports floating point dtypes, got ", dtype_name(x.scalar_type()));
  return ops::reduce_layout(x.detach(), dims, keepdim, name);
}

// The layout's input as an [outer, R, inner] tensor of `dtype`.
Tensor as_middle_reduction(const ops::ReduceLayout& L, ScalarType dtype) {
  return L.input.to(dtype).view({L.outer, L.R, L.inner});
}

// PyTorch's divisor: N - correction, clamped at 0 (so N <= correction gives nan or inf).
double variance_divisor(const ops::ReduceLayout& L, bool unbiased) {
  return static_cast<double>(std::max<int64_t>(0, L.R - (unbiased ? 1 : 0)));
}

// Two-pass variance in float64: the mean, then the mean squared deviation from it.
Tensor variance_float64(const ops::ReduceLayout& L, bool unbiased) {
  NoGradGuard guard;
  Tensor x = as_middle_reduction(L, kFloat64);
  Tensor deviation = x - x.mean(1, true);
  return deviation.mul_(deviation).sum(1).div_(variance_divisor(L, unbiased)).reshape(L.out_sizes);
}

// d var / dx = 2 (x - mean) / divisor.
Tensor var_backward(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& dims, const ops::ReduceLayout& L,
                    double divisor) {
  return ops::expand_reduced_grad(grad, L, x.sizes()) * (x - x.mean(dims, true)) * (2.0 / divisor);
}

Tensor var_impl(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  EMBER_RECORD_OP("var", x);
  ops::ReduceLayout L = floating_layout(x, dims, keepdim, "var");
  Tensor out = variance_float64(L, unbiased).to(x.scalar_type());
  if (autograd::should_record({x})) {
    const double divisor = variance_divisor(L, unbiased);
    L.input = Tensor();
    SavedTensor sx(x);
    std::vector<int64_t> d = dims.vec();
    autograd::record("VarBackward", {x}, {out},
                     [=](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {var_backward(g[0], sx.get(), d, L, divisor)};
                     });
  }
  return out;
}

Tensor std_impl(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  EMBER_RECORD_OP("std", x);
  ops::ReduceLayout L = floating_layout(x, dims, keepdim, "std");
  Tensor out = variance_float64(L, unbiased).sqrt().to(x.scalar_type());
  if (autograd::should_record({x})) {
    const double divisor = variance_divisor(L, unbiased);
    L.input = Tensor();
    SavedTensor sx(x), so(out, true);
    std::vector<int64_t> d = dims.vec();
    autograd::record("StdBackward", {x}, {out},
                     [=](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       // d std = d var / (2 std); a zero std gives a zero gradient, as in PyTorch.
                       Tensor std_out = so.get();
                       Tensor grad_var = where(std_out == 0, 0.0, g[0] / (std_out * 2));
                       return {var_backward(grad_var, sx.get(), d, L, divisor)};
                     });
  }
  return out;
}

// ---- norm ------------------------------------------------------------------------------

Tensor norm_float64(const ops::ReduceLayout& L, double p) {
  NoGradGuard guard;
  Tensor a = as_middle_reduction(L, kFloat64).abs();
  Tensor result;
  if (p == INFINITY) result = a.amax(1);
  else if (p == -INFINITY) result = a.amin(1);
  else if (p == 0) result = (a != 0).sum(1, false, kFloat64);
  else if (p == 1) result = a.sum(1);
  else if (p == 2) result = a.mul(a).sum(1).sqrt();
  else result = a.pow(p).sum(1).pow(1 / p);
  return result.reshape(L.out_sizes);
}

// PyTorch's vector-norm gradient; grad and norm are already expanded to x's shape.
Tensor norm_backward(const Tensor& grad, const Tensor& x, const Tensor& norm, const std::vector<int64_t>& dims,
                     double p) {
  if (p == 0) return zeros_like(x);
  if (p == 1) return x.sign() * grad;
  if (p == 2) return x * where(norm == 0, 0.0, grad / norm);
  if (std::isinf(p)) {  // shared evenly between the elements that attain the extreme
    Tensor hit = (x.abs() == norm).to(x.scalar_type());
    return x.sign() * hit * grad / hit.sum(dims, true);
  }
  if (p < 1) {
    Tensor scaled = (x.sign() * x.abs().pow(p - 1)).masked_fill(x == 0, 0);
    return scaled * grad * norm.pow(1 - p);
  }
  Tensor scaled = p < 2 ? x.sign() * x.abs().pow(p - 1) : x * x.abs().pow(p - 2);
  return scaled * where(norm == 0, 0.0, grad / norm.pow(p - 1));
}

Tensor norm_impl(const Tensor& x, const Scalar& p_scalar, IntArrayRef dims, bool keepdim) {
  EMBER_RECORD_OP("norm", x);
  ops::ReduceLayout L = floating_layout(x, dims, keepdim, "norm");
  const double p = p_scalar.toDouble();
  EMBER_CHECK(!std::isnan(p), "norm", "the order p must not be nan");
  EMBER_CHECK(!std::isinf(p) || L.R > 0 || L.outer * L.inner == 0, "norm", "cannot compute the ", p,
              " norm over an empty dimension (input shape ", x.sizes(), "): the operation has no identity");
  Tensor out = norm_float64(L, p).to(x.scalar_type());
  if (autograd::should_record({x})) {
    L.input = Tensor();
    SavedTensor sx(x), so(out, true);
    std::vector<int64_t> d = dims.vec();
    autograd::record("NormBackward", {x}, {out},
                     [=](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       Tensor xv = sx.get();
                       return {norm_backward(ops::expand_reduced_grad(g[0], L, xv.sizes()), xv,
                                             ops::expand_reduced_grad(so.get(), L, xv.sizes()), d, p)};
                     });
  }
  return out;
}

// ---- logsumexp -----------------------------------------------------------------------------

// log(sum(exp(x - m))) + m with m the slice max, replaced by 0 where it is infinite so an
// all -inf slice gives -inf (and a +inf gives +inf) instead of nan.
Tensor logsumexp_impl(const Tensor& x, IntArrayRef dims, bool keepdim) {
  EMBER_CHECK(x.defined(), "logsumexp", "called on an undefined tensor");
  EMBER_RECORD_OP("logsumexp", x);
  const ScalarType out_dtype = x.is_floating_point() ? x.scalar_type() : kFloat32;
  const ScalarType work_dtype = out_dtype == kFloat64 ? kFloat64 : kFloat32;
  ops::ReduceLayout L = ops::reduce_layout(x.detach(), dims, keepdim, "logsumexp");
  Tensor out;
  {
    NoGradGuard guard;
    Tensor v = as_middle_reduction(L, work_dtype);
    Tensor shift = L.R > 0 ? v.amax(1, true) : zeros({L.outer, 1, L.inner}, work_dtype);
    shift = shift.masked_fill(shift.isinf(), 0);
    out = (v - shift).exp().sum(1, true).log().add(shift).reshape(L.out_sizes).to(out_dtype);
  }
  if (autograd::should_record({x})) {
    L.input = Tensor();
    SavedTensor sx(x), so(out, true);
    autograd::record("LogsumexpBackward", {x}, {out},
                     [=](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       Tensor xv = sx.get();
                       Tensor weights = (xv - ops::expand_reduced_grad(so.get(), L, xv.sizes())).exp();
                       return {ops::expand_reduced_grad(g[0], L, xv.sizes()) * weights};
                     });
  }
  return out;
}

}  // namespace

Tensor Tensor::var(IntArrayRef dim, bool unbiased, bool keepdim) const { return var_impl(*this, dim, unbiased, keepdim); }
Tensor Tensor::std(IntArrayRef dim, bool unbiased, bool keepdim) const { return std_impl(*this, dim, unbiased, keepdim); }
Tensor Tensor::norm(const Scalar& p) const { return norm_impl(*this, p, {}, false); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const { return norm_impl(*this, p, dim, keepdim); }
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const { return logsumexp_impl(*this, dim, keepdim); }
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim) { return logsumexp_impl(x, dim, keepdim); }

Tensor var(const Tensor& x, bool unbiased) { return var_impl(x, {}, unbiased, false); }
Tensor var(const Tensor& x, int dim) { return var_impl(x, IntArrayRef{dim}, true, false); }
Tensor var(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) { return var_impl(x, dim, unbiased, keepdim); }
Tensor std(const Tensor& x, bool unbiased) { return std_impl(x, {}, unbiased, false); }
Tensor std(const Tensor& x, int dim) { return std_impl(x, IntArrayRef{dim}, true, false); }
Tensor std(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) { return std_impl(x, dim, unbiased, keepdim); }
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, bool unbiased) { return var_mean(x, {}, unbiased, false); }
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, int dim) { return var_mean(x, IntArrayRef{dim}); }
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) {
  return {var_impl(x, dim, unbiased, keepdim), x.mean(dim, keepdim)};
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, bool unbiased) { return std_mean(x, {}, unbiased, false); }
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, int dim) { return std_mean(x, IntArrayRef{dim}); }
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntArrayRef dim, bool unbiased, bool keepdim) {
  return {std_impl(x, dim, unbiased, keepdim), x.mean(dim, keepdim)};
}

}  // namespace ember
