// matmul, mm, bmm, linear, addmm, outer: shape logic here, the product in cpu::gemm.
#include <optional>
#include <utility>

#include "autograd/low_precision_copy.h"
#include "cpu/gemm.h"
#include "ember/detail/autocast_linear.h"
#include "ember/detail/linear_group.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

// A [rows, cols] matrix (the last two dims of a tensor) as the BLAS sees it: row-major with
// leading dimension ld, possibly transposed. Copies only if neither layout fits.
struct MatrixOperand {
  Tensor storage_owner;
  bool trans = false;
  int64_t ld = 1;
};

// The last two dims of t read in place, row-major or transposed, with their leading
// dimension; nullopt when neither layout fits (the steps inside a row are not 1).
std::optional<std::pair<bool, int64_t>> in_place_layout(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t rows = t.size(nd - 2), cols = t.size(nd - 1);
  const int64_t rs = t.stride(nd - 2), cs = t.stride(nd - 1);
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1))
    return std::pair{false, std::max<int64_t>(rs, std::max<int64_t>(cols, 1))};
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1))
    return std::pair{true, std::max<int64_t>(cs, std::max<int64_t>(rows, 1))};
  return std::nullopt;
}

MatrixOperand as_matrix(const Tensor& t) {
  if (const auto layout = in_place_layout(t)) return {t, layout->first, layout->second};
  return {t.contiguous(), false, std::max<int64_t>(t.size(-1), 1)};
}

void check_matmul_dtype(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.scalar_type() == b.scalar_type(), op, "expected both operands to have the same dtype, got ",
              dtype_name(a.scalar_type()), " and ", dtype_name(b.scalar_type()));
  ScalarType t = a.scalar_type();
  EMBER_CHECK(t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16, op, "not implemented for dtype ",
              dtype_name(t), " (use a floating point dtype)");
}

// out[batch, m, n] = a[batch, m, k] @ b[batch, k, n]; a/b 3-D with batch size 1 broadcast.
void batched_product(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  // Every batch entry shares one layout (as_matrix's), at any distance from the next (a
  // narrowed KV cache's keys), else the operand is copied.
  auto prepare = [](const Tensor& t, int64_t& stride) -> MatrixOperand {
    if (t.size(0) == 1 || t.stride(0) == 0) {
      stride = 0;
      return as_matrix(t.select(0, 0));
    }
    if (const auto layout = in_place_layout(t)) {
      stride = t.stride(0);
      return {t, layout->first, layout->second};
    }
    stride = t.size(1) * t.size(2);
    return {t.contiguous(), false, std::max<int64_t>(t.size(2), 1)};
  };
  int64_t stride_a = 0, stride_b = 0;
  MatrixOperand A = prepare(a, stride_a), B = prepare(b, stride_b);
  core::launch("bmm", [&] {
    return [dtype = out.scalar_type(), ta = A.trans, tb = B.trans, batch, m, n, k, a = A.storage_owner.data_ptr(),
            lda = A.ld, stride_a, b = B.storage_owner.data_ptr(), ldb = B.ld, stride_b, c = out.data_ptr()] {
      cpu::gemm_batched(dtype, ta, tb, batch, m, n, k, 1.0, a, lda, stride_a, b, ldb, stride_b, 0.0, c,
                        std::max<int64_t>(n, 1), m * n);
    };
  });
}

Tensor mm_forward(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor out = core::make_tensor({m, n}, a.scalar_type());
  if (m == 0 || n == 0) return out;
  MatrixOperand A = as_matrix(a), B = as_matrix(b);
  core::launch("mm", [&] {
    return [dtype = a.scalar_type(), ta = A.trans, tb = B.trans, m, n, k, pa = A.storage_owner.data_ptr(), lda = A.ld,
            pb = B.storage_owner.data_ptr(), ldb = B.ld, c = out.data_ptr()] {
      cpu::gemm(dtype, ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, c, std::max<int64_t>(n, 1));
    };
  });
  return out;
}

