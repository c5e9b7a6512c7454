// ModuleHolder and EMBER_MODULE: libtorch's holder pattern. EMBER_MODULE(Linear) makes
// `Linear` a shared handle to a `LinearImpl`:
//   ember::nn::Linear fc(ember::nn::LinearOptions(4, 8));   // constructs LinearImpl
//   ember::nn::Linear empty{nullptr};                        // holds nothing yet
//   fc->forward(x); fc->weight; fc(x);   // fc(x) also runs the module's forward hooks
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace detail {
struct ModuleHolderIndicator {};
template <typename T>
using is_module_holder = std::is_base_of<ModuleHolderIndicator, std::decay_t<T>>;

template <typename T>
inline constexpr bool is_tensor_v = std::is_same_v<std::remove_cvref_t<T>, Tensor>;

template <typename T>
struct is_tuple_like : std::false_type {};
template <typename... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <typename A, typename B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};

// Calls visit(tensor) on each Tensor of a forward's result: the result itself, the elements
// of a std::vector<Tensor>, the Tensors of a tuple or pair (nested ones too).
template <typename T, typename Visit>
void for_each_tensor(T& value, Visit& visit) {
  if constexpr (std::is_same_v<T, Tensor>) {
    visit(value);
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    for (Tensor& tensor : value) visit(tensor);
  } else if constexpr (is_tuple_like<T>::value) {
    std::apply([&](auto&... elements) { (for_each_tensor(elements, visit), ...); }, value);
  }
}

// position[i]: how many of the arguments before i are Tensors.
template <typename... Args>
constexpr std::array<size_t, sizeof...(Args)> tensor_argument_positions() {
  constexpr std::array<bool, sizeof...(Args)> is_tensor{is_tensor_v<Args>...};
  std::array<size_t, sizeof...(Args)> positions{};
  size_t next = 0;
  for (size_t i = 0; i < sizeof...(Args); ++i) {
    positions[i] = next;
    next += is_tensor[i] ? 1 : 0;
  }
  return positions;
}

template <typename Arg>
void collect_tensor_argument(const Arg& argument, std::vector<Tensor>& inputs) {
  if constexpr (is_tensor_v<Arg>) inputs.push_back(argument);
}

// A Tensor argument as the pre-hooks left it; any other argument as given.
template <typename Arg>
decltype(auto) hooked_argument(Arg&& argument, std::vector<Tensor>& inputs, size_t position) {
  if constexpr (is_tensor_v<Arg>) {
    return static_cast<Tensor&>(inputs[position]);
  } else {
    return std::forward<Arg>(argument);
  }
}

// call(module, args...) with the module's forward pre-hooks and hooks around it.
template <typename ModuleType, typename Call, typename... Args>
auto call_with_forward_hooks(ModuleType& module, const Call& call, Args&&... args)
    -> decltype(call(module, std::forward<Args>(args)...)) {
  using Result = decltype(call(module, std::forward<Args>(args)...));
  if constexpr (std::is_reference_v<Result>) {
    EMBER_CHECK(!module.has_forward_hooks(), "Module::operator()", "the forward of ", module.name(),
                " returns a reference; forward hooks need a forward that returns by value");
    return call(module, std::forward<Args>(args)...);
  } else {
    if (!module.has_forward_hooks()) return call(module, std::forward<Args>(args)...);
    std::vector<Tensor> inputs;
    (collect_tensor_argument(args, inputs), ...);
    module.run_forward_pre_hooks(inputs);
    constexpr auto positions = tensor_argument_positions<Args...>();
    auto call_hooked = [&]<size_t... I>(std::index_sequence<I...>) -> Result {
      return call(module, hooked_argument<Args>(std::forward<Args>(args), inputs, positions[I])...);
    };
    std::vector<Tensor> outputs;
    if constexpr (std::is_void_v<Result>) {
      call_hooked(std::index_sequence_for<Args...>{});
      module.run_forward_hooks(inputs, outputs);
    } else {
      Result result = call_hooked(std::index_sequence_for<Args...>{});
      auto collect = [&](Tensor& tensor) { outputs.push_back(tensor); };
      for_each_tensor(result, collect);
      module.run_forward_hooks(inputs, outputs);
      size_t next = 0;
      auto replace = [&](Tensor& tensor) { tensor = outputs[next++]; };
      for_each_tensor(result, replace);
      return result;
    }
  }
}
}  // namespace detail

template <typename Contained>
class ModuleHolder : detail::ModuleHolderIndicator {
 public:
  using ContainedType = Contained;

  // Default-constructs the module; `Linear fc{nullptr}` is the empty state instead.
  ModuleHolder() : impl_(default_construct()) {}
  ModuleHolder(std::nullptr_t) : impl_(nullptr) {}  // NOLINT: `Linear fc = nullptr;`
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}  // NOLINT

  // Forwards the arguments to the Impl constructor: Linear(4, 8), Linear(LinearOptions(4, 8)).
  template <typename Head, typename... Tail,
            typename = std::enable_if_t<!(sizeof...(Tail) == 0 &&
                                          (std::is_same_v<std::decay_t<Head>, std::nullptr_t> ||
                                           std::is_convertible_v<Head, std::shared_ptr<Contained>> ||
                                           std::is_base_of_v<ModuleHolder, std::decay_t<Head>>))>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  const std::shared_ptr<Contained>& ptr() const {
    EMBER_CHECK(!is_empty(), "ModuleHolder", "accessing an empty module holder (constructed with nullptr)");
    return impl_;
  }
  Contained* get() const { return ptr().get(); }
  bool is_empty() const noexcept { return impl_ == nullptr; }
  explicit operator bool() const noexcept { return !is_empty(); }

  // list[0], dict["key"]: the module's own operator[].
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

  // fc(x): forward with the module's forward hooks around it (PyTorch's Module.__call__).
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    auto forward = [](Contained& module, auto&&... arguments) -> decltype(auto) {
      return module.forward(std::forward<decltype(arguments)>(arguments)...);
    };
    return detail::call_with_forward_hooks(*get(), forward, std::forward<Args>(args)...);
  }

  // Another method of the module, model.call(&GPTImpl::loss, tokens, ...), with the forward
  // hooks around it as operator() runs forward (PyTorch FSDP's register_fsdp_forward_method).
  template <typename Method, typename... Args>
  decltype(auto) call(Method method, Args&&... args) {
    auto invoke = [method](Contained& module, auto&&... arguments) -> decltype(auto) {
      return std::invoke(method, module, std::forward<decltype(arguments)>(arguments)...);
    };
    return detail::call_with_forward_hooks(*get(), invoke, std::forward<Args>(args)...);
  }

 private:
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>) {
      return std::make_shared<Contained>();
    } else {
      static_assert(std::is_default_constructible_v<Contained>,
                    "This module has no default constructor: give it options, or use `Name name{nullptr};` "
                    "for the empty state");
      return nullptr;
    }
  }

  std::shared_ptr<Contained> impl_;
};

// Prints the held module as operator<< prints a Module.
template <typename Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& module) {
  return stream << *module;
}

}  // namespace ember::nn

// Declares the holder `Name` for the module class `NameImpl` (libtorch's TORCH_MODULE).
#define EMBER_MODULE_IMPL(Name, ImplType)                        \
  class Name : public ::ember::nn::ModuleHolder<ImplType> {      \
   public:                                                       \
    using ::ember::nn::ModuleHolder<ImplType>::ModuleHolder;     \
    using Impl = ImplType;                                       \
  }

#define EMBER_MODULE(Name) EMBER_MODULE_IMPL(Name, Name##Impl)
