// The argument of ember::tensor: one value, a braced list of them nested to any depth, an
// ArrayRef or a std::vector, as libtorch's torch::detail::TensorDataContainer.
// tensor({{1, 2}, {3, 4}}) builds a list of two lists of two values; each list checks when it
// is built that its elements have the same sizes and the same element type (libtorch's
// errors: "Expected all sub-lists to have sizes: ...", "Expected all elements of the tensor to
// have the same scalar type: ..."). An empty list `{}` has sizes {0} and the default dtype.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/array_ref.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember::detail {

// A 1-dim tensor of `count` values of `dtype` copied from `values` (ArrayRef and vector data).
Tensor tensor_from_values(const void* values, int64_t count, ScalarType dtype);

// The dtype torch::tensor gives values of C++ type `source` when no dtype is named: int and
// int64 make int64, float and double the default dtype, others their own (libtorch's rule).
ScalarType tensor_default_dtype(ScalarType source);

class TensorDataContainer {
 public:
  // An empty braced list.
  TensorDataContainer() : sizes_{0}, scalar_type_(get_default_dtype_as_scalartype()), kind_(Kind::InitList) {}
  TensorDataContainer(bool value) : scalar_type_(kBool), scalar_(value) {}            // NOLINT
  TensorDataContainer(uint8_t value) : scalar_type_(kUInt8), scalar_(value) {}        // NOLINT
  TensorDataContainer(int8_t value) : scalar_type_(kInt8), scalar_(value) {}          // NOLINT
  TensorDataContainer(int32_t value) : scalar_type_(kInt32), scalar_(value) {}        // NOLINT
  TensorDataContainer(int64_t value) : scalar_type_(kInt64), scalar_(value) {}        // NOLINT
  TensorDataContainer(Half value) : scalar_type_(kFloat16), scalar_(value) {}         // NOLINT
  TensorDataContainer(BFloat16 value) : scalar_type_(kBFloat16), scalar_(value) {}    // NOLINT
  TensorDataContainer(float value) : scalar_type_(kFloat32), scalar_(value) {}        // NOLINT
  TensorDataContainer(double value) : scalar_type_(kFloat64), scalar_(value) {}       // NOLINT
  TensorDataContainer(std::initializer_list<TensorDataContainer> init_list)          // NOLINT
      : scalar_type_(get_default_dtype_as_scalartype()), init_list_(init_list), kind_(Kind::InitList) {
    if (init_list_.empty()) {  // an explicitly empty initializer_list, as `{}`
      sizes_ = {0};
      return;
    }
    const TensorDataContainer& first = init_list_.front();
    scalar_type_ = first.scalar_type();
    for (const TensorDataContainer& element : init_list_) {
      EMBER_CHECK(element.sizes() == first.sizes(), "tensor", "Expected all sub-lists to have sizes: ",
                  join(first.sizes()), " (e.g. ", first, "), but got sub-list ", element,
                  " with sizes: ", join(element.sizes()));
      EMBER_CHECK(element.scalar_type() == first.scalar_type(), "tensor",
                  "Expected all elements of the tensor to have the same scalar type: ", first.scalar_type(),
                  ", but got element of scalar type: ", element.scalar_type());
    }
    sizes_.push_back(static_cast<int64_t>(init_list_.size()));
    sizes_.insert(sizes_.end(), first.sizes().begin(), first.sizes().end());
  }
  // One list level of values of any of the nine element types, copied now.
  template <typename T, std::enable_if_t<std::is_same_v<decltype(CppTypeToScalarType<T>::value), const ScalarType>,
                                         int> = 0>
  TensorDataContainer(ArrayRef<T> values)  // NOLINT
      : TensorDataContainer(tensor_from_values(values.data(), static_cast<int64_t>(values.size()),
                                               CppTypeToScalarType<T>::value)) {}
  template <typename T, std::enable_if_t<std::is_same_v<decltype(CppTypeToScalarType<T>::value), const ScalarType>,
                                         int> = 0>
  TensorDataContainer(const std::vector<T>& values) : TensorDataContainer(ArrayRef<T>(values)) {}  // NOLINT
  TensorDataContainer(const std::vector<bool>& values)  // NOLINT
      : TensorDataContainer(bool_values(values)) {}

  bool is_scalar() const { return kind_ == Kind::Scalar; }
  bool is_init_list() const { return kind_ == Kind::InitList; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  // The C++ type of the values (int for 1, double for 1.5), not the tensor's dtype.
  ScalarType scalar_type() const { return scalar_type_; }

  const Scalar& scalar() const {
    EMBER_CHECK(is_scalar(), "TensorDataContainer",
                "Can only call `scalar()` on a TensorDataContainer that has `is_scalar() == true`");
    return scalar_;
  }
  const std::vector<TensorDataContainer>& init_list() const {
    EMBER_CHECK(is_init_list(), "TensorDataContainer",
                "Can only call `init_list()` on a TensorDataContainer that has `is_init_list() == true`");
    return init_list_;
  }
  const Tensor& tensor() const {
    EMBER_CHECK(is_tensor(), "TensorDataContainer",
                "Can only call `tensor()` on a TensorDataContainer that has `is_tensor() == true`");
    return tensor_;
  }

  // The values as libtorch writes them: 1.1, {1, 2}, {{1.5, 2.5}}.
  friend std::ostream& operator<<(std::ostream& out, const TensorDataContainer& data) {
    data.pretty_print_recursive(out);
    return out;
  }
  void pretty_print_recursive(std::ostream& out) const;

 private:
  explicit TensorDataContainer(Tensor values)
      : sizes_{values.numel()}, scalar_type_(values.scalar_type()), tensor_(std::move(values)), kind_(Kind::Tensor) {}
  static Tensor bool_values(const std::vector<bool>& values) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return tensor_from_values(bytes.data(), static_cast<int64_t>(bytes.size()), kBool);
  }
  // Sizes as libtorch's messages write them: "2 3".
  static std::string join(const std::vector<int64_t>& sizes) {
    std::string out;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (i > 0) out += ' ';
      out += std::to_string(sizes[i]);
    }
    return out;
  }

  enum class Kind { Scalar, InitList, Tensor };
  std::vector<int64_t> sizes_;
  ScalarType scalar_type_;
  Scalar scalar_;
  std::vector<TensorDataContainer> init_list_;
  Tensor tensor_;
  Kind kind_ = Kind::Scalar;
};

}  // namespace ember::detail
