// ModuleHolder and EMBER_MODULE: libtorch's holder pattern. EMBER_MODULE(Linear) makes
// `Linear` a shared handle to a `LinearImpl`:
//   ember::nn::Linear fc(ember::nn::LinearOptions(4, 8));   // constructs LinearImpl
//   ember::nn::Linear empty{nullptr};                        // holds nothing yet
//   fc->forward(x); fc->weight; fc(x);
#pragma once
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "ember/error.h"

namespace ember::nn {

namespace detail {
struct ModuleHolderIndicator {};
template <typename T>
using is_module_holder = std::is_base_of<ModuleHolderIndicator, std::decay_t<T>>;
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

  // fc(x) == fc->forward(x).
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    return get()->forward(std::forward<Args>(args)...);
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

}  // namespace ember::nn

// Declares the holder `Name` for the module class `NameImpl` (libtorch's TORCH_MODULE).
#define EMBER_MODULE_IMPL(Name, ImplType)                        \
  class Name : public ::ember::nn::ModuleHolder<ImplType> {      \
   public:                                                       \
    using ::ember::nn::ModuleHolder<ImplType>::ModuleHolder;     \
    using Impl = ImplType;                                       \
  }

#define EMBER_MODULE(Name) EMBER_MODULE_IMPL(Name, Name##Impl)
