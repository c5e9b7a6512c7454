// ExpandingArray<D>: D values given as one (repeated), a braced list or a vector, as
// libtorch's torch::ExpandingArray (kernel sizes, strides and paddings of vision layers).
#pragma once
#include <array>
#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "ember/error.h"
#include "ember/tensor_options.h"

namespace ember {

template <size_t D, typename T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(T single) { values_.fill(single); }  // NOLINT
  ExpandingArray(std::initializer_list<T> list) : ExpandingArray(std::vector<T>(list)) {}  // NOLINT
  ExpandingArray(const std::vector<T>& values) {  // NOLINT
    EMBER_CHECK(values.size() == D, "ExpandingArray", "Expected ", D, " values, but instead got ", values.size());
    for (size_t i = 0; i < D; ++i) values_[i] = values[i];
  }
  ExpandingArray(const std::array<T, D>& values) : values_(values) {}  // NOLINT
  ExpandingArray(ArrayRef<T> values) : ExpandingArray(values.vec()) {}  // NOLINT: libtorch's from IntArrayRef

  std::array<T, D>& operator*() { return values_; }
  const std::array<T, D>& operator*() const { return values_; }
  std::array<T, D>* operator->() { return &values_; }
  const std::array<T, D>* operator->() const { return &values_; }
  T operator[](size_t i) const { return values_[i]; }
  size_t size() const { return D; }
  operator IntArrayRef() const { return IntArrayRef(values_.data(), D); }  // NOLINT

 private:
  std::array<T, D> values_;
};

// One value alone ("5"), else a bracketed list ("[5, 6]"), as libtorch prints them.
template <size_t D, typename T>
std::ostream& operator<<(std::ostream& stream, const ExpandingArray<D, T>& values) {
  if (D == 1) return stream << values[0];
  stream << '[';
  for (size_t i = 0; i < D; ++i) stream << (i ? ", " : "") << values[i];
  return stream << ']';
}

}  // namespace ember