void record_matmul(const char* name, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!autograd::should_record({a, b})) return;
  autograd::SavedTensor sa(a), sb(b);
  autograd::record(name, {a, b}, {out}, [sa, sb](std::vector<Tensor>& g, const std::vector<bool>& needs) {
    std::vector<Tensor> r(2);
    Tensor A = sa.get(), B = sb.get();
    // A matrix stored transposed (linear's weight.t()) gets its gradient in its own layout,
    // (gᵀ A)ᵀ rather than Aᵀ g, as libtorch's mm_mat2_backward does: the weight's gradient is
    // then contiguous and AccumulateGrad takes it without a copy.
    const auto stored_transposed = [](const Tensor& t) {
      return t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
    };
    if (needs[0])
      r[0] = stored_transposed(A) ? B.matmul(g[0].mT()).mT() : autograd::sum_to(g[0].matmul(B.mT()), A.sizes());
    if (needs[1])
      r[1] = stored_transposed(B) ? g[0].mT().matmul(A).mT() : autograd::sum_to(A.mT().matmul(g[0]), B.sizes());
    return r;
  });
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  EMBER_RECORD_OP("mm", a, b);
  EMBER_CHECK(a.dim() == 2 && b.dim() == 2, "mm", "expected 2-D tensors, got ", a.dim(), "-D and ", b.dim(), "-D");
  check_matmul_dtype(a, b, "mm");
  EMBER_CHECK(a.size(1) == b.size(0), "mm", "shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied (",
              a.size(1), " != ", b.size(0), ")");
  Tensor out = mm_forward(a, b);
  record_matmul("MmBackward", a, b, out);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  EMBER_RECORD_OP("bmm", a, b);
  EMBER_CHECK(a.dim() == 3 && b.dim() == 3, "bmm", "expected 3-D tensors, got ", a.dim(), "-D and ", b.dim(), "-D");
  check_matmul_dtype(a, b, "bmm");
  EMBER_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), "bmm", "shapes ", a.sizes(), " and ", b.sizes(),
              " cannot be multiplied");
  Tensor out = core::make_tensor({a.size(0), a.size(1), b.size(2)}, a.scalar_type());
  if (out.numel() > 0) batched_product(a, b, out);
  record_matmul("BmmBackward", a, b, out);
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.defined() && b.defined(), "matmul", "called with an undefined tensor");
  EMBER_RECORD_OP("matmul", a, b);
  EMBER_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul", "both arguments need at least 1 dimension, got ", a.dim(),
              "-D and ", b.dim(), "-D");
  check_matmul_dtype(a, b, "matmul");
  const int64_t k_a = a.size(-1), k_b = b.dim() == 1 ? b.size(0) : b.size(-2);
  EMBER_CHECK(k_a == k_b, "matmul", "shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied (", k_a, " != ",
              k_b, ")");
  if (a.dim() <= 2 && b.dim() <= 2) {
    Tensor A = a.dim() == 1 ? a.unsqueeze(0) : a;
    Tensor B = b.dim() == 1 ? b.unsqueeze(1) : b;
    Tensor out = mm(A, B);
    if (a.dim() == 1) out = out.squeeze(0);
    if (b.dim() == 1) out = out.squeeze(-1);
    return out;
  }
  // [..., m, k] @ [k, n]: fold the batch into rows, one GEMM. The row count is spelled out
  // because reshape cannot infer -1 when k == 0.
  if (b.dim() == 2 && a.dim() > 2) {
    std::vector<int64_t> out_shape(a.sizes().begin(), a.sizes().end() - 1);
    int64_t rows = 1;
    for (int64_t s : out_shape) rows *= s;
    out_shape.push_back(b.size(1));
    return mm(a.reshape({rows, k_a}), b).view(out_shape);
  }
  Tensor A = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor B = b.dim() == 1 ? b.unsqueeze(1) : b;
  std::vector<int64_t> batch_a(A.sizes().begin(), A.sizes().end() - 2), batch_b(B.sizes().begin(), B.sizes().end() - 2);
  std::vector<int64_t> batch = ops::broadcast_shapes(batch_a, batch_b, "matmul");
  const int64_t m = A.size(-2), n = B.size(-1);
  int64_t batch_numel = 1;
  for (int64_t s : batch) batch_numel *= s;
  std::vector<int64_t> a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {m, k_a});
  b_shape.insert(b_shape.end(), {k_a, n});
  Tensor A3 = A.expand(a_shape).reshape({batch_numel, m, k_a});
  Tensor B3 = B.expand(b_shape).reshape({batch_numel, k_a, n});
  std::vector<int64_t> out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = bmm(A3, B3).view(out_shape);
  if (a.dim() == 1) out = out.squeeze(-2);
  if (b.dim() == 1) out = out.squeeze(-1);
  return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return ember::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return ember::bmm(*this, other); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_RECORD_OP("linear", x, weight, bias);
  EMBER_CHECK(weight.dim() == 2, "linear", "weight must be 2-D [out_features, in_features], got shape ", weight.sizes());
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear", "input shape ", x.sizes(),
              " does not match weight shape ", weight.sizes(), " (in_features ", weight.size(1), ")");
  Tensor out = matmul(x, weight.t());
  if (bias.defined()) {
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear", "bias shape ", bias.sizes(),
                " does not match out_features ", weight.size(0));
    out = out + bias;
  }
  return ember_trace_op_.result(out);
}

