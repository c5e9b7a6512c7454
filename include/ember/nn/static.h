// Compile-time helpers of libtorch's torch/detail/static.h and torch/csrc/utils/variadic.h:
// all_of / any_of over bools, apply(f, args...), and the module traits (is_module,
// enable_if_module_t, return_type_of_forward).
#pragma once
#include <type_traits>
#include <utility>

#include "ember/nn/module.h"

namespace ember {

// c10's alias, which libtorch programs spell torch::enable_if_t.
using std::enable_if_t;

template <bool... Values>
struct all_of : std::bool_constant<(Values && ...)> {};
template <bool... Values>
struct any_of : std::bool_constant<(Values || ...)> {};

// Calls f(arg) for each argument in order.
template <typename Function, typename... Args>
void apply(Function&& f, Args&&... args) {
  (f(std::forward<Args>(args)), ...);
}

namespace detail {

template <typename T>
struct is_module : std::is_base_of<nn::Module, std::decay_t<T>> {};

template <typename M, typename T = void>
using enable_if_module_t = std::enable_if_t<is_module<M>::value, T>;

// True when none of Ts is an lvalue reference.
template <typename... Ts>
constexpr bool check_not_lvalue_references() {
  return (!std::is_lvalue_reference_v<Ts> && ...);
}

template <typename Module, typename = void>
struct has_forward : std::false_type {};
template <typename Module>
struct has_forward<Module, std::void_t<decltype(&Module::forward)>> : std::true_type {};

template <bool HasForward, typename Module, typename... Args>
struct return_type_of_forward_impl {
  using type = decltype(std::declval<Module>().forward(std::declval<Args>()...));
};
template <typename Module, typename... Args>
struct return_type_of_forward_impl<false, Module, Args...> {
  using type = void;
};

// The return type of Module::forward(Args...), void for a module without forward.
template <typename Module, typename... Args>
using return_type_of_forward = return_type_of_forward_impl<has_forward<Module>::value, Module, Args...>;

}  // namespace detail
}  // namespace ember
