// Binary, unary, comparison and selection ops with their backward formulas.
#include <cmath>

#include "ops/op_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;
using cpu::BinaryOp;
using cpu::CompareOp;
using cpu::PredicateOp;
using cpu::UnaryOp;

using detail::OpDtype;
using detail::OpProgram;
using detail::OpSaves;

const cpu::ElementwiseRow& row_of(BinaryOp op) { return cpu::kBinaryRows[static_cast<int>(op)]; }
const cpu::ElementwiseRow& row_of(UnaryOp op) { return cpu::kUnaryRows[static_cast<int>(op)]; }
const char* binary_name(BinaryOp op) { return row_of(op).name; }
const char* unary_name(UnaryOp op) { return row_of(op).name; }

// Integer remainder by zero has no value (PyTorch raises ZeroDivisionError); the kernel must never see it.
void check_integer_divisor(BinaryOp op, const Tensor& divisor, ScalarType dtype) {
  if ((op != BinaryOp::Remainder && op != BinaryOp::Fmod) || is_floating_point(dtype)) return;
  NoGradGuard guard;
  EMBER_CHECK(!divisor.eq(0).any().item<bool>(), binary_name(op), "integer division by zero (dtype ",
              dtype_name(dtype), ")");
}

// The dtype `op` computes in for inputs promoting to `common` (the op table's dtype rule).
ScalarType compute_dtype(BinaryOp op, ScalarType common) {
  if (row_of(op).dtype == OpDtype::Floating && !is_floating_point(common)) return kFloat32;
  return common;
}

Tensor binary_kernel_call(BinaryOp op, const Tensor& a, const Tensor& b, ScalarType dtype, double alpha) {
  const char* name = binary_name(op);
  auto shape = ops::broadcast_shapes(a.sizes(), b.sizes(), name);
  cpu::InnerLoop loop = EMBER_KERNEL(binary_loop)(op, dtype);
  EMBER_CHECK(loop != nullptr, name, "not implemented for dtype ", dtype_name(dtype));
  Tensor out = core::make_tensor(shape, dtype);
  cpu::ElementwiseParams params;
  params.alpha = alpha;
  ops::run_loop(out, {a.to(dtype), b.to(dtype)}, loop, params);
  return out;
}

// The helpers of the binary rows' gradient formulas (ember/detail/op_table.def).
Tensor scaled(const Tensor& g, double factor) { return factor == 1 ? g : g * factor; }

// maximum (is_max) or minimum's gradient for operand x against the other operand: ties split
// the gradient evenly, as PyTorch does.
Tensor extremum_grad(const Tensor& g, const Tensor& x, const Tensor& other, bool is_max) {
  return where(x == other, g / 2, g).masked_fill(is_max ? x < other : x > other, 0);
}

// Exponent 0 has derivative 0 even at a == 0, where b * a^(b-1) is 0 * inf.
Tensor pow_base_grad(const Tensor& g, const Tensor& a, const Tensor& b) {
  return (g * b * a.pow(b - 1)).masked_fill(b == 0, 0);
}
Tensor pow_exponent_grad(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y) {
  return (g * y * a.log()).masked_fill((a == 0).logical_and(b >= 0), 0);
}

// The gradients of a and b from the op's row: before reduction to the operands' shapes.
std::vector<Tensor> binary_grads(BinaryOp op, const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y,
                                 double alpha, const std::vector<bool>& needs) {
  Tensor grad_a, grad_b;
  switch (op) {
#define EMBER_BINARY(name, program, Kernel, dtype, api, saves, formula_a, formula_b) \
  case BinaryOp::Kernel:                                                             \
    if (needs[0]) grad_a = formula_a;                                                \
    if (needs[1]) grad_b = formula_b;                                                \
    break;
#include "ember/detail/op_table.def"
  }
  return {grad_a, grad_b};
}

