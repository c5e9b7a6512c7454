// max/min along a dim with their indices, and argmax/argmin (kernel: cpu/arg_reduce.h).
#include <cmath>

#include "cpu/arg_reduce.h"
#include "ops/reduce_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;

// Extreme values (when `want_values`) and their int64 indices along `dim`, or over the
// flattened tensor when there is no dim.
std::tuple<Tensor, Tensor> arg_extreme(bool is_max, const Tensor& x, std::optional<int64_t> dim, bool keepdim,
                                       bool want_values, const char* name) {
  EMBER_CHECK(x.defined(), name, "called on an undefined tensor");
  EMBER_RECORD_OP(name, x);
  if (dim) {
    const int64_t d = core::wrap_dim(*dim, x.dim(), name);
    EMBER_CHECK(x.dim() == 0 || x.size(d) > 0, name, "expected reduction dim ", d,
                " to have non-zero size, but the input has shape ", x.sizes());
  } else {
    EMBER_CHECK(x.numel() > 0, name, "expected a reduction dim to be given for an input with no elements (shape ",
                x.sizes(), ")");
  }
  const ops::ReduceLayout L = dim ? ops::reduce_layout(x.detach(), *dim, keepdim, name)
                                  : ops::reduce_layout(x.detach(), {}, keepdim, name);
  Tensor values = want_values ? core::make_tensor(L.out_sizes, x.scalar_type()) : Tensor();
  Tensor indices = core::make_tensor(L.out_sizes, kInt64);
  core::launch(name, [&] {
    return [is_max, dtype = x.scalar_type(), in = L.input.data_ptr(), v = values.defined() ? values.data_ptr() : nullptr,
            i = indices.data_ptr<int64_t>(), outer = L.outer, R = L.R, inner = L.inner] {
      cpu::arg_reduce(is_max, dtype, in, v, i, outer, R, inner);
    };
  });
  return {values, indices};
}

// Gradient of picking one element per slice along `dim`: each gradient value goes to the
// position its index names, zeros elsewhere.
Tensor route_to_indices(const Tensor& grad, const Tensor& indices, int64_t dim, bool keepdim,
                        const std::vector<int64_t>& sizes) {
  if (sizes.empty()) return grad;
  Tensor g = keepdim ? grad : grad.unsqueeze(dim);
  Tensor index = keepdim ? indices : indices.unsqueeze(dim);
  std::vector<int64_t> position_shape(sizes.size(), 1);
  position_shape[dim] = sizes[dim];
  Tensor positions = arange(sizes[dim], kInt64).view(position_shape);
  return where(positions == index, g, 0.0);
}

std::tuple<Tensor, Tensor> extreme_along(bool is_max, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = is_max ? "max" : "min";
  auto [values, indices] = arg_extreme(is_max, x, dim, keepdim, true, name);
  if (autograd::should_record({x})) {
    const int64_t d = core::wrap_dim(dim, x.dim(), name);
    std::vector<int64_t> sizes = x.sizes();
    SavedTensor saved_indices(indices, true);
    autograd::record(is_max ? "MaxBackward" : "MinBackward", {x}, {values},
                     [=](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {route_to_indices(g[0], saved_indices.get(), d, keepdim, sizes)};
                     });
  }
  return {values, indices};
}

Tensor arg_index(bool is_max, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return std::get<1>(arg_extreme(is_max, x, dim, keepdim, false, is_max ? "argmax" : "argmin"));
}

}  // namespace

std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return extreme_along(true, *this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return extreme_along(false, *this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return arg_index(true, *this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return arg_index(false, *this, dim, keepdim); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) { return extreme_along(true, x, dim, keepdim); }
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) { return extreme_along(false, x, dim, keepdim); }
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_index(true, x, dim, keepdim); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_index(false, x, dim, keepdim); }

}  // namespace ember
