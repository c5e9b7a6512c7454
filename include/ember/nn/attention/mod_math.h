// Values score_mods compute with: Dual numbers for the backward pass, captured tensors
// whose gradients flow, and math functions that take floats, integers and Duals alike.
//
// Note [Score mod gradients]
// A score_mod is a generic lambda `[](auto score, auto b, auto h, auto q_idx, auto kv_idx)`.
// The forward kernel calls it with a float score. The backward calls it with a Dual: the
// value, d mod/d score, and the partial derivatives with respect to the captured-tensor
// elements it read (at most Dual::kMaxParams per score, e.g. bias(h) and scale(h)). Reading
// a CapturedTensor returns a Dual seeded with its own partial; arithmetic carries them along
// (forward-mode differentiation), and the kernel accumulates grad * partial into the
// captured tensor's gradient in a fixed order (deterministic for any thread count). Math
// inside a score_mod must use the functions here (attention::tanh, ...) so Duals work.
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/detail/score_tile.h"
#include "ember/tensor.h"

namespace ember::nn::attention {

struct Dual {
  static constexpr int kMaxParams = ember::detail::kMaxScoreParams;
  double value = 0;
  double dscore = 0;  // d value / d score
  int count = 0;      // partials held; more than kMaxParams sets `overflow`
  bool overflow = false;
  int slot[kMaxParams] = {};      // which captured tensor
  int64_t index[kMaxParams] = {};  // flat element of it
  double partial[kMaxParams] = {};

  Dual() = default;
  Dual(double v) : value(v) {}  // NOLINT: constants mix freely with Duals
  Dual(double v, double d) : value(v), dscore(d) {}
  explicit operator bool() const { return value != 0; }

