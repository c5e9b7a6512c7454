// AnyModule: a module whose forward may have any signature, with its type erased, as
// libtorch's AnyModule. The arguments travel as AnyValues and are checked against the
// forward's parameter types (after decay) when it is called:
//   struct M : nn::Module { int forward(int a, float b); };
//   nn::AnyModule any(M{});
//   any.forward<int>(1, 2.0f);   // 3; forward(x) alone returns a Tensor
//   any.any_forward(1, 2.0f);    // an AnyValue holding an int
//   any.forward<int>(1, 2.0);    // throws: argument #1 must be a float, not a double
// A module whose forward is overloaded or a template (a Sequential) is held as one taking a
// Tensor and returning a Tensor (libtorch does not take such modules).
#pragma once
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ember/detail/demangle.h"
#include "ember/error.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/any_value.h"
#include "ember/nn/pimpl.h"

namespace ember::nn {

namespace detail {
// The parameter types of a single, non-template forward, from &Module::forward.
template <typename Method>
struct forward_parameters;
template <typename R, typename C, typename... Args>
struct forward_parameters<R (C::*)(Args...)> {
  using type = std::tuple<Args...>;
};
template <typename R, typename C, typename... Args>
struct forward_parameters<R (C::*)(Args...) const> : forward_parameters<R (C::*)(Args...)> {};
template <typename R, typename C, typename... Args>
struct forward_parameters<R (C::*)(Args...) noexcept> : forward_parameters<R (C::*)(Args...)> {};
template <typename R, typename C, typename... Args>
struct forward_parameters<R (C::*)(Args...) const noexcept> : forward_parameters<R (C::*)(Args...)> {};

template <typename ModuleType>
concept has_single_forward = requires { &ModuleType::forward; };

// The forward's parameter types; (const Tensor&) for an overloaded or template forward.
template <typename ModuleType>
struct forward_parameters_of {
  using type = std::tuple<const Tensor&>;
};
template <has_single_forward ModuleType>
struct forward_parameters_of<ModuleType> : forward_parameters<decltype(&ModuleType::forward)> {};

template <typename ModuleType>
concept has_forward_default_arguments = requires { ForwardDefaultArguments::of<ModuleType>(); };

template <typename T>
inline constexpr bool is_module_object_v = std::is_base_of_v<Module, std::remove_cvref_t<T>>;

// The type-erased part of an AnyModule: the module and a forward taking AnyValues.
class AnyModulePlaceholder {
 public:
  explicit AnyModulePlaceholder(const std::type_info& type_info_) noexcept : type_info(type_info_) {}
  virtual ~AnyModulePlaceholder() = default;
  virtual AnyValue forward(std::vector<AnyValue>&& arguments) const = 0;
  virtual std::shared_ptr<Module> ptr() const = 0;
  // A holder of a deep copy of the module (Module::clone).
  virtual std::shared_ptr<const AnyModulePlaceholder> clone_module(const std::optional<Device>& device) const = 0;
  const std::type_info& type_info;
};

template <typename ModuleType, typename Parameters>
class AnyModuleHolder;

template <typename ModuleType, typename... Parameters>
class AnyModuleHolder<ModuleType, std::tuple<Parameters...>> final : public AnyModulePlaceholder {
 public:
  explicit AnyModuleHolder(std::shared_ptr<ModuleType> module_)
      : AnyModulePlaceholder(typeid(ModuleType)), module(std::move(module_)) {}

  AnyValue forward(std::vector<AnyValue>&& arguments) const override {
    constexpr size_t expected = sizeof...(Parameters);
    if constexpr (has_forward_default_arguments<ModuleType>) {
      auto defaults = ForwardDefaultArguments::of<ModuleType>();
      const size_t required = defaults.empty() ? expected : defaults.front().first;
      EMBER_CHECK(arguments.size() >= required && arguments.size() <= expected, "AnyModule",
                  ::ember::detail::demangle(type_info.name()), "'s forward() method expects at least ", required,
                  " argument(s) and at most ", expected, " argument(s), but received ", arguments.size(), ".");
      for (auto& [index, value] : defaults) {
        if (index >= arguments.size()) arguments.push_back(std::move(value));
      }
    } else {
      const std::string name = ::ember::detail::demangle(type_info.name());
      EMBER_CHECK(arguments.size() == expected, "AnyModule", name, "'s forward() method expects ", expected,
                  " argument(s), but received ", arguments.size(), ".",
                  arguments.size() < expected
                      ? " If " + name +
                            "'s forward() method has default arguments, please make sure the forward() method is "
                            "declared with a corresponding `EMBER_FORWARD_HAS_DEFAULT_ARGS` macro."
                      : std::string());
    }
    return invoke(arguments, std::index_sequence_for<Parameters...>{});
  }