// Note [Autocast linear]
// Mixed-precision training keeps float32 weights and computes in bf16: forward runs
// linear(x, W.to(bf16)). Through the composite, W's gradient is gᵀx rounded to bf16 and then
// cast back to float32 (ToCopyBackward): a rounding of every weight gradient and two passes
// over it each step. autocast_linear records one node for x and W whose weight gradient is the
// same product with float32 sums written as float32 (cpu::gemm_float32_out), unrounded; the
// output and x's gradient (g · W.to(bf16)) are the composite's, bit for bit. With create_graph
// the weight gradient is the composite's differentiable product instead. autocast_linear_group
// computes several such layers of one input as a group of products sharing it (Note [Grouped
// products] in src/cpu/gemm.h) and records each layer's node as autocast_linear does.
namespace {

// Whether autocast_linear records its own node for x and weight (else it is the composite).
bool autocast_records(const Tensor& x, const Tensor& weight) {
  const ScalarType dtype = x.scalar_type();
  return weight.defined() && (dtype == kBFloat16 || dtype == kFloat16) && weight.scalar_type() == kFloat32 &&
         weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1) && weight.requires_grad() &&
         autograd::should_record({x, weight}) && !core::any_thread_traces();
}

// out = linear(x, low_weight), low_weight being weight's kept copy in x's dtype: records
// AutocastLinearBackward for x and the float32 weight.
void record_autocast_linear(const Tensor& x, const Tensor& weight, const Tensor& low_weight, const Tensor& out) {
  const bool x_needs_grad = x.requires_grad();
  autograd::SavedTensor saved_x(x), saved_weight(x_needs_grad ? low_weight : Tensor());
  autograd::record("AutocastLinearBackward", {x, weight}, {out},
                   [saved_x, saved_weight](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                     std::vector<Tensor> r(2);
                     const Tensor x = saved_x.get();
                     if (needs[0]) r[0] = g[0].matmul(saved_weight.get());
                     if (!needs[1]) return r;
                     const int64_t in = x.size(-1), out = g[0].size(-1);
                     const Tensor rows = x.reshape({-1, in}), grads = g[0].reshape({-1, out});
                     if (is_grad_enabled()) {  // create_graph: a product autograd can follow
                       r[1] = grads.mT().matmul(rows).to(kFloat32);
                       return r;
                     }
                     const Tensor a = grads.contiguous(), b = rows.contiguous();
                     Tensor dw = core::make_tensor({out, in}, kFloat32);
                     core::launch("autocast_linear", [&] {
                       return [dtype = x.scalar_type(), out, in, k = a.size(0), pa = a.data_ptr(),
                               pb = b.data_ptr(), c = dw.data_ptr<float>()] {
                         cpu::gemm_float32_out(dtype, true, false, out, in, k, 1.0, pa, std::max<int64_t>(out, 1), pb,
                                               std::max<int64_t>(in, 1), 0.0, c, std::max<int64_t>(in, 1));
                       };
                     });
                     r[1] = dw;
                     return r;
                   });
}

}  // namespace

Tensor detail::autocast_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_CHECK(x.defined() && weight.defined(), "autocast_linear", "called with an undefined tensor");
  const ScalarType dtype = x.scalar_type();
  const Tensor low_bias = bias.defined() ? bias.to(dtype) : Tensor();
  if (!autocast_records(x, weight)) return linear(x, weight.to(dtype), low_bias);
  Tensor low_weight, out;
  {
    NoGradGuard no_grad;
    low_weight = autograd::low_precision_copy(weight, dtype);
    out = linear(x, low_weight);
  }
  record_autocast_linear(x, weight, low_weight, out);
  return low_bias.defined() ? out + low_bias : out;
}

