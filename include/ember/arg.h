// EMBER_ARG: a chainable option field, as libtorch's TORCH_ARG. Options(4, 8).bias(false)
// sets a field and returns the options; options.bias() reads it.
#pragma once
#include <utility>

#define EMBER_ARG(T, name)                                          \
 public:                                                            \
  inline auto name(const T& new_##name)->decltype(*this) {          \
    this->name##_ = new_##name;                                     \
    return *this;                                                   \
  }                                                                 \
  inline auto name(T&& new_##name)->decltype(*this) {               \
    this->name##_ = std::move(new_##name);                          \
    return *this;                                                   \
  }                                                                 \
  inline const T& name() const noexcept { return this->name##_; }   \
  inline T& name() noexcept { return this->name##_; }               \
                                                                    \
 private:                                                           \
  T name##_
