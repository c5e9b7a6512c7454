// The rotary embedding op behind nn::functional::rotary_embedding: the kernel in
// src/cpu/rotary_embedding.h. The backward is the rotation by the opposite angle, recorded
// through the same function, so gradients of any order work.
#include "ops/rotary_embedding.h"

#include "autograd/function.h"
#include "core/record_op.h"
#include "core/tensor_impl.h"
#include "cpu/rotary_embedding.h"
#include "ember/autograd.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

constexpr const char* kOp = "rotary_embedding";

// cos, sin: contiguous [T, hd / 2] in x's compute type (float64 for float64, else float32).
Tensor rotate(const Tensor& x, const autograd::SavedTensor& cos, const autograd::SavedTensor& sin, bool inverse) {
  const ScalarType dtype = x.scalar_type();
  // The kernel reads any leading and position strides but needs contiguous pairs.
  const Tensor data = x.stride(-1) == 1 ? x.detach() : x.detach().contiguous();
  // Laid out as x where x is a permutation of a contiguous layout (the transposed view of a
  // [B, T, H, hd] projection): the model's transposes back then stay views, here and in the
  // gradients. A layout with gaps gives a contiguous result.
  Tensor out = is_dense_permutation(data) ? empty_in_layout_of(data, data.sizes(), dtype)
                                          : core::make_tensor(x.sizes(), dtype);
  const bool out_like_x = !out.is_contiguous();
  core::launch("rotary_embedding", [&] {
    return [dtype, in = data.data_ptr(), sizes = data.sizes().vec(), strides = data.strides().vec(), c = cos.get().data_ptr(),
            s = sin.get().data_ptr(), o = out.data_ptr(), inverse, out_like_x] {
      cpu::RotaryLayout layout;
      layout.lead_sizes = sizes.data();
      layout.lead_strides = strides.data();
      layout.lead_dims = static_cast<int64_t>(sizes.size()) - 2;
      layout.positions = sizes[sizes.size() - 2];
      layout.position_stride = strides[strides.size() - 2];
      layout.half = sizes.back() / 2;
      layout.out_like_x = out_like_x;
      cpu::rotary_embedding(dtype, in, layout, c, s, o, inverse);
    };
  });
  autograd::record(inverse ? "RotaryEmbeddingInverseBackward" : "RotaryEmbeddingBackward", {x}, {out},
                   [cos, sin, inverse, dtype](std::vector<Tensor>& grads, const std::vector<bool>&) {
                     return std::vector<Tensor>{rotate(grads[0].to(dtype), cos, sin, !inverse)};
                   });
  return out;
}

}  // namespace

Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  EMBER_CHECK(x.defined() && cos.defined() && sin.defined(), kOp, "called with an undefined tensor");
  EMBER_RECORD_OP(kOp, x, cos, sin);
  EMBER_CHECK(x.is_floating_point() && cos.is_floating_point() && sin.is_floating_point(), kOp,
              "expected floating-point x, cos and sin, got ", dtype_name(x.scalar_type()), ", ",
              dtype_name(cos.scalar_type()), " and ", dtype_name(sin.scalar_type()));
  EMBER_CHECK(x.dim() >= 2 && x.size(-1) % 2 == 0, kOp,
              "x must be [..., T, head_dim] with an even head_dim, got shape ", x.sizes());
  const std::vector<int64_t> expected = {x.size(-2), x.size(-1) / 2};
  EMBER_CHECK(cos.sizes() == expected && sin.sizes() == expected, kOp,
              "cos and sin must have shape [T, head_dim / 2] = ", expected, " for x of shape ", x.sizes(), ", got ",
              cos.sizes(), " and ", sin.sizes());
  EMBER_CHECK(!autograd::should_record({cos, sin}), kOp,
              "cos and sin must not require grad (they are position tables; no gradient is computed for them)");
  const ScalarType compute = x.scalar_type() == kFloat64 ? kFloat64 : kFloat32;
  const autograd::SavedTensor saved_cos(cos.detach().to(compute).contiguous());
  const autograd::SavedTensor saved_sin(sin.detach().to(compute).contiguous());
  return ember_trace_op_.result(rotate(x, saved_cos, saved_sin, /*inverse=*/false));
}

}  // namespace ember::ops