std::vector<Tensor> detail::autocast_linear_group(const Tensor& x, const std::vector<Tensor>& weights) {
  EMBER_CHECK(x.defined(), "autocast_linear_group", "called with an undefined input");
  const ScalarType dtype = x.scalar_type();
  bool all_recorded = !weights.empty(), none_recorded = true;
  for (const Tensor& w : weights) {
    EMBER_CHECK(w.defined(), "autocast_linear_group", "called with an undefined weight");
    const bool recorded = autocast_records(x, w);
    all_recorded = all_recorded && recorded;
    none_recorded = none_recorded && !recorded && !autograd::should_record({x, w});
  }
  std::vector<Tensor> out;
  if ((!all_recorded && !none_recorded)) {
    for (const Tensor& w : weights) out.push_back(autocast_linear(x, w));
    return out;
  }
  std::vector<Tensor> low_weights;
  {
    NoGradGuard no_grad;
    for (const Tensor& w : weights)
      low_weights.push_back(all_recorded ? autograd::low_precision_copy(w, dtype) : w.to(dtype));
    out = linear_group(x, low_weights);
  }
  if (all_recorded)
    for (size_t i = 0; i < weights.size(); ++i) record_autocast_linear(x, weights[i], low_weights[i], out[i]);
  return out;
}

std::vector<Tensor> detail::linear_group(const Tensor& x, const std::vector<Tensor>& weights) {
  const auto separate = [&] {
    std::vector<Tensor> out;
    out.reserve(weights.size());
    for (const Tensor& w : weights) out.push_back(linear(x, w));
    return out;
  };
  EMBER_CHECK(x.defined(), "linear_group", "called with an undefined input");
  const ScalarType dtype = x.scalar_type();
  if (weights.size() < 2 || core::any_thread_traces() || (dtype != kBFloat16 && dtype != kFloat16) || x.dim() < 1)
    return separate();
  const int64_t in = x.size(-1);
  if (in == 0) return separate();  // [..., 0] has no row count to infer
  std::vector<Tensor> inputs{x};
  for (const Tensor& w : weights) {
    if (!w.defined() || w.dim() != 2 || w.scalar_type() != dtype || w.size(1) != in || w.stride(1) != 1 ||
        w.stride(0) < in)
      return separate();
    inputs.push_back(w);
  }
  if (autograd::should_record(inputs)) return separate();
  EMBER_RECORD_OP("linear_group", x);
  const Tensor rows = x.reshape({-1, in}).contiguous();
  const int64_t m = rows.size(0);
  std::vector<Tensor> out;
  for (const Tensor& w : weights) out.push_back(core::make_tensor({m, w.size(0)}, dtype));
  core::launch("linear_group", [&] {
    // The pointers are taken here, where a graph capture records them.
    std::vector<cpu::GemmGroupMember> members;
    for (size_t i = 0; i < weights.size(); ++i)
      members.push_back({weights[i].data_ptr(), weights[i].size(0), weights[i].stride(0), out[i].data_ptr(),
                         std::max<int64_t>(weights[i].size(0), 1)});
    return [dtype, m, in, a = rows.data_ptr(), lda = std::max<int64_t>(in, 1), members] {
      cpu::gemm_group_nt(dtype, m, in, a, lda, members);
    };
  });
  std::vector<int64_t> shape = x.sizes();
  for (size_t i = 0; i < out.size(); ++i) {
    shape.back() = weights[i].size(0);
    out[i] = out[i].view(shape);
  }
  return out;
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  EMBER_RECORD_OP("addmm", self, mat1, mat2);
  EMBER_CHECK(self.scalar_type() == mat1.scalar_type(), "addmm", "expected self to have the dtype of mat1 (",
              dtype_name(mat1.scalar_type()), "), got ", dtype_name(self.scalar_type()));
  Tensor product = mm(mat1, mat2);
  EMBER_CHECK(ops::broadcast_shapes(self.sizes(), product.sizes(), "addmm") == product.sizes(), "addmm", "self of shape ",
              self.sizes(), " cannot be broadcast to the product shape ", product.sizes());
  Tensor scaled = alpha.toDouble() == 1 ? product : product * alpha;
  return beta.toDouble() == 0 ? scaled + zeros_like(self) * 0 : scaled + (beta.toDouble() == 1 ? self : self * beta);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "outer", "expected 1-D tensors, got ", a.dim(), "-D and ", b.dim(), "-D");
  return a.unsqueeze(1) * b.unsqueeze(0);
}

}  // namespace ember