const char* const kBinaryBackwardNames[] = {
#define EMBER_BINARY(name, program, Kernel, ...) #Kernel "Backward",
#include "ember/detail/op_table.def"
};

constexpr OpSaves kBinarySaves[] = {
#define EMBER_BINARY(name, program, Kernel, dtype, api, saves, ...) OpSaves::saves,
#include "ember/detail/op_table.def"
};

void record_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  const OpSaves saves = kBinarySaves[static_cast<int>(op)];
  if (saves == OpSaves::NotDifferentiable || !autograd::should_record({a, b})) return;
  std::vector<int64_t> a_sizes = a.sizes(), b_sizes = b.sizes();
  ScalarType a_dtype = a.scalar_type(), b_dtype = b.scalar_type();
  const bool saves_inputs = saves != OpSaves::Nothing;
  SavedTensor sa = saves_inputs ? SavedTensor(a) : SavedTensor(), sb = saves_inputs ? SavedTensor(b) : SavedTensor();
  SavedTensor so = saves == OpSaves::InputsAndResult ? SavedTensor(out, true) : SavedTensor();
  autograd::record(kBinaryBackwardNames[static_cast<int>(op)], {a, b}, {out},
                   [=](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                     std::vector<Tensor> r = binary_grads(op, g[0], sa.get(), sb.get(), so.get(), alpha, needs);
                     if (r[0].defined()) r[0] = autograd::sum_to(r[0], a_sizes).to(a_dtype);
                     if (r[1].defined()) r[1] = autograd::sum_to(r[1], b_sizes).to(b_dtype);
                     return r;
                   });
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b, const Scalar& alpha = 1) {
  const char* name = binary_name(op);
  EMBER_CHECK(a.defined() && b.defined(), name, "called with an undefined tensor");
  ScalarType dtype = compute_dtype(op, ops::result_type(a, b));
  // On bools, mul is logical and and add logical or, as in libtorch.
  if (dtype == kBool && op == BinaryOp::Mul) return a.logical_and(b);
  if (dtype == kBool && op == BinaryOp::Add && alpha.toDouble() != 0) return a.logical_or(b);
  EMBER_RECORD_OP(name, a, b);
  EMBER_CHECK(dtype != kBool || row_of(op).dtype == OpDtype::Integral, name,
              "not supported for bool tensors; use logical_and/logical_or");
  EMBER_CHECK(!alpha.isFloatingPoint() || is_floating_point(dtype), name, "alpha ", alpha.toDouble(),
              " must be an integer for integral dtype ", dtype_name(dtype));
  check_integer_divisor(op, b, dtype);
  Tensor out = binary_kernel_call(op, a, b, dtype, alpha.toDouble());
  record_binary(op, a, b, out, alpha.toDouble());
  if (op == BinaryOp::Add || op == BinaryOp::Sub) ember_trace_op_.attr("alpha", alpha.toDouble());
  return ember_trace_op_.result(out);
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Scalar& b, const Scalar& alpha = 1) {
  ScalarType dtype = compute_dtype(op, ops::result_type(a, b));
  return binary_op(op, a, ops::scalar_to_tensor(b, dtype), alpha);
}

Tensor& binary_inplace(BinaryOp op, const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  const char* name = binary_name(op);
  return ops::inplace(
      self, name, {other}, [&](const Tensor& a) { return binary_op(op, a, other, alpha); },
      [&] {
        ScalarType dtype = compute_dtype(op, ops::result_type(self, other));
        EMBER_CHECK(ops::can_cast(dtype, self.scalar_type()), name, "result type ", dtype_name(dtype),
                    " can't be cast to the desired output type ", dtype_name(self.scalar_type()));
        auto shape = ops::broadcast_shapes(self.sizes(), other.sizes(), name);
        EMBER_CHECK(shape == self.sizes(), name, "output with shape ", self.sizes(),
                    " doesn't match the broadcast shape ", shape);
        check_integer_divisor(op, other, dtype);
        if (dtype == self.scalar_type()) {
          cpu::InnerLoop loop = EMBER_KERNEL(binary_loop)(op, dtype);
          EMBER_CHECK(loop != nullptr, name, "not implemented for dtype ", dtype_name(dtype));
          cpu::ElementwiseParams params;
          params.alpha = alpha.toDouble();
          ops::run_loop(self, {self, ops::unaliased(other.to(dtype), self)}, loop, params);
        } else {
          ops::copy_into(self, binary_kernel_call(op, self, other, dtype, alpha.toDouble()));
        }
      });
}

