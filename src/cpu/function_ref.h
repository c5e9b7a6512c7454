// FunctionRef<R(Args...)>: a non-owning reference to a callable, for kernels that take a
// function and call it before they return (parallel_for, for_each_gemm_tile). Passing a
// lambda allocates nothing (a std::function would for captures over 16 bytes, and
// libember_rt runs its kernels without allocating). The callable must outlive the call.
#pragma once
#include <concepts>
#include <utility>

namespace ember::cpu {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
    requires(!std::same_as<std::remove_cvref_t<F>, FunctionRef> && std::invocable<const F&, Args...>)
  FunctionRef(const F& fn)  // NOLINT: implicit, like std::function
      : object_(&fn), call_([](const void* object, Args... args) -> R {
          return (*static_cast<const F*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  const void* object_;
  R (*call_)(const void*, Args...);
};

}  // namespace ember::cpu
