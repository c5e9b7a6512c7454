// Elementwise inner loops, one instantiation per (op, dtype), built per instruction set.
// Contiguous runs and runs with a broadcast (stride-0) operand get plain indexed loops the
// compiler vectorizes; other strides take the generic loop.
#include <type_traits>

#include "cpu/elementwise_ops.h"
#include "cpu/simd/float_vector.h"
#include "cpu/softmax.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

template <typename A>
struct Math {
  static A exp(A x) { return __builtin_exp(x); }
  static A log(A x) { return __builtin_log(x); }
  static A log1p(A x) { return __builtin_log1p(x); }
  static A expm1(A x) { return __builtin_expm1(x); }
  static A sqrt(A x) { return __builtin_sqrt(x); }
  static A sin(A x) { return __builtin_sin(x); }
  static A cos(A x) { return __builtin_cos(x); }
  static A tan(A x) { return __builtin_tan(x); }
  static A tanh(A x) { return __builtin_tanh(x); }
  static A erf(A x) { return __builtin_erf(x); }
  static A pow(A x, A y) { return __builtin_pow(x, y); }
  static A atan2(A x, A y) { return __builtin_atan2(x, y); }
  static A hypot(A x, A y) { return __builtin_hypot(x, y); }
  static A fmod(A x, A y) { return __builtin_fmod(x, y); }
  static A floor(A x) { return __builtin_floor(x); }
  static A ceil(A x) { return __builtin_ceil(x); }
  static A trunc(A x) { return __builtin_trunc(x); }
  static A nearbyint(A x) { return __builtin_nearbyint(x); }
};
template <>
struct Math<float> {
  static float exp(float x) { return __builtin_expf(x); }
  static float log(float x) { return __builtin_logf(x); }
  static float log1p(float x) { return __builtin_log1pf(x); }
  static float expm1(float x) { return __builtin_expm1f(x); }
  static float sqrt(float x) { return __builtin_sqrtf(x); }
  static float sin(float x) { return __builtin_sinf(x); }
  static float cos(float x) { return __builtin_cosf(x); }
  static float tan(float x) { return __builtin_tanf(x); }
  static float tanh(float x) { return __builtin_tanhf(x); }
  static float erf(float x) { return __builtin_erff(x); }
  static float pow(float x, float y) { return __builtin_powf(x, y); }
  static float atan2(float x, float y) { return __builtin_atan2f(x, y); }
  static float hypot(float x, float y) { return __builtin_hypotf(x, y); }
  static float fmod(float x, float y) { return __builtin_fmodf(x, y); }
  static float floor(float x) { return __builtin_floorf(x); }
  static float ceil(float x) { return __builtin_ceilf(x); }
  static float trunc(float x) { return __builtin_truncf(x); }
  static float nearbyint(float x) { return __builtin_nearbyintf(x); }
};

// For the static_assert that ends each formula chain: a row of the op table without a branch.
template <auto>
constexpr bool kAlwaysFalse = false;

template <typename A>
static inline bool is_nan(A x) {
  if constexpr (std::is_floating_point_v<A>) return x != x;
  else return false;
}

template <typename A>
static inline A int_pow(A base, A exp) {
  if (exp < 0) return base == 1 ? A(1) : base == A(-1) ? (exp % 2 == 0 ? A(1) : A(-1)) : A(0);
  A result = 1;
  while (exp) {
    if (exp & 1) result *= base;
    base *= base;
    exp >>= 1;
  }
  return result;
}

// C's remainder (sign of the dividend). Integer x % -1 is 0, spelled out: INT_MIN % -1 overflows.
// The caller rejects integer division by zero.
template <typename A>
static inline A c_remainder(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) return Math<A>::fmod(a, b);
  else return b == A(-1) ? A(0) : A(a % b);
}

