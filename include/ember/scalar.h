// A number of any dtype, passed to ops like add(x, 2) or full({2}, 1.5).
#pragma once
#include <cstdint>
#include <type_traits>

#include "ember/dtype.h"

namespace ember {

class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T value) : kind_(Kind::Double), d_(static_cast<double>(value)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T value) : kind_(Kind::Int), i_(static_cast<int64_t>(value)) {}  // NOLINT
  Scalar(bool value) : kind_(Kind::Bool), i_(value) {}  // NOLINT
  Scalar(Half value) : Scalar(static_cast<double>(static_cast<float>(value))) {}  // NOLINT
  Scalar(BFloat16 value) : Scalar(static_cast<double>(static_cast<float>(value))) {}  // NOLINT

  bool isFloatingPoint() const { return kind_ == Kind::Double; }
  bool isIntegral(bool include_bool) const { return kind_ == Kind::Int || (include_bool && kind_ == Kind::Bool); }
  bool isBoolean() const { return kind_ == Kind::Bool; }
  double toDouble() const { return kind_ == Kind::Double ? d_ : static_cast<double>(i_); }
  int64_t toLong() const { return kind_ == Kind::Double ? static_cast<int64_t>(d_) : i_; }
  float toFloat() const { return static_cast<float>(toDouble()); }
  int toInt() const { return static_cast<int>(toLong()); }
  bool toBool() const { return kind_ == Kind::Double ? d_ != 0 : i_ != 0; }
  template <typename T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return toBool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(toLong());
    else return static_cast<T>(static_cast<float>(toDouble()));
  }
  // The dtype a tensor made from this scalar alone would have (PyTorch's defaults).
  ScalarType type() const { return kind_ == Kind::Double ? kFloat32 : kind_ == Kind::Int ? kInt64 : kBool; }

 private:
  enum class Kind { Double, Int, Bool } kind_;
  union {
    double d_;
    int64_t i_;
  };
};

template <> inline double Scalar::to<double>() const { return toDouble(); }

}  // namespace ember