  // This Dual with every derivative multiplied by `factor` (the chain rule for f(x)).
  Dual chain(double new_value, double factor) const {
    Dual out = *this;
    out.value = new_value;
    out.dscore *= factor;
    for (int i = 0; i < count; ++i) out.partial[i] *= factor;
    return out;
  }
  // Adds factor * (derivatives of other) to this one's.
  void add_derivatives(const Dual& other, double factor) {
    dscore += factor * other.dscore;
    overflow = overflow || other.overflow;
    for (int i = 0; i < other.count; ++i) {
      int at = 0;
      while (at < count && !(slot[at] == other.slot[i] && index[at] == other.index[i])) ++at;
      if (at == count) {
        if (count == kMaxParams) {
          overflow = true;
          continue;
        }
        slot[at] = other.slot[i];
        index[at] = other.index[i];
        partial[at] = 0;
        ++count;
      }
      partial[at] += factor * other.partial[i];
    }
  }
};

template <typename T>
concept Number = std::is_arithmetic_v<T>;

inline Dual operator-(const Dual& a) { return a.chain(-a.value, -1); }
inline Dual operator+(const Dual& a, const Dual& b) {
  Dual out = a.chain(a.value + b.value, 1);
  out.add_derivatives(b, 1);
  return out;
}
inline Dual operator-(const Dual& a, const Dual& b) {
  Dual out = a.chain(a.value - b.value, 1);
  out.add_derivatives(b, -1);
  return out;
}
inline Dual operator*(const Dual& a, const Dual& b) {
  Dual out = a.chain(a.value * b.value, b.value);
  out.add_derivatives(b, a.value);
  return out;
}
inline Dual operator/(const Dual& a, const Dual& b) {
  Dual out = a.chain(a.value / b.value, 1 / b.value);
  out.add_derivatives(b, -a.value / (b.value * b.value));
  return out;
}
template <Number T> Dual operator+(const Dual& a, T b) { return a.chain(a.value + b, 1); }
template <Number T> Dual operator+(T a, const Dual& b) { return b.chain(a + b.value, 1); }
template <Number T> Dual operator-(const Dual& a, T b) { return a.chain(a.value - b, 1); }
template <Number T> Dual operator-(T a, const Dual& b) { return b.chain(a - b.value, -1); }
template <Number T> Dual operator*(const Dual& a, T b) { return a.chain(a.value * b, b); }
template <Number T> Dual operator*(T a, const Dual& b) { return b.chain(a * b.value, a); }
template <Number T> Dual operator/(const Dual& a, T b) { return a.chain(a.value / b, 1.0 / b); }
template <Number T> Dual operator/(T a, const Dual& b) { return b.chain(a / b.value, -a / (b.value * b.value)); }

inline double value_of(const Dual& x) { return x.value; }
template <Number T> T value_of(T x) { return x; }

#define EMBER_DUAL_COMPARE(op)                                                             \
  inline bool operator op(const Dual& a, const Dual& b) { return a.value op b.value; }     \
  template <Number T> bool operator op(const Dual& a, T b) { return a.value op b; }        \
  template <Number T> bool operator op(T a, const Dual& b) { return a op b.value; }
EMBER_DUAL_COMPARE(<)
EMBER_DUAL_COMPARE(<=)
EMBER_DUAL_COMPARE(>)
EMBER_DUAL_COMPARE(>=)
EMBER_DUAL_COMPARE(==)
EMBER_DUAL_COMPARE(!=)
#undef EMBER_DUAL_COMPARE

// Math for score mods: floats stay floats, integers compute in double, Duals carry
// derivatives. f(x) and its derivative df(x, f(x)).
#define EMBER_DUAL_FUNCTION(name, derivative)                                                           \
  inline Dual name(const Dual& x) {                                                                      \
    const double v = x.value, y = std::name(v);                                                          \
    return x.chain(y, (derivative));                                                                     \
  }                                                                                                      \
  template <Number T> auto name(T x) {                                                                   \
    if constexpr (std::is_floating_point_v<T>) return std::name(x);                                      \
    else return std::name(static_cast<double>(x));                                                       \
  }
EMBER_DUAL_FUNCTION(exp, y)
EMBER_DUAL_FUNCTION(log, 1 / v)
EMBER_DUAL_FUNCTION(sqrt, 0.5 / y)
EMBER_DUAL_FUNCTION(sin, std::cos(v))
EMBER_DUAL_FUNCTION(cos, -std::sin(v))
EMBER_DUAL_FUNCTION(tan, 1 + y * y)
EMBER_DUAL_FUNCTION(tanh, 1 - y * y)
EMBER_DUAL_FUNCTION(abs, v < 0 ? -1.0 : 1.0)
#undef EMBER_DUAL_FUNCTION

// A tensor read inside a score_mod or mask_mod: `bias(h)` or `table(h, q_idx - kv_idx)`.
// Reads return a Dual carrying d/d(element); when the tensor is passed to flex_attention in
// FlexAttentionOptions::captured and requires grad, its gradient is computed (Note [Score
// mod gradients]). Values are read from a float64 copy, taken at construction and again by
// every flex_attention call that lists the tensor in `captured`.
class CapturedTensor {
 public:
  CapturedTensor() = default;
  explicit CapturedTensor(const Tensor& tensor);

  template <typename... I>
  Dual operator()(I... indices) const {
    const int64_t flat = flat_index(static_cast<int64_t>(indices)...);
    if (flat < 0 || flat >= numel()) throw_out_of_range(flat);
    Dual out(state_->values[static_cast<size_t>(flat)]);
    out.count = 1;
    out.slot[0] = state_->slot;
    out.index[0] = flat;
    out.partial[0] = 1;
    return out;
  }

  const Tensor& tensor() const { return state_->tensor; }
  // Re-reads the tensor's values; flex_attention does it for the tensors it is given.
  void refresh() const;
  // Where its gradients go among the captured tensors of the current call (-1: none).
  void set_slot(int slot) const { state_->slot = slot; }
  int64_t numel() const { return static_cast<int64_t>(state_->values.size()); }

 private:
  struct State {
    Tensor tensor;
    std::vector<double> values;
    std::vector<int64_t> strides;
    int slot = -1;
  };

  template <typename... I>
  int64_t flat_index(I... indices) const {
    const int64_t idx[] = {indices...};
    int64_t flat = 0;
    for (size_t d = 0; d < sizeof...(I); ++d) flat += idx[d] * state_->strides[d];
    return flat;
  }

  [[noreturn]] void throw_out_of_range(int64_t flat) const;

  std::shared_ptr<State> state_;
};

}  // namespace ember::nn::attention