template <BinaryOp op, typename A>
static inline A binary(A a, A b, A alpha) {
  if constexpr (op == BinaryOp::Add) return a + alpha * b;
  else if constexpr (op == BinaryOp::Sub) return a - alpha * b;
  else if constexpr (op == BinaryOp::Mul) return a * b;
  else if constexpr (op == BinaryOp::Div) return a / b;
  else if constexpr (op == BinaryOp::Maximum) return is_nan(a) ? a : is_nan(b) ? b : (a > b ? a : b);
  else if constexpr (op == BinaryOp::Minimum) return is_nan(a) ? a : is_nan(b) ? b : (a < b ? a : b);
  else if constexpr (op == BinaryOp::Pow) {
    if constexpr (std::is_floating_point_v<A>) return Math<A>::pow(a, b);
    else return int_pow(a, b);
  } else if constexpr (op == BinaryOp::Fmod) {
    return c_remainder(a, b);
  } else if constexpr (op == BinaryOp::Remainder) {
    // Python's modulo: the result takes the sign of the divisor.
    A r = c_remainder(a, b);
    return r != A(0) && ((r < A(0)) != (b < A(0))) ? A(r + b) : r;
  } else if constexpr (op == BinaryOp::BitwiseAnd) return A(a & b);
  else if constexpr (op == BinaryOp::BitwiseOr) return A(a | b);
  else if constexpr (op == BinaryOp::BitwiseXor) return A(a ^ b);
  else if constexpr (op == BinaryOp::Atan2) return Math<A>::atan2(a, b);
  else if constexpr (op == BinaryOp::Logaddexp) {
    // max + log1p(exp(-|a - b|)); equal infinities are their own result (inf - inf is NaN).
    if (a == b && a - a != a - a) return a;
    const A larger = a < b ? b : a, distance = a < b ? b - a : a - b;
    return larger + Math<A>::log1p(Math<A>::exp(-distance));
  } else if constexpr (op == BinaryOp::Hypot) {
    return Math<A>::hypot(a, b);
  } else {
    static_assert(kAlwaysFalse<op>, "an op table row without its scalar formula");
  }
}

// The binary ops whose bf16 loop runs on 8-lane vectors: those whose formula is plain float
// arithmetic, in the AVX2 build only. GCC leaves the bf16 loop scalar there (bf16 add cost 1.7x
// float32's); the AVX-512 build's own 16-lane loop is faster than 8 lanes, and at baseline the
// vectors' widening and narrowing cost more than the scalar loop.
template <BinaryOp op>
constexpr bool kVectorBinary =
#if defined(__AVX2__) && !defined(__AVX512F__)
    op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div;
#else
    false;
#endif

template <typename T, BinaryOp op>
void binary_kernel(char** data, const int64_t* s, int64_t n, const void* params) {
  using A = acc_t<T>;
  const A alpha = static_cast<A>(static_cast<const ElementwiseParams*>(params)->alpha);
  T* out = reinterpret_cast<T*>(data[0]);
  const T* a = reinterpret_cast<const T*>(data[1]);
  const T* b = reinterpret_cast<const T*>(data[2]);
  constexpr int64_t e = sizeof(T);
  if (s[0] == e && s[1] == e && s[2] == e) {
    int64_t i = 0;
    if constexpr (std::is_same_v<T, BFloat16> && kVectorBinary<op>) {
      // 8 lanes at a time, each lane the scalar formula, rounded in pairs (Note [Narrowing pairs]).
      const Floats alphas = splat<Floats>(alpha);
      if constexpr (kNarrowsInPairs)
        for (; i + 2 * kWidth <= n; i += 2 * kWidth)
          narrow_bf16_pair(reinterpret_cast<uint16_t*>(out + i),
                           binary<op, Floats>(load_as<Floats>(a + i), load_as<Floats>(b + i), alphas),
                           binary<op, Floats>(load_as<Floats>(a + i + kWidth), load_as<Floats>(b + i + kWidth), alphas));
      for (; i + kWidth <= n; i += kWidth)
        store_as(out + i, binary<op, Floats>(load_as<Floats>(a + i), load_as<Floats>(b + i), splat<Floats>(alpha)));
    }
    for (; i < n; ++i) store(out + i, binary<op, A>(load(a + i), load(b + i), alpha));
  } else if (s[0] == e && s[1] == e && s[2] == 0) {
    const A bv = load(b);
    for (int64_t i = 0; i < n; ++i) store(out + i, binary<op, A>(load(a + i), bv, alpha));
  } else if (s[0] == e && s[1] == 0 && s[2] == e) {
    const A av = load(a);
    for (int64_t i = 0; i < n; ++i) store(out + i, binary<op, A>(av, load(b + i), alpha));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      store(reinterpret_cast<T*>(data[0] + i * s[0]),
            binary<op, A>(load(reinterpret_cast<const T*>(data[1] + i * s[1])),
                          load(reinterpret_cast<const T*>(data[2] + i * s[2])), alpha));
    }
  }
}