  std::shared_ptr<Module> ptr() const override { return module; }

  std::shared_ptr<const AnyModulePlaceholder> clone_module(const std::optional<Device>& device) const override {
    auto copy = std::dynamic_pointer_cast<ModuleType>(module->clone(device));
    EMBER_CHECK(copy != nullptr, "AnyModule", "clone() of a ", ::ember::detail::demangle(type_info.name()),
                " returned a module of another type");
    return std::make_shared<const AnyModuleHolder>(std::move(copy));
  }

  const std::shared_ptr<ModuleType> module;

 private:
  // Argument `index` as the forward's parameter type T takes it: an lvalue for a non-const
  // lvalue reference, else an rvalue (the AnyValue is not used again).
  template <typename T>
  static decltype(auto) checked_argument(std::vector<AnyValue>& arguments, size_t index) {
    using Stored = std::decay_t<T>;
    AnyValue& argument = arguments[index];
    Stored* value = argument.try_get<Stored>();
    EMBER_CHECK(value != nullptr, "AnyModule", "Expected argument #", index, " to be of type ",
                ::ember::detail::demangle(typeid(Stored).name()), ", but received value of type ",
                ::ember::detail::demangle(argument.type_info().name()));
    if constexpr (std::is_lvalue_reference_v<T> && !std::is_const_v<std::remove_reference_t<T>>) {
      return static_cast<Stored&>(*value);
    } else {
      return static_cast<Stored&&>(*value);
    }
  }

  template <size_t... I>
  AnyValue invoke(std::vector<AnyValue>& arguments, std::index_sequence<I...>) const {
    auto call = [](ModuleType& m, auto&&... args) -> decltype(auto) {
      return m.forward(std::forward<decltype(args)>(args)...);
    };
    using Result = decltype(call_with_forward_hooks(*module, call, checked_argument<Parameters>(arguments, I)...));
    static_assert(!std::is_void_v<Result>, "AnyModule needs a forward that returns a value");
    return AnyValue(call_with_forward_hooks(*module, call, checked_argument<Parameters>(arguments, I)...));
  }
};
}  // namespace detail

class AnyModule {
 public:
  using Value = AnyValue;

  // The empty state: every method but is_empty() throws.
  AnyModule() = default;
  template <typename ModuleType>
  explicit AnyModule(std::shared_ptr<ModuleType> module) : content_(make_holder(std::move(module))) {}
  // Takes a copy of (or moves) a module object into a new shared_ptr.
  template <typename ModuleType, typename = std::enable_if_t<detail::is_module_object_v<ModuleType>>>
  explicit AnyModule(ModuleType&& module)
      : AnyModule(std::make_shared<std::remove_cvref_t<ModuleType>>(std::forward<ModuleType>(module))) {}
  template <typename ModuleType>
  explicit AnyModule(const ModuleHolder<ModuleType>& module_holder) : AnyModule(module_holder.ptr()) {}

  template <typename ModuleType>
  AnyModule& operator=(std::shared_ptr<ModuleType> module) {
    return *this = AnyModule(std::move(module));
  }

  // Calls the module's forward (with its forward hooks) and returns what it returned.
  template <typename... Arguments>
  AnyValue any_forward(Arguments&&... arguments) const {
    EMBER_CHECK(!is_empty(), "AnyModule", "Cannot call forward() on an empty AnyModule");
    std::vector<AnyValue> values;
    values.reserve(sizeof...(Arguments));
    (values.emplace_back(std::forward<Arguments>(arguments)), ...);
    return content_->forward(std::move(values));
  }

