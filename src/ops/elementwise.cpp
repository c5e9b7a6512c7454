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

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Maximum: return "maximum";
    case BinaryOp::Minimum: return "minimum";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Atan2: return "atan2";
    case BinaryOp::Remainder: return "remainder";
    case BinaryOp::Fmod: return "fmod";
    case BinaryOp::BitwiseAnd: return "bitwise_and";
    case BinaryOp::BitwiseOr: return "bitwise_or";
    case BinaryOp::BitwiseXor: return "bitwise_xor";
  }
  return "binary";
}

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitwiseAnd || op == BinaryOp::BitwiseOr || op == BinaryOp::BitwiseXor;
}

// Integer remainder by zero has no value (PyTorch raises ZeroDivisionError); the kernel must never see it.
void check_integer_divisor(BinaryOp op, const Tensor& divisor, ScalarType dtype) {
  if ((op != BinaryOp::Remainder && op != BinaryOp::Fmod) || is_floating_point(dtype)) return;
  NoGradGuard guard;
  EMBER_CHECK(!divisor.eq(0).any().item<bool>(), binary_name(op), "integer division by zero (dtype ",
              dtype_name(dtype), ")");
}

// The dtype `op` computes in for inputs promoting to `common`.
ScalarType compute_dtype(BinaryOp op, ScalarType common) {
  if ((op == BinaryOp::Div || op == BinaryOp::Atan2) && !is_floating_point(common)) return kFloat32;
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

void record_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  if (!autograd::should_record({a, b})) return;
  std::vector<int64_t> a_sizes = a.sizes(), b_sizes = b.sizes();
  ScalarType a_dtype = a.scalar_type(), b_dtype = b.scalar_type();
  auto finish = [a_sizes, b_sizes, a_dtype, b_dtype](const Tensor& ga, const Tensor& gb, const std::vector<bool>& needs) {
    std::vector<Tensor> r(2);
    if (needs[0] && ga.defined()) r[0] = autograd::sum_to(ga, a_sizes).to(a_dtype);
    if (needs[1] && gb.defined()) r[1] = autograd::sum_to(gb, b_sizes).to(b_dtype);
    return r;
  };
  const char* name = nullptr;
  autograd::BackwardFunction fn;
  // add and sub need neither input: saving none lets them take inference tensors, as PyTorch.
  const bool saves_inputs = op != BinaryOp::Add && op != BinaryOp::Sub;
  SavedTensor sa = saves_inputs ? SavedTensor(a) : SavedTensor(), sb = saves_inputs ? SavedTensor(b) : SavedTensor();
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      const double sign = op == BinaryOp::Add ? alpha : -alpha;
      name = op == BinaryOp::Add ? "AddBackward" : "SubBackward";
      fn = [finish, sign](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        return finish(g[0], needs[1] ? (sign == 1 ? g[0] : g[0] * sign) : Tensor(), needs);
      };
      break;
    }
    case BinaryOp::Mul:
      name = "MulBackward";
      fn = [finish, sa, sb](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        return finish(needs[0] ? g[0] * sb.get() : Tensor(), needs[1] ? g[0] * sa.get() : Tensor(), needs);
      };
      break;
    case BinaryOp::Div:
      name = "DivBackward";
      fn = [finish, sa, sb](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        Tensor b = sb.get();
        return finish(needs[0] ? g[0] / b : Tensor(), needs[1] ? -g[0] * sa.get() / (b * b) : Tensor(), needs);
      };
      break;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      const bool is_max = op == BinaryOp::Maximum;
      name = is_max ? "MaximumBackward" : "MinimumBackward";
      // Ties split the gradient evenly, as PyTorch does.
      fn = [finish, sa, sb, is_max](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        Tensor a = sa.get(), b = sb.get();
        Tensor shared = where(a == b, g[0] / 2, g[0]);
        Tensor ga = needs[0] ? shared.masked_fill(is_max ? a < b : a > b, 0) : Tensor();
        Tensor gb = needs[1] ? shared.masked_fill(is_max ? a > b : a < b, 0) : Tensor();
        return finish(ga, gb, needs);
      };
      break;
    }
    case BinaryOp::Pow: {
      name = "PowBackward";
      SavedTensor so(out, true);
      fn = [finish, sa, sb, so](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        Tensor a = sa.get(), b = sb.get();
        // Exponent 0 has derivative 0 even at a == 0, where b * a^(b-1) is 0 * inf.
        Tensor ga = needs[0] ? (g[0] * b * a.pow(b - 1)).masked_fill(b == 0, 0) : Tensor();
        Tensor gb;
        if (needs[1]) gb = (g[0] * so.get() * a.log()).masked_fill((a == 0).logical_and(b >= 0), 0);
        return finish(ga, gb, needs);
      };
      break;
    }
    case BinaryOp::Atan2:
      name = "Atan2Backward";
      fn = [finish, sa, sb](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        Tensor a = sa.get(), b = sb.get();
        Tensor denom = a * a + b * b;
        return finish(needs[0] ? g[0] * b / denom : Tensor(), needs[1] ? -g[0] * a / denom : Tensor(), needs);
      };
      break;
    case BinaryOp::Remainder:
    case BinaryOp::Fmod: {
      // a - b * q with q = floor(a / b) (remainder) or trunc(a / b) (fmod), q piecewise constant.
      const bool floored = op == BinaryOp::Remainder;
      name = floored ? "RemainderBackward" : "FmodBackward";
      fn = [finish, sa, sb, floored](std::vector<Tensor>& g, const std::vector<bool>& needs) {
        Tensor gb;
        if (needs[1]) {
          Tensor quotient = sa.get() / sb.get();
          gb = -g[0] * (floored ? quotient.floor() : quotient.trunc());
        }
        return finish(g[0], gb, needs);
      };
      break;
    }
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor: return;  // bool and integer tensors only: nothing to differentiate
  }
  autograd::record(name, {a, b}, {out}, std::move(fn));
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b, const Scalar& alpha = 1) {
  const char* name = binary_name(op);
  EMBER_CHECK(a.defined() && b.defined(), name, "called with an undefined tensor");
  EMBER_RECORD_OP(name, a, b);
  ScalarType dtype = compute_dtype(op, ops::result_type(a, b));
  EMBER_CHECK(dtype != kBool || op == BinaryOp::Maximum || op == BinaryOp::Minimum || is_bitwise(op), name,
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

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp: return "exp";
    case UnaryOp::Log: return "log";
    case UnaryOp::Log1p: return "log1p";
    case UnaryOp::Expm1: return "expm1";
    case UnaryOp::Sqrt: return "sqrt";
    case UnaryOp::Rsqrt: return "rsqrt";
    case UnaryOp::Abs: return "abs";
    case UnaryOp::Neg: return "neg";
    case UnaryOp::Sin: return "sin";
    case UnaryOp::Cos: return "cos";
    case UnaryOp::Tan: return "tan";
    case UnaryOp::Tanh: return "tanh";
    case UnaryOp::Sigmoid: return "sigmoid";
    case UnaryOp::Relu: return "relu";
    case UnaryOp::GeluErf: return "gelu";
    case UnaryOp::GeluTanh: return "gelu";
    case UnaryOp::Silu: return "silu";
    case UnaryOp::Erf: return "erf";
    case UnaryOp::Sign: return "sign";
    case UnaryOp::Reciprocal: return "reciprocal";
    case UnaryOp::PowScalar: return "pow";
    case UnaryOp::Clamp: return "clamp";
    case UnaryOp::Floor: return "floor";
    case UnaryOp::Ceil: return "ceil";
    case UnaryOp::Trunc: return "trunc";
    case UnaryOp::Round: return "round";
    case UnaryOp::Frac: return "frac";
    case UnaryOp::BitwiseNot: return "bitwise_not";
  }
  return "unary";
}