template <CompareOp op, typename A>
static inline bool compare(A a, A b) {
  if constexpr (op == CompareOp::Eq) return a == b;
  else if constexpr (op == CompareOp::Ne) return a != b;
  else if constexpr (op == CompareOp::Lt) return a < b;
  else if constexpr (op == CompareOp::Le) return a <= b;
  else if constexpr (op == CompareOp::Gt) return a > b;
  else if constexpr (op == CompareOp::Ge) return a >= b;
  else if constexpr (op == CompareOp::LogicalAnd) return (a != A(0)) && (b != A(0));
  else if constexpr (op == CompareOp::LogicalOr) return (a != A(0)) || (b != A(0));
  else return (a != A(0)) != (b != A(0));
}

template <typename T, CompareOp op>
void compare_kernel(char** data, const int64_t* s, int64_t n, const void*) {
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<bool*>(data[0] + i * s[0]) = compare<op>(load(reinterpret_cast<const T*>(data[1] + i * s[1])),
                                                               load(reinterpret_cast<const T*>(data[2] + i * s[2])));
  }
}

template <UnaryOp op, typename A>
static inline A unary(A x, const ElementwiseParams& p) {
  using M = Math<A>;
  if constexpr (op == UnaryOp::Exp) return M::exp(x);
  else if constexpr (op == UnaryOp::Log) return M::log(x);
  else if constexpr (op == UnaryOp::Log1p) return M::log1p(x);
  else if constexpr (op == UnaryOp::Expm1) return M::expm1(x);
  else if constexpr (op == UnaryOp::Sqrt) return M::sqrt(x);
  else if constexpr (op == UnaryOp::Rsqrt) return A(1) / M::sqrt(x);
  else if constexpr (op == UnaryOp::Abs) return x < A(0) ? -x : x;
  else if constexpr (op == UnaryOp::Neg) return -x;
  else if constexpr (op == UnaryOp::Sin) return M::sin(x);
  else if constexpr (op == UnaryOp::Cos) return M::cos(x);
  else if constexpr (op == UnaryOp::Tan) return M::tan(x);
  else if constexpr (op == UnaryOp::Tanh) return M::tanh(x);
  else if constexpr (op == UnaryOp::Sigmoid) return A(1) / (A(1) + M::exp(-x));
  else if constexpr (op == UnaryOp::Relu) return is_nan(x) ? x : (x > A(0) ? x : A(0));
  else if constexpr (op == UnaryOp::GeluErf) return A(0.5) * x * (A(1) + M::erf(x * A(0.70710678118654752440)));
  else if constexpr (op == UnaryOp::GeluTanh) {
    const A inner = A(0.79788456080286535588) * (x + A(0.044715) * x * x * x);
    return A(0.5) * x * (A(1) + M::tanh(inner));
  } else if constexpr (op == UnaryOp::Silu) return x / (A(1) + M::exp(-x));
  else if constexpr (op == UnaryOp::Erf) return M::erf(x);
  else if constexpr (op == UnaryOp::Sign) return is_nan(x) ? x : A((x > A(0)) - (x < A(0)));
  else if constexpr (op == UnaryOp::Reciprocal) return A(1) / x;
  else if constexpr (op == UnaryOp::Floor) return M::floor(x);
  else if constexpr (op == UnaryOp::Ceil) return M::ceil(x);
  else if constexpr (op == UnaryOp::Trunc) return M::trunc(x);
  else if constexpr (op == UnaryOp::Frac) return x - M::trunc(x);
  else if constexpr (op == UnaryOp::Round) {
    // As PyTorch: half to even, scaled by 10^|decimals| (divide first for negative decimals).
    const int decimals = static_cast<int>(p.alpha);
    if (decimals == 0) return M::nearbyint(x);
    A scale = 1;
    for (int i = 0; i < (decimals > 0 ? decimals : -decimals); ++i) scale *= A(10);
    return decimals > 0 ? M::nearbyint(x * scale) / scale : M::nearbyint(x / scale) * scale;
  } else if constexpr (op == UnaryOp::PowScalar) {
    const A e = static_cast<A>(p.alpha);
    if (e == A(2)) return x * x;
    return M::pow(x, e);
  } else if constexpr (op == UnaryOp::Clamp) {
    A y = x;
    if (p.has_low && y < static_cast<A>(p.low)) y = static_cast<A>(p.low);
    if (p.has_high && y > static_cast<A>(p.high)) y = static_cast<A>(p.high);
    return is_nan(x) ? x : y;
  } else {
    static_assert(kAlwaysFalse<op>, "an op table row without its scalar formula");
  }
}

