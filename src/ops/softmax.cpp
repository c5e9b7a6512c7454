// softmax and log_softmax along one dim: the kernels in cpu/softmax, backward from ops.
#include "cpu/softmax.h"
#include "ops/reduce_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;

// y: the forward output, g: its gradient, both shaped like x.
//   softmax:     dx = y * (g - sum(g * y))
//   log_softmax: dx = g - exp(y) * sum(g)
Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, bool log) {
  if (log) return g - y.exp() * g.sum(dim, true);
  return y * (g - (g * y).sum(dim, true));
}

Tensor softmax_impl(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  EMBER_CHECK(x.defined(), name, "called on an undefined tensor");
  EMBER_RECORD_OP(name, x);
  const Tensor input = dtype ? x.to(*dtype) : x;
  EMBER_CHECK(input.is_floating_point(), name, "not implemented for dtype ", dtype_name(input.scalar_type()),
              "; pass a floating dtype");
  const int64_t d = core::wrap_dim(dim, input.dim(), name);
  const ops::ReduceLayout L = ops::reduce_layout(input.detach(), d, true, name);
  Tensor out = core::make_tensor(input.sizes(), input.scalar_type());
  core::launch(name, [&] {
    return [dtype = input.scalar_type(), in = L.input.data_ptr(), o = out.data_ptr(), outer = L.outer, R = L.R,
            inner = L.inner, log] { cpu::softmax(dtype, in, o, outer, R, inner, log); };
  });
  if (autograd::should_record({input})) {
    SavedTensor so(out, true);
    autograd::record(log ? "LogSoftmaxBackward" : "SoftmaxBackward", {input}, {out},
                     [so, d, log](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {softmax_backward(g[0], so.get(), d, log)};
                     });
  }
  return out;
}

}  // namespace

Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return softmax_impl(*this, dim, dtype, false); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return softmax_impl(*this, dim, dtype, true);
}

Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) { return softmax_impl(x, dim, dtype, false); }
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl(x, dim, dtype, true);
}

}  // namespace ember
