// irange(end) and irange(begin, end), as c10::irange: the integers begin, begin + 1, ..., end - 1
// for a range-for loop (`for (const auto i : ember::irange(tensors.size()))`), of end's type; empty
// when end <= begin.
#pragma once
#include <iterator>
#include <type_traits>

namespace ember {

template <typename Integer>
class integer_range {
  static_assert(std::is_integral_v<Integer>, "irange counts over an integer type");

 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Integer;
    using difference_type = std::make_signed_t<Integer>;
    using pointer = const Integer*;
    using reference = const Integer&;

    iterator() = default;
    explicit iterator(Integer value) : value_(value) {}
    const Integer& operator*() const { return value_; }
    iterator& operator++() {
      ++value_;
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++value_;
      return before;
    }
    bool operator==(const iterator& other) const { return value_ == other.value_; }

   private:
    Integer value_{};
  };

  integer_range(Integer begin, Integer end) : begin_(begin), end_(end < begin ? begin : end) {}
  iterator begin() const { return iterator(begin_); }
  iterator end() const { return iterator(end_); }

 private:
  Integer begin_, end_;
};

template <typename Integer1, typename Integer2,
          typename = std::enable_if_t<std::is_integral_v<Integer1> && std::is_integral_v<Integer2>>>
integer_range<Integer2> irange(Integer1 begin, Integer2 end) {
  return {static_cast<Integer2>(begin), end};
}

template <typename Integer, typename = std::enable_if_t<std::is_integral_v<Integer>>>
integer_range<Integer> irange(Integer end) {
  return {Integer(), end};
}

}  // namespace ember