Tensor& binary_inplace(BinaryOp op, const Tensor& self, const Scalar& other, const Scalar& alpha = 1) {
  ScalarType dtype = compute_dtype(op, ops::result_type(self, other));
  return binary_inplace(op, self, ops::scalar_to_tensor(other, dtype), alpha);
}

// ---- unary -----------------------------------------------------------------------------

ScalarType unary_dtype(UnaryOp op, ScalarType in) {
  if (is_floating_point(in) || row_of(op).dtype != OpDtype::Floating) return in;
  return kFloat32;  // exp(int tensor) is float, as in PyTorch
}

Tensor unary_kernel_call(UnaryOp op, const Tensor& x, const cpu::ElementwiseParams& params) {
  const char* name = unary_name(op);
  EMBER_CHECK(x.defined(), name, "called with an undefined tensor");
  ScalarType dtype = unary_dtype(op, x.scalar_type());
  cpu::InnerLoop loop = EMBER_KERNEL(unary_loop)(op, dtype);
  EMBER_CHECK(loop != nullptr, name, "not implemented for dtype ", dtype_name(dtype));
  Tensor out = core::make_tensor(x.sizes(), dtype);
  ops::run_loop(out, {x.to(dtype)}, loop, params);
  return out;
}

// The helpers of the unary rows' derivatives (ember/detail/op_table.def).
Tensor gelu_erf_derivative(const Tensor& x) {
  Tensor cdf = ((x * M_SQRT1_2).erf() + 1) * 0.5;
  Tensor pdf = (x * x * -0.5).exp() * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return cdf + x * pdf;
}
Tensor gelu_tanh_derivative(const Tensor& x) {
  const double k = M_2_SQRTPI * M_SQRT1_2;  // sqrt(2/pi)
  Tensor inner = (x + x.pow(3) * 0.044715) * k;
  Tensor t = inner.tanh();
  Tensor dinner = (x * x * (3 * 0.044715) + 1) * k;
  return (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner;
}
Tensor silu_derivative(const Tensor& x) {
  Tensor s = x.sigmoid();
  return s * (1 + x * (1 - s));
}
Tensor pow_scalar_derivative(const Tensor& x, const cpu::ElementwiseParams& p) {
  if (p.alpha == 0) return zeros_like(x);
  return x.pow(p.alpha - 1) * p.alpha;
}
Tensor clamp_derivative(const Tensor& x, const cpu::ElementwiseParams& p) {
  Tensor mask = ones_like(x, kBool);
  if (p.has_low) mask = mask.logical_and(x >= p.low);
  if (p.has_high) mask = mask.logical_and(x <= p.high);
  return mask.to(x.scalar_type());
}

// d(op)/dx from the op's row: a tensor expression of the input x, the output y and the params p.
Tensor unary_derivative(UnaryOp op, const Tensor& x, const Tensor& y, const cpu::ElementwiseParams& p) {
  switch (op) {
#define EMBER_UNARY(name, program, Kernel, dtype, api, derivative) \
  case UnaryOp::Kernel: return derivative;
#define EMBER_UNARY_WITH_PARAMS(name, program, Kernel, dtype, attributes, derivative) \
  case UnaryOp::Kernel: return derivative;
#include "ember/detail/op_table.def"
  }
  return {};
}

Tensor unary_op(UnaryOp op, const Tensor& x, const cpu::ElementwiseParams& params = {}) {
  EMBER_RECORD_OP(unary_name(op), x);
  Tensor out = unary_kernel_call(op, x, params);
  if (autograd::should_record({x})) {
    SavedTensor sx(x), so(out, true);
    autograd::record(unary_name(op), {x}, {out},
                     [op, sx, so, params](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {g[0] * unary_derivative(op, sx.get(), so.get(), params)};
                     });
  }
  if (op == UnaryOp::PowScalar) ember_trace_op_.attr("exponent", params.alpha);
  if (op == UnaryOp::GeluErf || op == UnaryOp::GeluTanh)
    ember_trace_op_.attr("approximate", std::string(op == UnaryOp::GeluTanh ? "tanh" : "none"));
  if (params.has_low) ember_trace_op_.attr("min", params.low);
  if (params.has_high) ember_trace_op_.attr("max", params.high);
  if (row_of(op).program == OpProgram::NotExported) return out;  // an export that reads it is refused
  return ember_trace_op_.result(out);
}

Tensor& unary_inplace(UnaryOp op, const Tensor& self, const cpu::ElementwiseParams& params = {}) {
  const char* name = unary_name(op);
  return ops::inplace(
      self, name, {}, [&](const Tensor& a) { return unary_op(op, a, params); },
      [&] {
        ScalarType dtype = unary_dtype(op, self.scalar_type());
        EMBER_CHECK(dtype == self.scalar_type(), name, "result type ", dtype_name(dtype),
                    " can't be cast to the desired output type ", dtype_name(self.scalar_type()));
        cpu::InnerLoop loop = EMBER_KERNEL(unary_loop)(op, dtype);
        EMBER_CHECK(loop != nullptr, name, "not implemented for dtype ", dtype_name(dtype));
        ops::run_loop(self, {self}, loop, params);
      });
}

cpu::ElementwiseParams clamp_params(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  EMBER_CHECK(min || max, "clamp", "at least one of 'min' or 'max' must not be None");
  cpu::ElementwiseParams p;
  if (min) { p.has_low = true; p.low = min->toDouble(); }
  if (max) { p.has_high = true; p.high = max->toDouble(); }
  return p;
}

cpu::ElementwiseParams round_params(const Tensor& x, int64_t decimals) {
  EMBER_CHECK(x.defined(), "round", "called with an undefined tensor");
  EMBER_CHECK(decimals == 0 || x.is_floating_point(), "round", "decimals=", decimals,
              " is not supported for integer dtype ", dtype_name(x.scalar_type()));
  // 10^decimals overflows float64 past 308; PyTorch returns inf/nan there, ember refuses.
  EMBER_CHECK(decimals >= -308 && decimals <= 308, "round", "decimals=", decimals, " out of range [-308, 308]");
  cpu::ElementwiseParams params;
  params.alpha = static_cast<double>(decimals);
  return params;
}
// clamp's result dtype, as PyTorch's result_type: an integer tensor with a floating bound is floating.
ScalarType clamp_dtype(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  ScalarType dtype = x.scalar_type();
  for (const auto& bound : {min, max})
    if (bound) dtype = promote_types(dtype, ops::result_type(x, *bound));
  return dtype;
}

// ---- comparisons ----------------------------------------------------------------------------

const char* compare_name(CompareOp op) {
  static constexpr const char* kNames[] = {
#define EMBER_COMPARE(name, Kernel, api) #name,
#include "ember/detail/op_table.def"
  };
  return kNames[static_cast<int>(op)];
}

Tensor compare_op(CompareOp op, const Tensor& a, const Tensor& b) {
  const char* name = compare_name(op);
  EMBER_CHECK(a.defined() && b.defined(), name, "called with an undefined tensor");
  EMBER_RECORD_OP(name, a, b);
  ScalarType dtype = ops::result_type(a, b);
  auto shape = ops::broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = core::make_tensor(shape, kBool);
  ops::run_loop(out, {a.to(dtype), b.to(dtype)}, EMBER_KERNEL(compare_loop)(op, dtype));
  return out;
}

Tensor compare_op(CompareOp op, const Tensor& a, const Scalar& b) {
  return compare_op(op, a, ops::scalar_to_tensor(b, ops::result_type(a, b)));
}

// self.eq_(other): the comparison written back in self's dtype; comparisons have no gradient.
Tensor& compare_inplace(CompareOp op, const Tensor& self, const Tensor& other) {
  const char* name = compare_name(op);
  return ops::inplace(
      self, name, {other},
      [&](const Tensor& a) {
        Tensor result = compare_op(op, a, other).to(a.scalar_type());
        // A step function: no gradient flows back into self's earlier history.
        autograd::record(name, {a, other}, {result}, [](std::vector<Tensor>&, const std::vector<bool>& needs) {
          return std::vector<Tensor>(needs.size());
        });
        return result;
      },
      [&] {
        auto shape = ops::broadcast_shapes(self.sizes(), other.sizes(), name);
        EMBER_CHECK(shape == self.sizes(), name, "output with shape ", self.sizes(),
                    " doesn't match the broadcast shape ", shape);
        ops::copy_into(self, compare_op(op, self, other));
      });
}

Tensor& compare_inplace(CompareOp op, const Tensor& self, const Scalar& other) {
  return compare_inplace(op, self, ops::scalar_to_tensor(other, ops::result_type(self, other)));
}

// ---- clamp with tensor bounds -----------------------------------------------------------

// PyTorch's clamp_backward_min_max: a bound gets the gradient where it decided the output;
// when min > max the output is max everywhere, so min gets none.
std::vector<Tensor> clamp_tensor_backward(const Tensor& grad, const Tensor& x, const Tensor& lo, const Tensor& hi) {
  Tensor zero = zeros({}, grad.scalar_type());
  Tensor self_mask = ones_like(grad, kBool), lo_mask, hi_mask;
  if (lo.defined()) {
    self_mask = self_mask.logical_and(x >= lo);
    lo_mask = x < lo;
    if (hi.defined()) lo_mask = lo_mask.logical_and(lo < hi);
  }
  if (hi.defined()) {
    self_mask = self_mask.logical_and(x <= hi);
    hi_mask = x > hi;
    if (lo.defined()) hi_mask = hi_mask.logical_or(hi < lo);
  }
  return {where(self_mask, grad, zero), lo.defined() ? where(lo_mask, grad, zero) : Tensor(),
          hi.defined() ? where(hi_mask, grad, zero) : Tensor()};
}

Tensor clamp_tensor(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  const Tensor lo = min ? *min : Tensor(), hi = max ? *max : Tensor();
  EMBER_CHECK(x.defined(), "clamp", "called with an undefined tensor");
  EMBER_CHECK(lo.defined() || hi.defined(), "clamp", "at least one of 'min' or 'max' must not be None");
  EMBER_RECORD_OP("clamp", x);
  ScalarType dtype = x.scalar_type();
  std::vector<int64_t> shape = x.sizes();
  for (const Tensor& bound : {lo, hi}) {
    if (!bound.defined()) continue;
    dtype = promote_types(dtype, ops::result_type(x, bound));
    shape = ops::broadcast_shapes(shape, bound.sizes(), "clamp");
  }
  EMBER_CHECK(dtype != kBool, "clamp", "not supported for bool tensors");
  Tensor out;
  {
    NoGradGuard guard;  // maximum then minimum: NaN anywhere propagates, and min > max gives max, as PyTorch
    out = x.to(dtype);
    if (lo.defined()) out = out.maximum(lo.to(dtype));
    if (hi.defined()) out = out.minimum(hi.to(dtype));
  }
  std::vector<Tensor> inputs = {x, lo, hi};
  if (autograd::should_record({x, lo, hi})) {
    SavedTensor sx(x), slo(lo), shi(hi);
    std::vector<std::vector<int64_t>> input_sizes;
    for (const Tensor& t : inputs) input_sizes.push_back(t.defined() ? t.sizes() : IntArrayRef());
    autograd::record("ClampBackward", inputs, {out},
                     [sx, slo, shi, input_sizes](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                       std::vector<Tensor> r = clamp_tensor_backward(g[0], sx.get(), slo.get(), shi.get());
                       for (size_t i = 0; i < r.size(); ++i)
                         r[i] = needs[i] && r[i].defined() ? autograd::sum_to(r[i], input_sizes[i]) : Tensor();
                       return r;
                     });
  }
  return out;
}

Tensor predicate_op(PredicateOp op, const Tensor& x) {
  EMBER_CHECK(x.defined(), "predicate", "called with an undefined tensor");
  Tensor out = core::make_tensor(x.sizes(), kBool);
  ops::run_loop(out, {x}, EMBER_KERNEL(predicate_loop)(op, x.scalar_type()));
  return out;
}

}  // namespace

