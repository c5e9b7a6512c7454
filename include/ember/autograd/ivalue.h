// ember::IValue: the few kinds of value a custom autograd Function keeps in
// ctx->saved_data (a subset of libtorch's c10::IValue, with its accessor names).
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ember/tensor.h"

namespace ember {

class IValue {
 public:
  IValue() = default;
  IValue(bool value) : value_(value) {}  // NOLINT: implicit, as libtorch
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  IValue(T value) : value_(static_cast<int64_t>(value)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  IValue(T value) : value_(static_cast<double>(value)) {}  // NOLINT
  IValue(Tensor value) : value_(std::move(value)) {}              // NOLINT
  IValue(std::string value) : value_(std::move(value)) {}         // NOLINT
  IValue(const char* value) : value_(std::string(value)) {}       // NOLINT
  IValue(std::vector<int64_t> value) : value_(std::move(value)) {}  // NOLINT
  IValue(IntArrayRef value) : value_(value.vec()) {}                // NOLINT: x.sizes(), as libtorch
  IValue(std::vector<double> value) : value_(std::move(value)) {}   // NOLINT

  bool isNone() const { return std::holds_alternative<std::monostate>(value_); }
  bool isInt() const { return std::holds_alternative<int64_t>(value_); }
  bool isDouble() const { return std::holds_alternative<double>(value_); }
  bool isBool() const { return std::holds_alternative<bool>(value_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(value_); }
  bool isDoubleList() const { return std::holds_alternative<std::vector<double>>(value_); }

  // Each throws ember::Error naming both kinds when the value holds another kind.
  int64_t toInt() const { return get<int64_t>("Int"); }
  double toDouble() const { return get<double>("Double"); }
  bool toBool() const { return get<bool>("Bool"); }
  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  const std::string& toStringRef() const { return get<std::string>("String"); }
  const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>("IntList"); }
  const std::vector<double>& toDoubleVector() const { return get<std::vector<double>>("DoubleList"); }
  // The kind held: "None", "Int", "Double", "Bool", "Tensor", "String", "IntList", "DoubleList".
  const char* tagKind() const;

 private:
  template <typename T>
  const T& get(const char* expected) const {
    const T* value = std::get_if<T>(&value_);
    EMBER_CHECK(value != nullptr, "IValue", "expected ", expected, " but got ", tagKind());
    return *value;
  }

  std::variant<std::monostate, int64_t, double, bool, Tensor, std::string, std::vector<int64_t>, std::vector<double>>
      value_;
};

}  // namespace ember
