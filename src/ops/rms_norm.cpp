// Note [Fused RMSNorm]
// One row-wise kernel (src/cpu/rms_norm.h): y = x * rstd * weight with rstd = 1 / sqrt(mean(x^2)
// + eps) computed in float32 for float16/bfloat16/float32 (float64 for float64), rounded to the
// input dtype once. The forward saves rstd per row; the backward reads g, x, weight and rstd
// once per row for dx, and sums dweight over fixed row chunks in chunk order, so its bits do
// not depend on the thread count. The composite x * rsqrt(mean(x^2) + eps) * weight in
// tests/nn/test_fused_ops.cpp is the reference.
#include "ops/rms_norm.h"

#include "autograd/function.h"
#include "core/record_op.h"
#include "core/tensor_impl.h"
#include "cpu/rms_norm.h"
#include "ember/autograd.h"

namespace ember::ops {

Tensor rms_norm(const Tensor& input, const Tensor& weight, int64_t width, double eps) {
  EMBER_RECORD_OP("rms_norm", input, weight);
  const ScalarType dtype = input.scalar_type();
  const ScalarType acc = dtype == kFloat64 ? kFloat64 : kFloat32;
  const int64_t rows = width > 0 ? input.numel() / width : 0;
  const Tensor x = input.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor out = core::make_tensor(input.sizes(), dtype);
  Tensor rstd = core::make_tensor({rows}, acc);
  core::launch("rms_norm", [&] {
    return [dtype, xp = x.data_ptr(), wp = w.defined() ? w.data_ptr() : nullptr, o = out.data_ptr(),
            r = rstd.data_ptr(), rows, width, eps] { cpu::rms_norm_forward(dtype, xp, wp, o, r, rows, width, eps); };
  });
  ember_trace_op_.attr("normalized_shape", std::vector<int64_t>{width}).attr("eps", eps).result(out);
  std::vector<Tensor> inputs = {input};
  if (weight.defined()) inputs.push_back(weight);
  if (!autograd::should_record(inputs)) return out;
  autograd::SavedTensor saved_x(x), saved_weight(w), saved_rstd(rstd, true);
  const std::vector<int64_t> sizes = input.sizes();
  autograd::record("RmsNormBackward", inputs, {out},
                   [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
                     EMBER_CHECK(!is_grad_enabled(), "rms_norm",
                                 "double backward (create_graph=true) is not supported");
                     const Tensor g = grads[0].to(dtype).contiguous();
                     const Tensor saved_w = saved_weight.get();
                     Tensor grad_x = needs[0] ? core::make_tensor(sizes, dtype) : Tensor();
                     Tensor grad_w = needs.size() > 1 && needs[1] ? core::make_tensor({width}, kFloat64) : Tensor();
                     core::launch("rms_norm_backward", [&] {
                       return [dtype, gp = g.data_ptr(), xp = saved_x.get().data_ptr(),
                               wp = saved_w.defined() ? saved_w.data_ptr() : nullptr, r = saved_rstd.get().data_ptr(),
                               gx = grad_x.defined() ? grad_x.data_ptr() : nullptr,
                               gw = grad_w.defined() ? grad_w.data_ptr<double>() : nullptr, rows, width] {
                         cpu::rms_norm_backward(dtype, gp, xp, wp, r, gx, gw, rows, width);
                       };
                     });
                     if (!saved_w.defined()) return {grad_x};
                     return {grad_x, grad_w.defined() ? grad_w.to(dtype).view(saved_w.sizes()) : Tensor()};
                   });
  return out;
}

}  // namespace ember::ops