// ---- the op table's methods and free functions ---------------------------------------------
// One set per row, by its api column (ember/detail/op_table.h); tensor.h and functions.h declare
// them from the same rows. `apply` and `apply_inplace` are the row family's entry points.
#define EMBER_DEFINE_Unary(name, apply, apply_inplace, code)   \
  Tensor Tensor::name() const { return apply(code, *this); } \
  Tensor name(const Tensor& x) { return x.name(); }
#define EMBER_DEFINE_UnaryInplace(name, apply, apply_inplace, code) \
  EMBER_DEFINE_Unary(name, apply, apply_inplace, code)              \
  Tensor& Tensor::name##_() const { return apply_inplace(code, *this); }
#define EMBER_DEFINE_UnaryFree(name, apply, apply_inplace, code) \
  Tensor name(const Tensor& x) { return apply(code, x); }
#define EMBER_DEFINE_Binary(name, apply, apply_inplace, code)                                 \
  Tensor Tensor::name(const Tensor& other) const { return apply(code, *this, other); } \
  Tensor name(const Tensor& a, const Tensor& b) { return a.name(b); }
#define EMBER_DEFINE_BinaryInplace(name, apply, apply_inplace, code) \
  EMBER_DEFINE_Binary(name, apply, apply_inplace, code)              \
  Tensor& Tensor::name##_(const Tensor& other) const { return apply_inplace(code, *this, other); }
