// AnyValue: one value of any type, as libtorch's AnyValue (AnyModule::Value): what AnyModule
// passes to and returns from a forward of any signature. The type is checked on the way out:
//   AnyValue value(5);  value.try_get<int>() != nullptr;  value.get<float>() throws.
// EMBER_FORWARD_HAS_DEFAULT_ARGS is libtorch's FORWARD_HAS_DEFAULT_ARGS.
#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ember/detail/demangle.h"
#include "ember/error.h"

namespace ember::nn {

class AnyModule;

class AnyValue {
 public:
  // Holds a copy of (or takes) `value`, stored as its decayed type: a string literal is held
  // as a const char*, a const std::string& as a std::string.
  template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, AnyValue>>>
  explicit AnyValue(T&& value) : content_(std::make_unique<Holder<std::decay_t<T>>>(std::forward<T>(value))) {}

  // Copying copies the held value (libtorch's AnyValue is copyable too); a moved-from
  // AnyValue holds nothing.
  AnyValue(const AnyValue& other) : content_(other.content_ ? other.content_->clone() : nullptr) {}
  AnyValue(AnyValue&&) noexcept = default;
  AnyValue& operator=(const AnyValue& other) {
    if (this != &other) content_ = other.content_ ? other.content_->clone() : nullptr;
    return *this;
  }
  AnyValue& operator=(AnyValue&&) noexcept = default;

  // A pointer to the held value when it is a T (cv-qualifiers aside), else nullptr.
  template <typename T>
  T* try_get() {
    static_assert(!std::is_reference_v<T>, "AnyValue::try_get<T>: T must not be a reference");
    if (!content_ || typeid(T) != content_->type_info) return nullptr;
    return &static_cast<Holder<std::remove_cv_t<T>>&>(*content_).value;
  }

  // A copy of the held value; throws ember::Error when it is not a T.
  template <typename T>
  T get() {
    if (auto* value = try_get<T>()) return *value;
    throw_wrong_type(typeid(T));
  }

  // typeid of the held (decayed) type.
  const std::type_info& type_info() const {
    EMBER_CHECK(content_ != nullptr, "AnyValue", "type_info() called on a moved-from AnyValue");
    return content_->type_info;
  }

 private:
  struct Placeholder {
    explicit Placeholder(const std::type_info& type_info_) noexcept : type_info(type_info_) {}
    virtual ~Placeholder() = default;
    virtual std::unique_ptr<Placeholder> clone() const = 0;
    const std::type_info& type_info;
  };

  template <typename T>
  struct Holder final : Placeholder {
    template <typename U>
    explicit Holder(U&& value_) : Placeholder(typeid(T)), value(std::forward<U>(value_)) {}
    std::unique_ptr<Placeholder> clone() const override {
      if constexpr (std::is_copy_constructible_v<T>) {
        return std::make_unique<Holder>(value);
      } else {
        EMBER_FAIL("AnyValue", "cannot copy a value of type ", ::ember::detail::demangle(typeid(T).name()),
                   " (it has no copy constructor)");
      }
    }
    T value;
  };

  friend class AnyModule;

  [[noreturn]] void throw_wrong_type(const std::type_info& requested) const {
    EMBER_FAIL("AnyValue", "Attempted to cast AnyValue to ", ::ember::detail::demangle(requested.name()),
               ", but its actual type is ", ::ember::detail::demangle(type_info().name()));
  }

  std::unique_ptr<Placeholder> content_;
};

namespace detail {
// Reads the default arguments a module declares with EMBER_FORWARD_HAS_DEFAULT_ARGS: the macro
// makes it a friend, so the declaration may sit under `protected:` as libtorch's may.
struct ForwardDefaultArguments {
  template <typename ModuleType>
  static auto of() -> decltype(ModuleType::_forward_default_arguments()) {
    return ModuleType::_forward_default_arguments();
  }
};
}  // namespace detail

}  // namespace ember::nn

// Declares, inside a module class, the default arguments of its forward so that AnyModule
// (and so Sequential) may call it with fewer arguments: pairs of the argument's index and
// its default value, in order, as libtorch's FORWARD_HAS_DEFAULT_ARGS:
//   Tensor forward(const Tensor& input, Tensor hx = {});
//   EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())})
#define EMBER_FORWARD_HAS_DEFAULT_ARGS(...)                                                          \
  friend struct ::ember::nn::detail::ForwardDefaultArguments;                                        \
  static std::vector<std::pair<unsigned int, ::ember::nn::AnyValue>> _forward_default_arguments() { \
    return {__VA_ARGS__};                                                                            \
  }
