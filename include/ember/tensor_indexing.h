// libtorch's torch::indexing: the index list of Tensor::index and Tensor::index_put_, as
// x.index({Slice(1, None), None, Ellipsis, 0, mask, idx}) for Python's x[1:, None, ..., 0, mask, idx].
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "ember/tensor.h"

namespace ember::indexing {

constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
constexpr EllipsisIndexType Ellipsis{};

// start:stop:step; an unset bound means the whole range, as Python's.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

enum class TensorIndexType { None, Ellipsis, Integer, Boolean, Slice, Tensor };

class TensorIndex {
 public:
  TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}  // NOLINT
  TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}  // NOLINT
  TensorIndex(const char* text) : type_(TensorIndexType::Ellipsis) { check_ellipsis(text); }  // NOLINT
  TensorIndex(int64_t integer) : type_(TensorIndexType::Integer), integer_(integer) {}  // NOLINT
  TensorIndex(int integer) : TensorIndex(static_cast<int64_t>(integer)) {}  // NOLINT
  TensorIndex(bool boolean) : type_(TensorIndexType::Boolean), boolean_(boolean) {}  // NOLINT
  TensorIndex(Slice slice) : type_(TensorIndexType::Slice), slice_(slice) {}  // NOLINT
  TensorIndex(Tensor tensor) : type_(TensorIndexType::Tensor), tensor_(std::move(tensor)) {}  // NOLINT

  TensorIndexType type() const { return type_; }
  bool is_none() const { return type_ == TensorIndexType::None; }
  bool is_ellipsis() const { return type_ == TensorIndexType::Ellipsis; }
  bool is_integer() const { return type_ == TensorIndexType::Integer; }
  bool is_boolean() const { return type_ == TensorIndexType::Boolean; }
  bool is_slice() const { return type_ == TensorIndexType::Slice; }
  bool is_tensor() const { return type_ == TensorIndexType::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  static void check_ellipsis(const char* text);

  TensorIndexType type_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace ember::indexing