template <UnaryOp op, typename A>
static inline A unary_int(A x, const ElementwiseParams& p) {
  if constexpr (op == UnaryOp::Abs) return x < A(0) ? A(-x) : x;
  else if constexpr (op == UnaryOp::Neg) return A(-x);
  else if constexpr (op == UnaryOp::Relu) return x > A(0) ? x : A(0);
  else if constexpr (op == UnaryOp::Sign) return A((x > A(0)) - (x < A(0)));
  else if constexpr (op == UnaryOp::PowScalar) return int_pow<A>(x, static_cast<A>(p.alpha));
  else if constexpr (op == UnaryOp::Floor || op == UnaryOp::Ceil || op == UnaryOp::Trunc || op == UnaryOp::Round) return x;
  else if constexpr (op == UnaryOp::BitwiseNot) {
    if constexpr (std::is_same_v<A, bool>) return !x;
    else return A(~x);
  } else if constexpr (op == UnaryOp::Clamp) {
    A y = x;
    if (p.has_low && y < static_cast<A>(p.low)) y = static_cast<A>(p.low);
    if (p.has_high && y > static_cast<A>(p.high)) y = static_cast<A>(p.high);
    return y;
  } else {
    static_assert(kAlwaysFalse<op>, "an integer op table row without its scalar formula");
  }
}

template <typename T, UnaryOp op>
void unary_kernel(char** data, const int64_t* s, int64_t n, const void* params) {
  using A = acc_t<T>;
  const ElementwiseParams& p = *static_cast<const ElementwiseParams*>(params);
  auto f = [&](A x) {
    if constexpr (std::is_floating_point_v<A>) return unary<op, A>(x, p);
    else return unary_int<op, A>(x, p);
  };
  constexpr int64_t e = sizeof(T);
  T* out = reinterpret_cast<T*>(data[0]);
  const T* in = reinterpret_cast<const T*>(data[1]);
  if constexpr (op == UnaryOp::Exp && std::is_same_v<T, float>) {
    // The softmax kernels' vectorized polynomial (Note [Vectorizable expf]), not libm's scalar expf.
    if (s[0] == e && s[1] == e) return exp_f32(in, out, n);
  }
  if (s[0] == e && s[1] == e) {
    for (int64_t i = 0; i < n; ++i) store(out + i, f(load(in + i)));
  } else {
    for (int64_t i = 0; i < n; ++i)
      store(reinterpret_cast<T*>(data[0] + i * s[0]), f(load(reinterpret_cast<const T*>(data[1] + i * s[1]))));
  }
}

template <PredicateOp op, typename A>
static inline bool predicate(A x) {
  if constexpr (op == PredicateOp::LogicalNot) return x == A(0);
  else if constexpr (!std::is_floating_point_v<A>) return op == PredicateOp::IsFinite;
  else if constexpr (op == PredicateOp::IsNan) return x != x;
  else if constexpr (op == PredicateOp::IsInf) return x == x && (x - x) != (x - x);
  else return (x - x) == (x - x);
}

template <typename T, PredicateOp op>
void predicate_kernel(char** data, const int64_t* s, int64_t n, const void*) {
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<bool*>(data[0] + i * s[0]) = predicate<op>(load(reinterpret_cast<const T*>(data[1] + i * s[1])));
}

