// libtorch's torch::indexing: the index list of Tensor::index and Tensor::index_put_, as
// x.index({Slice(1, None), None, Ellipsis, 0, mask, idx}) for Python's x[1:, None, ..., 0, mask, idx].
#pragma once
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>
#include <optional>
#include <string_view>

#include "ember/tensor.h"

namespace ember::indexing {

constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
constexpr EllipsisIndexType Ellipsis{};

// The bounds an unset Slice start or stop stands for (libtorch's).
constexpr int64_t INDEX_MAX = std::numeric_limits<int64_t>::max();
constexpr int64_t INDEX_MIN = std::numeric_limits<int64_t>::min();

// start:stop:step, as Python's; an unset start is 0 (INDEX_MAX for a negative step), an unset
// stop INDEX_MAX (INDEX_MIN for a negative step), an unset step 1. Prints as "1:2:3".
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : step_(step.value_or(1)) {
    EMBER_CHECK(step_ != 0, "Slice", "slice step cannot be zero");
    if (step_ == INDEX_MIN) step_ = -INDEX_MAX;
    start_ = start.value_or(step_ < 0 ? INDEX_MAX : 0);
    stop_ = stop.value_or(step_ < 0 ? INDEX_MIN : INDEX_MAX);
  }
  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  int64_t start_, stop_, step_;
};

std::ostream& operator<<(std::ostream& out, const Slice& slice);

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

// None, ..., 0, true, 1:3:1, or the tensor; a list prints as "(None, ..., 0)".
std::ostream& operator<<(std::ostream& out, const TensorIndex& index);
std::ostream& operator<<(std::ostream& out, const std::vector<TensorIndex>& indices);

}  // namespace ember::indexing