bool keeps_integer_dtype(UnaryOp op) {
  return op == UnaryOp::Abs || op == UnaryOp::Neg || op == UnaryOp::Relu || op == UnaryOp::Sign ||
         op == UnaryOp::PowScalar || op == UnaryOp::Clamp || op == UnaryOp::Floor || op == UnaryOp::Ceil ||
         op == UnaryOp::Trunc || op == UnaryOp::Round || op == UnaryOp::Frac || op == UnaryOp::BitwiseNot;
}

ScalarType unary_dtype(UnaryOp op, ScalarType in) {
  if (is_floating_point(in) || keeps_integer_dtype(op)) return in;
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

// d(op)/dx as a tensor expression of the input x and the output y.
Tensor unary_derivative(UnaryOp op, const Tensor& x, const Tensor& y, const cpu::ElementwiseParams& p) {
  switch (op) {
    case UnaryOp::Exp: return y;
    case UnaryOp::Log: return x.reciprocal();
    case UnaryOp::Log1p: return (x + 1).reciprocal();
    case UnaryOp::Expm1: return y + 1;
    case UnaryOp::Sqrt: return (y * 2).reciprocal();
    case UnaryOp::Rsqrt: return y.pow(3) * -0.5;
    case UnaryOp::Abs: return x.sign();
    case UnaryOp::Neg: return full_like(x, -1);
    case UnaryOp::Sin: return x.cos();
    case UnaryOp::Cos: return -x.sin();
    case UnaryOp::Tan: return y * y + 1;
    case UnaryOp::Tanh: return 1 - y * y;
    case UnaryOp::Sigmoid: return y * (1 - y);
    case UnaryOp::Relu: return (y > 0).to(x.scalar_type());
    case UnaryOp::GeluErf: {
      Tensor cdf = ((x * M_SQRT1_2).erf() + 1) * 0.5;
      Tensor pdf = (x * x * -0.5).exp() * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
      return cdf + x * pdf;
    }
    case UnaryOp::GeluTanh: {
      const double k = M_2_SQRTPI * M_SQRT1_2;  // sqrt(2/pi)
      Tensor inner = (x + x.pow(3) * 0.044715) * k;
      Tensor t = inner.tanh();
      Tensor dinner = (x * x * (3 * 0.044715) + 1) * k;
      return (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner;
    }
    case UnaryOp::Silu: {
      Tensor s = x.sigmoid();
      return s * (1 + x * (1 - s));
    }
    case UnaryOp::Erf: return (x * x * -1).exp() * M_2_SQRTPI;
    case UnaryOp::Sign: return zeros_like(x);
    case UnaryOp::Reciprocal: return -(y * y);
    case UnaryOp::PowScalar: {
      if (p.alpha == 0) return zeros_like(x);
      return x.pow(p.alpha - 1) * p.alpha;
    }
    case UnaryOp::Clamp: {
      Tensor mask = ones_like(x, kBool);
      if (p.has_low) mask = mask.logical_and(x >= p.low);
      if (p.has_high) mask = mask.logical_and(x <= p.high);
      return mask.to(x.scalar_type());
    }
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Trunc:
    case UnaryOp::Round: return zeros_like(x);
    case UnaryOp::Frac: return ones_like(x);
    case UnaryOp::BitwiseNot: return {};  // integer-only: never differentiated
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
  switch (op) {
    case CompareOp::Eq: return "eq";
    case CompareOp::Ne: return "ne";
    case CompareOp::Lt: return "lt";
    case CompareOp::Le: return "le";
    case CompareOp::Gt: return "gt";
    case CompareOp::Ge: return "ge";
    case CompareOp::LogicalAnd: return "logical_and";
    case CompareOp::LogicalOr: return "logical_or";
    case CompareOp::LogicalXor: return "logical_xor";
  }
  return "compare";
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

// ---- Tensor methods ------------------------------------------------------------------------------

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return binary_op(BinaryOp::Add, *this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return binary_op(BinaryOp::Add, *this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return binary_op(BinaryOp::Sub, *this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return binary_op(BinaryOp::Sub, *this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return binary_op(BinaryOp::Mul, *this, o); }
Tensor Tensor::mul(const Scalar& o) const { return binary_op(BinaryOp::Mul, *this, o); }
Tensor Tensor::div(const Tensor& o) const { return binary_op(BinaryOp::Div, *this, o); }
Tensor Tensor::div(const Scalar& o) const { return binary_op(BinaryOp::Div, *this, o); }
Tensor Tensor::pow(const Tensor& e) const { return binary_op(BinaryOp::Pow, *this, e); }
Tensor Tensor::pow(const Scalar& e) const {
  EMBER_CHECK(is_floating_point() || e.isIntegral(true), "pow", "integral tensor to a floating exponent ",
              e.toDouble(), "; convert the tensor to a floating dtype first");
  EMBER_CHECK(is_floating_point() || e.toLong() >= 0, "pow", "integers to negative integer powers are not allowed");
  cpu::ElementwiseParams p;
  p.alpha = e.toDouble();
  return unary_op(UnaryOp::PowScalar, *this, p);
}
Tensor Tensor::atan2(const Tensor& o) const { return binary_op(BinaryOp::Atan2, *this, o); }
Tensor Tensor::maximum(const Tensor& o) const { return binary_op(BinaryOp::Maximum, *this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return binary_op(BinaryOp::Minimum, *this, o); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const { return binary_inplace(BinaryOp::Add, *this, o, alpha); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const { return binary_inplace(BinaryOp::Add, *this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const { return binary_inplace(BinaryOp::Sub, *this, o, alpha); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const { return binary_inplace(BinaryOp::Sub, *this, o, alpha); }
Tensor& Tensor::mul_(const Tensor& o) const { return binary_inplace(BinaryOp::Mul, *this, o); }
Tensor& Tensor::mul_(const Scalar& o) const { return binary_inplace(BinaryOp::Mul, *this, o); }
Tensor& Tensor::div_(const Tensor& o) const { return binary_inplace(BinaryOp::Div, *this, o); }
Tensor& Tensor::div_(const Scalar& o) const { return binary_inplace(BinaryOp::Div, *this, o); }
Tensor& Tensor::pow_(const Tensor& e) const { return binary_inplace(BinaryOp::Pow, *this, e); }
Tensor& Tensor::pow_(const Scalar& e) const { return binary_inplace(BinaryOp::Pow, *this, e); }
Tensor& Tensor::atan2_(const Tensor& o) const { return binary_inplace(BinaryOp::Atan2, *this, o); }

Tensor Tensor::exp() const { return unary_op(UnaryOp::Exp, *this); }
Tensor Tensor::log() const { return unary_op(UnaryOp::Log, *this); }
Tensor Tensor::log1p() const { return unary_op(UnaryOp::Log1p, *this); }
Tensor Tensor::expm1() const { return unary_op(UnaryOp::Expm1, *this); }
Tensor Tensor::sqrt() const { return unary_op(UnaryOp::Sqrt, *this); }
Tensor Tensor::rsqrt() const { return unary_op(UnaryOp::Rsqrt, *this); }
Tensor Tensor::abs() const { return unary_op(UnaryOp::Abs, *this); }
Tensor Tensor::neg() const { return unary_op(UnaryOp::Neg, *this); }
Tensor Tensor::sin() const { return unary_op(UnaryOp::Sin, *this); }
Tensor Tensor::cos() const { return unary_op(UnaryOp::Cos, *this); }
Tensor Tensor::tan() const { return unary_op(UnaryOp::Tan, *this); }
Tensor Tensor::tanh() const { return unary_op(UnaryOp::Tanh, *this); }
Tensor Tensor::sigmoid() const { return unary_op(UnaryOp::Sigmoid, *this); }
Tensor Tensor::relu() const { return unary_op(UnaryOp::Relu, *this); }
Tensor Tensor::erf() const { return unary_op(UnaryOp::Erf, *this); }
Tensor Tensor::sign() const { return unary_op(UnaryOp::Sign, *this); }
Tensor Tensor::reciprocal() const { return unary_op(UnaryOp::Reciprocal, *this); }
Tensor& Tensor::exp_() const { return unary_inplace(UnaryOp::Exp, *this); }
Tensor& Tensor::log_() const { return unary_inplace(UnaryOp::Log, *this); }
Tensor& Tensor::sqrt_() const { return unary_inplace(UnaryOp::Sqrt, *this); }
Tensor& Tensor::neg_() const { return unary_inplace(UnaryOp::Neg, *this); }
Tensor& Tensor::abs_() const { return unary_inplace(UnaryOp::Abs, *this); }
Tensor& Tensor::tanh_() const { return unary_inplace(UnaryOp::Tanh, *this); }
Tensor& Tensor::sigmoid_() const { return unary_inplace(UnaryOp::Sigmoid, *this); }
Tensor& Tensor::relu_() const { return unary_inplace(UnaryOp::Relu, *this); }
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

Tensor Tensor::floor() const { return unary_op(UnaryOp::Floor, *this); }
Tensor Tensor::ceil() const { return unary_op(UnaryOp::Ceil, *this); }
Tensor Tensor::trunc() const { return unary_op(UnaryOp::Trunc, *this); }
Tensor Tensor::frac() const { return unary_op(UnaryOp::Frac, *this); }
Tensor& Tensor::floor_() const { return unary_inplace(UnaryOp::Floor, *this); }
Tensor& Tensor::ceil_() const { return unary_inplace(UnaryOp::Ceil, *this); }
Tensor& Tensor::trunc_() const { return unary_inplace(UnaryOp::Trunc, *this); }
Tensor& Tensor::frac_() const { return unary_inplace(UnaryOp::Frac, *this); }

Tensor Tensor::round(int64_t decimals) const { return unary_op(UnaryOp::Round, *this, round_params(*this, decimals)); }
Tensor& Tensor::round_(int64_t decimals) const {
  return unary_inplace(UnaryOp::Round, *this, round_params(*this, decimals));
}

Tensor Tensor::remainder(const Tensor& o) const { return binary_op(BinaryOp::Remainder, *this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return binary_op(BinaryOp::Remainder, *this, o); }
Tensor& Tensor::remainder_(const Tensor& o) const { return binary_inplace(BinaryOp::Remainder, *this, o); }
Tensor& Tensor::remainder_(const Scalar& o) const { return binary_inplace(BinaryOp::Remainder, *this, o); }
Tensor Tensor::fmod(const Tensor& o) const { return binary_op(BinaryOp::Fmod, *this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return binary_op(BinaryOp::Fmod, *this, o); }
Tensor& Tensor::fmod_(const Tensor& o) const { return binary_inplace(BinaryOp::Fmod, *this, o); }
Tensor& Tensor::fmod_(const Scalar& o) const { return binary_inplace(BinaryOp::Fmod, *this, o); }
Tensor Tensor::bitwise_and(const Tensor& o) const { return binary_op(BinaryOp::BitwiseAnd, *this, o); }
Tensor Tensor::bitwise_and(const Scalar& o) const { return binary_op(BinaryOp::BitwiseAnd, *this, o); }
Tensor Tensor::bitwise_or(const Tensor& o) const { return binary_op(BinaryOp::BitwiseOr, *this, o); }
Tensor Tensor::bitwise_or(const Scalar& o) const { return binary_op(BinaryOp::BitwiseOr, *this, o); }
Tensor Tensor::bitwise_xor(const Tensor& o) const { return binary_op(BinaryOp::BitwiseXor, *this, o); }
Tensor Tensor::bitwise_xor(const Scalar& o) const { return binary_op(BinaryOp::BitwiseXor, *this, o); }
Tensor Tensor::bitwise_not() const { return unary_op(UnaryOp::BitwiseNot, *this); }
Tensor& Tensor::bitwise_and_(const Tensor& o) const { return binary_inplace(BinaryOp::BitwiseAnd, *this, o); }
Tensor& Tensor::bitwise_and_(const Scalar& o) const { return binary_inplace(BinaryOp::BitwiseAnd, *this, o); }
Tensor& Tensor::bitwise_or_(const Tensor& o) const { return binary_inplace(BinaryOp::BitwiseOr, *this, o); }
Tensor& Tensor::bitwise_or_(const Scalar& o) const { return binary_inplace(BinaryOp::BitwiseOr, *this, o); }
Tensor& Tensor::bitwise_xor_(const Tensor& o) const { return binary_inplace(BinaryOp::BitwiseXor, *this, o); }
Tensor& Tensor::bitwise_xor_(const Scalar& o) const { return binary_inplace(BinaryOp::BitwiseXor, *this, o); }
Tensor& Tensor::bitwise_not_() const { return unary_inplace(UnaryOp::BitwiseNot, *this); }

Tensor& Tensor::eq_(const Tensor& o) const { return compare_inplace(CompareOp::Eq, *this, o); }
Tensor& Tensor::eq_(const Scalar& o) const { return compare_inplace(CompareOp::Eq, *this, o); }
Tensor& Tensor::ne_(const Tensor& o) const { return compare_inplace(CompareOp::Ne, *this, o); }
Tensor& Tensor::ne_(const Scalar& o) const { return compare_inplace(CompareOp::Ne, *this, o); }
Tensor& Tensor::lt_(const Tensor& o) const { return compare_inplace(CompareOp::Lt, *this, o); }
Tensor& Tensor::lt_(const Scalar& o) const { return compare_inplace(CompareOp::Lt, *this, o); }
Tensor& Tensor::le_(const Tensor& o) const { return compare_inplace(CompareOp::Le, *this, o); }
Tensor& Tensor::le_(const Scalar& o) const { return compare_inplace(CompareOp::Le, *this, o); }
Tensor& Tensor::gt_(const Tensor& o) const { return compare_inplace(CompareOp::Gt, *this, o); }
Tensor& Tensor::gt_(const Scalar& o) const { return compare_inplace(CompareOp::Gt, *this, o); }
Tensor& Tensor::ge_(const Tensor& o) const { return compare_inplace(CompareOp::Ge, *this, o); }
Tensor& Tensor::ge_(const Scalar& o) const { return compare_inplace(CompareOp::Ge, *this, o); }

Tensor Tensor::eq(const Tensor& o) const { return compare_op(CompareOp::Eq, *this, o); }
Tensor Tensor::eq(const Scalar& o) const { return compare_op(CompareOp::Eq, *this, o); }
Tensor Tensor::ne(const Tensor& o) const { return compare_op(CompareOp::Ne, *this, o); }
Tensor Tensor::ne(const Scalar& o) const { return compare_op(CompareOp::Ne, *this, o); }
Tensor Tensor::lt(const Tensor& o) const { return compare_op(CompareOp::Lt, *this, o); }
Tensor Tensor::lt(const Scalar& o) const { return compare_op(CompareOp::Lt, *this, o); }
Tensor Tensor::le(const Tensor& o) const { return compare_op(CompareOp::Le, *this, o); }
Tensor Tensor::le(const Scalar& o) const { return compare_op(CompareOp::Le, *this, o); }
Tensor Tensor::gt(const Tensor& o) const { return compare_op(CompareOp::Gt, *this, o); }
Tensor Tensor::gt(const Scalar& o) const { return compare_op(CompareOp::Gt, *this, o); }
Tensor Tensor::ge(const Tensor& o) const { return compare_op(CompareOp::Ge, *this, o); }
Tensor Tensor::ge(const Scalar& o) const { return compare_op(CompareOp::Ge, *this, o); }
Tensor Tensor::logical_and(const Tensor& o) const { return compare_op(CompareOp::LogicalAnd, *this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return compare_op(CompareOp::LogicalOr, *this, o); }
Tensor Tensor::logical_xor(const Tensor& o) const { return compare_op(CompareOp::LogicalXor, *this, o); }
Tensor Tensor::logical_not() const { return predicate_op(PredicateOp::LogicalNot, *this); }
Tensor Tensor::isnan() const { return predicate_op(PredicateOp::IsNan, *this); }
Tensor Tensor::isinf() const { return predicate_op(PredicateOp::IsInf, *this); }
Tensor Tensor::isfinite() const { return predicate_op(PredicateOp::IsFinite, *this); }

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

// ---- free functions ----------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return a.add(b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return a.sub(b, alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor div(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor pow(const Tensor& a, const Tensor& b) { return a.pow(b); }
Tensor pow(const Tensor& a, const Scalar& b) { return a.pow(b); }
Tensor pow(const Scalar& a, const Tensor& b) {
  ScalarType dtype = ops::result_type(b, a);
  return ops::scalar_to_tensor(a, dtype).pow(b);
}
Tensor atan2(const Tensor& a, const Tensor& b) { return a.atan2(b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return a.minimum(b); }
Tensor max(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor min(const Tensor& a, const Tensor& b) { return a.minimum(b); }
Tensor exp(const Tensor& x) { return x.exp(); }
Tensor log(const Tensor& x) { return x.log(); }
Tensor log1p(const Tensor& x) { return x.log1p(); }
Tensor expm1(const Tensor& x) { return x.expm1(); }
Tensor sqrt(const Tensor& x) { return x.sqrt(); }
Tensor rsqrt(const Tensor& x) { return x.rsqrt(); }
Tensor abs(const Tensor& x) { return x.abs(); }
Tensor neg(const Tensor& x) { return x.neg(); }
Tensor sin(const Tensor& x) { return x.sin(); }
Tensor cos(const Tensor& x) { return x.cos(); }
Tensor tan(const Tensor& x) { return x.tan(); }
Tensor tanh(const Tensor& x) { return x.tanh(); }
Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
Tensor relu(const Tensor& x) { return x.relu(); }
Tensor erf(const Tensor& x) { return x.erf(); }
Tensor sign(const Tensor& x) { return x.sign(); }
Tensor square(const Tensor& x) { return x.square(); }
Tensor reciprocal(const Tensor& x) { return x.reciprocal(); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", "gelu", "approximate must be 'none' or 'tanh', got '",
              approximate, "'");
  return unary_op(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf, x);
}
Tensor silu(const Tensor& x) { return unary_op(UnaryOp::Silu, x); }
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) { return x.clamp(min, max); }
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return x.clamp(min, max);
}
Tensor clamp_min(const Tensor& x, const Scalar& min) { return x.clamp_min(min); }
Tensor clamp_min(const Tensor& x, const Tensor& min) { return x.clamp_min(min); }
Tensor clamp_max(const Tensor& x, const Scalar& max) { return x.clamp_max(max); }
Tensor clamp_max(const Tensor& x, const Tensor& max) { return x.clamp_max(max); }
Tensor floor(const Tensor& x) { return x.floor(); }
Tensor ceil(const Tensor& x) { return x.ceil(); }
Tensor trunc(const Tensor& x) { return x.trunc(); }
Tensor round(const Tensor& x, int64_t decimals) { return x.round(decimals); }
Tensor frac(const Tensor& x) { return x.frac(); }
Tensor remainder(const Tensor& a, const Tensor& b) { return a.remainder(b); }
Tensor remainder(const Tensor& a, const Scalar& b) { return a.remainder(b); }
Tensor remainder(const Scalar& a, const Tensor& b) {
  return ops::scalar_to_tensor(a, ops::result_type(b, a)).remainder(b);
}
Tensor fmod(const Tensor& a, const Tensor& b) { return a.fmod(b); }
Tensor fmod(const Tensor& a, const Scalar& b) { return a.fmod(b); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
Tensor bitwise_and(const Tensor& a, const Scalar& b) { return a.bitwise_and(b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
Tensor bitwise_or(const Tensor& a, const Scalar& b) { return a.bitwise_or(b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
Tensor bitwise_xor(const Tensor& a, const Scalar& b) { return a.bitwise_xor(b); }
Tensor bitwise_not(const Tensor& x) { return x.bitwise_not(); }
Tensor eq(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor ne(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor lt(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor le(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor gt(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor ge(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return a.logical_and(b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return a.logical_or(b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return a.logical_xor(b); }
Tensor logical_not(const Tensor& a) { return a.logical_not(); }
Tensor isnan(const Tensor& x) { return x.isnan(); }
Tensor isinf(const Tensor& x) { return x.isinf(); }
Tensor isfinite(const Tensor& x) { return x.isfinite(); }

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