  // any_forward, with the result taken out as a ReturnType (throws if it is another type).
  template <typename ReturnType = Tensor, typename... Arguments>
  ReturnType forward(Arguments&&... arguments) const {
    AnyValue result = any_forward(std::forward<Arguments>(arguments)...);
    if (auto* value = result.try_get<ReturnType>()) return std::move(*value);
    result.throw_wrong_type(typeid(ReturnType));
  }

  // The module as its own class (exactly the class it was given as), or as a new holder of it.
  template <typename T, typename = std::enable_if_t<detail::is_module_object_v<T>>>
  T& get() const {
    return *checked_ptr<T>("get");
  }
  template <typename T, typename = std::enable_if_t<detail::is_module_holder<T>::value>, typename = void>
  T get() const {
    return T(checked_ptr<typename T::ContainedType>("get"));
  }

  std::shared_ptr<Module> ptr() const {
    EMBER_CHECK(!is_empty(), "AnyModule", "Cannot call ptr() on an empty AnyModule");
    return content_->ptr();
  }
  template <typename T, typename = std::enable_if_t<detail::is_module_object_v<T>>>
  std::shared_ptr<T> ptr() const {
    return checked_ptr<T>("ptr");
  }

  // typeid of the held module's class.
  const std::type_info& type_info() const {
    EMBER_CHECK(!is_empty(), "AnyModule", "Cannot call type_info() on an empty AnyModule");
    return content_->type_info;
  }
  bool is_empty() const noexcept { return content_ == nullptr; }

  // An AnyModule holding a deep copy of the module (its clone(device)); empty stays empty.
  AnyModule clone(const std::optional<Device>& device = std::nullopt) const {
    AnyModule copy;
    if (content_) copy.content_ = content_->clone_module(device);
    return copy;
  }

 private:
  template <typename ModuleType>
  static std::shared_ptr<const detail::AnyModulePlaceholder> make_holder(std::shared_ptr<ModuleType> module) {
    static_assert(detail::is_module_object_v<ModuleType>, "AnyModule holds modules (subclasses of nn::Module)");
    EMBER_CHECK(module != nullptr, "AnyModule", "cannot hold an empty module (nullptr)");
    using Parameters = typename detail::forward_parameters_of<ModuleType>::type;
    return std::make_shared<const detail::AnyModuleHolder<ModuleType, Parameters>>(std::move(module));
  }

  template <typename T>
  std::shared_ptr<T> checked_ptr(const char* method) const {
    EMBER_CHECK(!is_empty(), "AnyModule", "Cannot call ", method, "() on an empty AnyModule");
    EMBER_CHECK(typeid(T) == content_->type_info, "AnyModule", "Attempted to cast module of type ",
                ::ember::detail::demangle(content_->type_info.name()), " to type ",
                ::ember::detail::demangle(typeid(T).name()));
    return std::static_pointer_cast<T>(content_->ptr());
  }

  // Shared by copies: a copy of an AnyModule holds the same module, as in libtorch.
  std::shared_ptr<const detail::AnyModulePlaceholder> content_;
};

// A module with its name, for Sequential({{"fc", Linear(2, 3)}, {"act", ReLU()}}) and
// modules_ordered_dict.
class NamedAnyModule {
 public:
  NamedAnyModule(std::string name, AnyModule any_module) : name_(std::move(name)), module_(std::move(any_module)) {}
  template <typename ModuleType>
  NamedAnyModule(std::string name, std::shared_ptr<ModuleType> module_ptr)
      : NamedAnyModule(std::move(name), AnyModule(std::move(module_ptr))) {}
  template <typename ModuleType, typename = std::enable_if_t<detail::is_module_object_v<ModuleType>>>
  NamedAnyModule(std::string name, ModuleType&& module)
      : NamedAnyModule(std::move(name), AnyModule(std::forward<ModuleType>(module))) {}
  template <typename ModuleType>
  NamedAnyModule(std::string name, const ModuleHolder<ModuleType>& module_holder)
      : NamedAnyModule(std::move(name), AnyModule(module_holder)) {}

  const std::string& name() const noexcept { return name_; }
  AnyModule& module() noexcept { return module_; }
  const AnyModule& module() const noexcept { return module_; }

 private:
  std::string name_;
  AnyModule module_;
};

}  // namespace ember::nn