#define EMBER_DEFINE_BinaryScalar(name, apply, apply_inplace, code)                                    \
  EMBER_DEFINE_BinaryInplace(name, apply, apply_inplace, code)                                         \
  Tensor Tensor::name(const Scalar& other) const { return apply(code, *this, other); }                 \
  Tensor& Tensor::name##_(const Scalar& other) const { return apply_inplace(code, *this, other); } \
  Tensor name(const Tensor& a, const Scalar& b) { return a.name(b); }
#define EMBER_DEFINE_BinaryScalarAlpha(name, apply, apply_inplace, code)                                            \
  Tensor Tensor::name(const Tensor& other, const Scalar& alpha) const { return apply(code, *this, other, alpha); } \
  Tensor Tensor::name(const Scalar& other, const Scalar& alpha) const { return apply(code, *this, other, alpha); } \
  Tensor& Tensor::name##_(const Tensor& other, const Scalar& alpha) const {                                         \
    return apply_inplace(code, *this, other, alpha);                                                                \
  }                                                                                                                 \
  Tensor& Tensor::name##_(const Scalar& other, const Scalar& alpha) const {                                         \
    return apply_inplace(code, *this, other, alpha);                                                                \
  }                                                                                                                 \
  Tensor name(const Tensor& a, const Tensor& b, const Scalar& alpha) { return a.name(b, alpha); }                 \
  Tensor name(const Tensor& a, const Scalar& b, const Scalar& alpha) { return a.name(b, alpha); }