template <typename From, typename To>
void cast_kernel(char** data, const int64_t* s, int64_t n, const void*) {
  using A = acc_t<From>;
  auto convert = [](A v) {
    if constexpr (std::is_same_v<To, bool>) return v != A(0);
    else return v;
  };
  To* out = reinterpret_cast<To*>(data[0]);
  const From* in = reinterpret_cast<const From*>(data[1]);
  if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
    for (int64_t i = 0; i < n; ++i) store(out + i, convert(load(in + i)));
  } else if (s[0] == sizeof(To) && s[1] == 0) {
    const auto v = convert(load(in));
    for (int64_t i = 0; i < n; ++i) store(out + i, v);
  } else {
    for (int64_t i = 0; i < n; ++i)
      store(reinterpret_cast<To*>(data[0] + i * s[0]), convert(load(reinterpret_cast<const From*>(data[1] + i * s[1]))));
  }
}

// A same-dtype copy moves bits, one kernel per element width: a bf16 or f16 NaN keeps its
// payload, as PyTorch's copy does, and no element goes through float32 and back.
template <typename U>
void copy_bits_kernel(char** data, const int64_t* s, int64_t n, const void*) {
  constexpr int64_t e = sizeof(U);
  if (s[0] == e && s[1] == e) {
    if (n > 0) std::memcpy(data[0], data[1], static_cast<size_t>(n * e));
  } else {
    for (int64_t i = 0; i < n; ++i) std::memcpy(data[0] + i * s[0], data[1] + i * s[1], e);
  }
}

template <typename T>
void where_kernel(char** data, const int64_t* s, int64_t n, const void*) {
  for (int64_t i = 0; i < n; ++i) {
    const bool c = *reinterpret_cast<const bool*>(data[1] + i * s[1]);
    const T* src = reinterpret_cast<const T*>(c ? data[2] + i * s[2] : data[3] + i * s[3]);
    *reinterpret_cast<T*>(data[0] + i * s[0]) = *src;
  }
}

