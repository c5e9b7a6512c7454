// ArrayRef<T> and IntArrayRef, as c10's: a non-owning view of contiguous values (a vector, an
// array, a braced list, or one value), passed by value. Tensor::sizes() and strides() return an
// IntArrayRef that views the tensor's own metadata, valid while the tensor's shape is unchanged.
//
// Differs from libtorch: an ArrayRef also converts implicitly to a std::vector<T> (a copy), so
// code that stores sizes() in a vector compiles as well; libtorch spells that `.vec()`.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <ostream>
#include <type_traits>
#include <vector>

#include "ember/error.h"

namespace ember {

template <typename T>
class ArrayRef {
 public:
  using iterator = const T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<const T*>;
  using size_type = size_t;
  using value_type = T;

  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT: x.sum(1)
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), size_(static_cast<size_t>(end - begin)) {}
  template <typename Allocator>
  ArrayRef(const std::vector<T, Allocator>& values) : data_(values.data()), size_(values.size()) {  // NOLINT
    static_assert(!std::is_same_v<T, bool>, "ArrayRef<bool> cannot view a std::vector<bool>");
  }
  template <size_t N>
  constexpr ArrayRef(const std::array<T, N>& values) : data_(values.data()), size_(N) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(const T (&values)[N]) : data_(values), size_(N) {}  // NOLINT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  // Valid for the full expression that holds the braced list, as c10's.
  constexpr ArrayRef(const std::initializer_list<T>& list)  // NOLINT
      : data_(list.size() == 0 ? nullptr : list.begin()), size_(list.size()) {}
#pragma GCC diagnostic pop

  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T* cbegin() const { return data_; }
  constexpr const T* cend() const { return data_ + size_; }
  constexpr reverse_iterator rbegin() const { return reverse_iterator(end()); }
  constexpr reverse_iterator rend() const { return reverse_iterator(begin()); }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t index) const { return data_[index]; }

  const T& at(size_t index) const {
    EMBER_CHECK(index < size_, "ArrayRef", "index ", index, " is out of range for a list of ", size_);
    return data_[index];
  }
  const T& front() const {
    EMBER_CHECK(!empty(), "ArrayRef", "front() of an empty list");
    return data_[0];
  }
  const T& back() const {
    EMBER_CHECK(!empty(), "ArrayRef", "back() of an empty list");
    return data_[size_ - 1];
  }
  bool equals(ArrayRef other) const { return size_ == other.size_ && std::equal(begin(), end(), other.begin()); }
  // The count values from start on; slice(start): from start to the end.
  ArrayRef slice(size_t start, size_t count) const {
    EMBER_CHECK(start + count <= size_, "ArrayRef", "slice(", start, ", ", count, ") of a list of ", size_);
    return ArrayRef(data_ + start, count);
  }
  ArrayRef slice(size_t start) const {
    EMBER_CHECK(start <= size_, "ArrayRef", "slice(", start, ") of a list of ", size_);
    return slice(start, size_ - start);
  }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  operator std::vector<T>() const { return vec(); }  // NOLINT: see the header comment

  friend bool operator==(ArrayRef a, ArrayRef b) { return a.equals(b); }
  friend bool operator==(ArrayRef a, const std::vector<T>& b) { return a.equals(b); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
std::ostream& operator<<(std::ostream& out, ArrayRef<T> values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out << ']';
}

using IntArrayRef = ArrayRef<int64_t>;

// An ArrayRef or nothing, as c10::OptionalArrayRef: an optional argument that takes a list (a
// vector, a braced list, one value) or std::nullopt.
template <typename T>
class OptionalArrayRef {
 public:
  constexpr OptionalArrayRef() = default;
  constexpr OptionalArrayRef(std::nullopt_t) {}                          // NOLINT
  constexpr OptionalArrayRef(ArrayRef<T> values) : values_(values) {}    // NOLINT
  constexpr OptionalArrayRef(const T& one) : values_(ArrayRef<T>(one)) {}  // NOLINT
  template <typename Allocator>
  OptionalArrayRef(const std::vector<T, Allocator>& values) : values_(ArrayRef<T>(values)) {}  // NOLINT
  constexpr OptionalArrayRef(const std::initializer_list<T>& list) : values_(ArrayRef<T>(list)) {}  // NOLINT
  OptionalArrayRef(const std::optional<ArrayRef<T>>& values) : values_(values) {}  // NOLINT

  constexpr bool has_value() const { return values_.has_value(); }
  constexpr explicit operator bool() const { return has_value(); }
  ArrayRef<T> value() const {
    EMBER_CHECK(has_value(), "OptionalArrayRef", "value() of an empty OptionalArrayRef");
    return *values_;
  }
  ArrayRef<T> value_or(ArrayRef<T> fallback) const { return values_.value_or(fallback); }
  constexpr ArrayRef<T> operator*() const { return *values_; }
  constexpr const ArrayRef<T>* operator->() const { return &*values_; }
  void reset() { values_.reset(); }

  // Empty is unequal to every list.
  friend bool operator==(const OptionalArrayRef& a, ArrayRef<T> b) { return a.has_value() && a->equals(b); }

 private:
  std::optional<ArrayRef<T>> values_;
};

using OptionalIntArrayRef = OptionalArrayRef<int64_t>;

}  // namespace ember