#define EMBER_UNARY(name, program, Kernel, dtype, api, ...) \
  EMBER_DEFINE_##api(name, unary_op, unary_inplace, UnaryOp::Kernel)
#define EMBER_BINARY(name, program, Kernel, dtype, api, ...) \
  EMBER_DEFINE_##api(name, binary_op, binary_inplace, BinaryOp::Kernel)
#define EMBER_COMPARE(name, Kernel, api) EMBER_DEFINE_##api(name, compare_op, compare_inplace, CompareOp::Kernel)
#define EMBER_PREDICATE(name, Kernel) EMBER_DEFINE_Unary(name, predicate_op, _, PredicateOp::Kernel)
#include "ember/detail/op_table.def"

// ---- the ops with parameters, and other forms ------------------------------------------------

Tensor Tensor::pow(const Scalar& e) const {
  EMBER_CHECK(is_floating_point() || e.isIntegral(true), "pow", "integral tensor to a floating exponent ",
              e.toDouble(), "; convert the tensor to a floating dtype first");
  EMBER_CHECK(is_floating_point() || e.toLong() >= 0, "pow", "integers to negative integer powers are not allowed");
  cpu::ElementwiseParams p;
  p.alpha = e.toDouble();
  return unary_op(UnaryOp::PowScalar, *this, p);
}
Tensor& Tensor::pow_(const Scalar& e) const { return binary_inplace(BinaryOp::Pow, *this, e); }
Tensor pow(const Tensor& a, const Scalar& b) { return a.pow(b); }
Tensor pow(const Scalar& a, const Tensor& b) {
  ScalarType dtype = ops::result_type(b, a);
  return ops::scalar_to_tensor(a, dtype).pow(b);
}
Tensor max(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor min(const Tensor& a, const Tensor& b) { return a.minimum(b); }
Tensor max(const Tensor& x) { return x.max(); }
Tensor min(const Tensor& x) { return x.min(); }
Tensor square(const Tensor& x) { return x.square(); }
Tensor remainder(const Scalar& a, const Tensor& b) {
  return ops::scalar_to_tensor(a, ops::result_type(b, a)).remainder(b);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", "gelu", "approximate must be 'none' or 'tanh', got '",
              approximate, "'");
  return unary_op(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf, x);
}

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  cpu::ElementwiseParams params = clamp_params(min, max);
  return unary_op(UnaryOp::Clamp, to(clamp_dtype(*this, min, max)), params);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  cpu::ElementwiseParams params = clamp_params(min, max);
  const ScalarType dtype = clamp_dtype(*this, min, max);
  EMBER_CHECK(dtype == scalar_type(), "clamp_", "result type ", dtype_name(dtype),
              " can't be cast to the desired output type ", dtype_name(scalar_type()));
  return unary_inplace(UnaryOp::Clamp, *this, params);
}

Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  return clamp_tensor(*this, min, max);
}
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  const Tensor& self = *this;
  return ops::inplace(
      self, "clamp_", {min ? *min : Tensor(), max ? *max : Tensor()},
      [&](const Tensor& a) { return clamp_tensor(a, min, max); },
      [&] {
        Tensor result = clamp_tensor(self, min, max);
        EMBER_CHECK(result.scalar_type() == self.scalar_type(), "clamp_", "result type ",
                    dtype_name(result.scalar_type()), " can't be cast to the desired output type ",
                    dtype_name(self.scalar_type()));
        EMBER_CHECK(result.sizes() == self.sizes(), "clamp_", "output with shape ", self.sizes(),
                    " doesn't match the broadcast shape ", result.sizes());
        ops::copy_into(self, result);
      });
}
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) { return x.clamp(min, max); }
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return x.clamp(min, max);
}
Tensor clamp_min(const Tensor& x, const Scalar& min) { return x.clamp_min(min); }
Tensor clamp_min(const Tensor& x, const Tensor& min) { return x.clamp_min(min); }
Tensor clamp_max(const Tensor& x, const Scalar& max) { return x.clamp_max(max); }
Tensor clamp_max(const Tensor& x, const Tensor& max) { return x.clamp_max(max); }

