// The SwiGLU op behind nn::functional::swiglu: one pass of the kernel in src/cpu/swiglu.h for
// the forward and one for both input gradients. The composite silu(a) * b in
// tests/nn/test_fused_ops.cpp is the reference.
#include "ops/swiglu.h"

#include "autograd/function.h"
#include "core/record_op.h"
#include "core/tensor_impl.h"
#include "cpu/swiglu.h"
#include "ember/autograd.h"

namespace ember::ops {

Tensor swiglu(const Tensor& a, const Tensor& b) {
  constexpr const char* kOp = "swiglu";
  EMBER_CHECK(a.defined() && b.defined(), kOp, "called with an undefined tensor");
  EMBER_RECORD_OP(kOp, a, b);
  EMBER_CHECK(a.sizes() == b.sizes(), kOp, "a of shape ", a.sizes(), " and b of shape ", b.sizes(),
              " must have the same shape");
  EMBER_CHECK(a.is_floating_point() && b.is_floating_point(), kOp, "expected floating-point inputs, got ",
              dtype_name(a.scalar_type()), " and ", dtype_name(b.scalar_type()));
  const ScalarType dtype = promote_types(a.scalar_type(), b.scalar_type());
  const Tensor x = a.detach().to(dtype).contiguous(), y = b.detach().to(dtype).contiguous();
  Tensor out = core::make_tensor(a.sizes(), dtype);
  core::launch(kOp, [&] {
    return [dtype, xp = x.data_ptr(), yp = y.data_ptr(), o = out.data_ptr(), n = out.numel()] {
      cpu::swiglu_forward(dtype, xp, yp, o, n);
    };
  });
  ember_trace_op_.result(out);
  if (!autograd::should_record({a, b})) return out;
  const autograd::SavedTensor saved_a(x), saved_b(y);
  const ScalarType a_dtype = a.scalar_type(), b_dtype = b.scalar_type();
  autograd::record(
      "SwigluBackward", {a, b}, {out},
      [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
        EMBER_CHECK(!is_grad_enabled(), kOp, "double backward (create_graph=true) is not supported");
        const Tensor g = grads[0].to(dtype).contiguous(), va = saved_a.get(), vb = saved_b.get();
        Tensor grad_a = needs[0] ? core::make_tensor(va.sizes(), dtype) : Tensor();
        Tensor grad_b = needs[1] ? core::make_tensor(va.sizes(), dtype) : Tensor();
        core::launch("swiglu_backward", [&] {
          return [dtype, gp = g.data_ptr(), ap = va.data_ptr(), bp = vb.data_ptr(),
                  ga = grad_a.defined() ? grad_a.data_ptr() : nullptr, gb = grad_b.defined() ? grad_b.data_ptr() : nullptr,
                  n = g.numel()] { cpu::swiglu_backward(dtype, gp, ap, bp, ga, gb, n); };
        });
        return {grad_a.defined() ? grad_a.to(a_dtype) : grad_a, grad_b.defined() ? grad_b.to(b_dtype) : grad_b};
      });
  return out;
}

}  // namespace ember::ops
