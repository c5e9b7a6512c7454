// The argument of ember::tensor: one value or a braced list of them, nested to any depth, as
// libtorch's torch::detail::TensorDataContainer. tensor({{1, 2}, {3, 4}}) builds a list of two
// lists of two values; ember::tensor checks the nesting is rectangular and converts once.
#pragma once
#include <initializer_list>
#include <utility>
#include <vector>

#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember::detail {

class TensorDataContainer {
 public:
  // One value; `source_type` is its C++ type, which decides the default dtype.
  TensorDataContainer(bool value) : scalar_(value), source_type_(kBool) {}                  // NOLINT
  TensorDataContainer(uint8_t value) : scalar_(value), source_type_(kUInt8) {}              // NOLINT
  TensorDataContainer(int8_t value) : scalar_(value), source_type_(kInt8) {}                // NOLINT
  TensorDataContainer(int32_t value) : scalar_(value), source_type_(kInt32) {}              // NOLINT
  TensorDataContainer(int64_t value) : scalar_(value), source_type_(kInt64) {}              // NOLINT
  TensorDataContainer(Half value) : scalar_(value), source_type_(kFloat16) {}               // NOLINT
  TensorDataContainer(BFloat16 value) : scalar_(value), source_type_(kBFloat16) {}          // NOLINT
  TensorDataContainer(float value) : scalar_(value), source_type_(kFloat32) {}              // NOLINT
  TensorDataContainer(double value) : scalar_(value), source_type_(kFloat64) {}             // NOLINT
  TensorDataContainer(std::initializer_list<TensorDataContainer> elements)                 // NOLINT
      : elements_(elements), kind_(Kind::List) {}
  // A vector is one list level, kept as a 1-dim tensor of its C++ type.
  TensorDataContainer(const std::vector<double>& values);   // NOLINT
  TensorDataContainer(const std::vector<float>& values);    // NOLINT
  TensorDataContainer(const std::vector<int64_t>& values);  // NOLINT
  TensorDataContainer(const std::vector<int32_t>& values);  // NOLINT

  bool is_scalar() const { return kind_ == Kind::Scalar; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  const Scalar& scalar() const { return scalar_; }
  ScalarType source_type() const { return source_type_; }
  const std::vector<TensorDataContainer>& elements() const { return elements_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  explicit TensorDataContainer(Tensor values) : source_type_(values.scalar_type()), tensor_(std::move(values)),
                                                kind_(Kind::Tensor) {}

  enum class Kind { Scalar, List, Tensor };
  Scalar scalar_;
  ScalarType source_type_ = kFloat32;
  std::vector<TensorDataContainer> elements_;
  Tensor tensor_;
  Kind kind_ = Kind::Scalar;
};

}  // namespace ember::detail