Tensor Tensor::round(int64_t decimals) const { return unary_op(UnaryOp::Round, *this, round_params(*this, decimals)); }
Tensor& Tensor::round_(int64_t decimals) const {
  return unary_inplace(UnaryOp::Round, *this, round_params(*this, decimals));
}
Tensor round(const Tensor& x, int64_t decimals) { return x.round(decimals); }

Tensor Tensor::where(const Tensor& condition, const Tensor& other) const { return ember::where(condition, *this, other); }

Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  EMBER_CHECK(mask.scalar_type() == kBool, "masked_fill", "mask must be bool, got ", dtype_name(mask.scalar_type()));
  auto shape = ops::broadcast_shapes(sizes(), mask.sizes(), "masked_fill");
  EMBER_CHECK(shape == sizes(), "masked_fill", "mask of shape ", mask.sizes(), " cannot be broadcast to ", sizes());
  return ember::where(mask, ops::scalar_to_tensor(value, scalar_type()), *this);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  const Tensor& self = *this;
  return ops::inplace(
      self, "masked_fill_", {mask}, [&](const Tensor& a) { return a.masked_fill(mask, value); },
      [&] { ops::copy_into(self, self.masked_fill(mask, value)); });
}

Tensor operator-(const Scalar& a, const Tensor& b) { return b.neg().add(a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return b.reciprocal().mul(a); }
Tensor operator%(const Scalar& a, const Tensor& b) { return ember::remainder(a, b); }

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  EMBER_CHECK(condition.scalar_type() == kBool, "where", "condition must be bool, got ",
              dtype_name(condition.scalar_type()));
  ScalarType dtype = ops::result_type(self, other);
  auto shape = ops::broadcast_shapes(ops::broadcast_shapes(condition.sizes(), self.sizes(), "where"), other.sizes(),
                                     "where");
  Tensor out = core::make_tensor(shape, dtype);
  ops::run_loop(out, {condition, self.to(dtype), other.to(dtype)}, EMBER_KERNEL(where_loop)(dtype));
  if (autograd::should_record({self, other})) {
    std::vector<int64_t> a_sizes = self.sizes(), b_sizes = other.sizes();
    Tensor cond = condition;
    autograd::record("WhereBackward", {self, other}, {out},
                     [cond, a_sizes, b_sizes](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                       std::vector<Tensor> r(2);
                       if (needs[0]) r[0] = autograd::sum_to(g[0].masked_fill(cond.logical_not(), 0), a_sizes);
                       if (needs[1]) r[1] = autograd::sum_to(g[0].masked_fill(cond, 0), b_sizes);
                       return r;
                     });
  }
  return out;
}

Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other) {
  return where(condition, ops::scalar_to_tensor(self, ops::result_type(other, self)), other);
}
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other) {
  return where(condition, self, ops::scalar_to_tensor(other, ops::result_type(self, other)));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) { return x.masked_fill(mask, value); }

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  NoGradGuard guard;
  Tensor x = a.to(kFloat64), y = b.to(kFloat64);
  Tensor close = (x - y).abs() <= (y.abs() * rtol + atol);
  close = close.logical_or(x == y);  // equal infinities
  if (equal_nan) close = close.logical_or(x.isnan().logical_and(y.isnan()));
  return close.all().item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  NoGradGuard guard;
  return (a == b).all().item<bool>();
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return ember::allclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& other) const { return ember::equal(*this, other); }

}  // namespace ember