// Calls f(T{}) with the C++ type of `dtype`.
template <typename F>
InnerLoop by_dtype(ScalarType dtype, F f) {
  switch (dtype) {
    case ScalarType::Bool: return f(bool{});
    case ScalarType::UInt8: return f(uint8_t{});
    case ScalarType::Int8: return f(int8_t{});
    case ScalarType::Int32: return f(int32_t{});
    case ScalarType::Int64: return f(int64_t{});
    case ScalarType::Float16: return f(Half{});
    case ScalarType::BFloat16: return f(BFloat16{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
  }
  return nullptr;
}

// Calls f(U{}) with U the unsigned integer as wide as `dtype`'s elements, for kernels that
// move bytes only.
template <typename F>
InnerLoop by_element_width(ScalarType dtype, F f) {
  return by_dtype(dtype, [&f](auto tag) -> InnerLoop {
    constexpr size_t width = sizeof(decltype(tag));
    if constexpr (width == 1) return f(uint8_t{});
    else if constexpr (width == 2) return f(uint16_t{});
    else if constexpr (width == 4) return f(uint32_t{});
    else return f(uint64_t{});
  });
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Whether an op of dtype rule `rule` (the op table's column) has a kernel for element type T.
template <typename T>
constexpr bool has_kernel(detail::OpDtype rule) {
  using detail::OpDtype;
  if constexpr (std::is_same_v<T, bool>) return rule == OpDtype::Integral;
  else if constexpr (is_float_v<T>) return rule != OpDtype::Integral;
  else return rule == OpDtype::Numeric || rule == OpDtype::Integral;
}

constexpr detail::OpDtype dtype_rule(UnaryOp op) { return kUnaryRows[static_cast<int>(op)].dtype; }
constexpr detail::OpDtype dtype_rule(BinaryOp op) { return kBinaryRows[static_cast<int>(op)].dtype; }
template <typename T, UnaryOp kOp>
constexpr InnerLoop kernel_of() {
  return unary_kernel<T, kOp>;
}
template <typename T, BinaryOp kOp>
constexpr InnerLoop kernel_of() {
  return binary_kernel<T, kOp>;
}

// The kernel of op kOp (unary or binary) for `dtype`, where the op's dtype rule has one.
template <auto kOp>
InnerLoop op_loop(ScalarType dtype) {
  return by_dtype(dtype, [](auto tag) -> InnerLoop {
    using T = decltype(tag);
    if constexpr (has_kernel<T>(dtype_rule(kOp))) return kernel_of<T, kOp>();
    else return nullptr;
  });
}

}  // namespace

template <UnaryOp kOp>
InnerLoop unary_op_loop(ScalarType dtype) {
  return op_loop<kOp>(dtype);
}
template <BinaryOp kOp>
InnerLoop binary_op_loop(ScalarType dtype) {
  return op_loop<kOp>(dtype);
}

#define EMBER_UNARY(name, program, Kernel, ...) template InnerLoop unary_op_loop<UnaryOp::Kernel>(ScalarType);
#define EMBER_UNARY_WITH_PARAMS(name, program, Kernel, ...) \
  template InnerLoop unary_op_loop<UnaryOp::Kernel>(ScalarType);
#define EMBER_BINARY(name, program, Kernel, ...) template InnerLoop binary_op_loop<BinaryOp::Kernel>(ScalarType);
#include "ember/detail/op_table.def"

InnerLoop unary_loop(UnaryOp op, ScalarType dtype) {
  switch (op) {
#define EMBER_UNARY(name, program, Kernel, ...) \
  case UnaryOp::Kernel: return unary_op_loop<UnaryOp::Kernel>(dtype);
#define EMBER_UNARY_WITH_PARAMS(name, program, Kernel, ...) \
  case UnaryOp::Kernel: return unary_op_loop<UnaryOp::Kernel>(dtype);
#include "ember/detail/op_table.def"
  }
  return nullptr;
}

InnerLoop binary_loop(BinaryOp op, ScalarType dtype) {
  switch (op) {
#define EMBER_BINARY(name, program, Kernel, ...) \
  case BinaryOp::Kernel: return binary_op_loop<BinaryOp::Kernel>(dtype);
#include "ember/detail/op_table.def"
  }
  return nullptr;
}

InnerLoop compare_loop(CompareOp op, ScalarType dtype) {
  return by_dtype(dtype, [op](auto tag) -> InnerLoop {
    using T = decltype(tag);
    switch (op) {
#define EMBER_COMPARE(name, Kernel, api) \
  case CompareOp::Kernel: return compare_kernel<T, CompareOp::Kernel>;
#include "ember/detail/op_table.def"
    }
    return nullptr;
  });
}

InnerLoop predicate_loop(PredicateOp op, ScalarType dtype) {
  return by_dtype(dtype, [op](auto tag) -> InnerLoop {
    using T = decltype(tag);
    switch (op) {
#define EMBER_PREDICATE(name, Kernel) \
  case PredicateOp::Kernel: return predicate_kernel<T, PredicateOp::Kernel>;
#include "ember/detail/op_table.def"
    }
    return nullptr;
  });
}

InnerLoop rsqrt_loop(ScalarType dtype) {
  if (dtype == ScalarType::Float64) return unary_kernel<double, UnaryOp::Rsqrt>;
  return dtype == ScalarType::Float32 ? unary_kernel<float, UnaryOp::Rsqrt> : nullptr;
}

InnerLoop gelu_loop(bool approximate_tanh, ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float32:
      return approximate_tanh ? unary_kernel<float, UnaryOp::GeluTanh> : unary_kernel<float, UnaryOp::GeluErf>;
    case ScalarType::BFloat16:
      return approximate_tanh ? unary_kernel<BFloat16, UnaryOp::GeluTanh> : unary_kernel<BFloat16, UnaryOp::GeluErf>;
    default: return nullptr;
  }
}

InnerLoop copy_loop(ScalarType dtype) {
  return by_element_width(dtype, [](auto bits) -> InnerLoop { return copy_bits_kernel<decltype(bits)>; });
}

InnerLoop cast_loop(ScalarType from, ScalarType to) {
  if (from == to) return copy_loop(from);
  return by_dtype(from, [to](auto from_tag) -> InnerLoop {
    using From = decltype(from_tag);
    return by_dtype(to, [](auto to_tag) -> InnerLoop { return cast_kernel<From, decltype(to_tag)>; });
  });
}

InnerLoop where_loop(ScalarType dtype) {
  // Selecting moves bytes only, so one kernel per element width serves every dtype.
  return by_element_width(dtype, [](auto bits) -> InnerLoop { return where_kernel<decltype(bits)>; });
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
