// Functional: a module around a function of one tensor, as torch::nn::Functional, so that
// free functions sit in a Sequential: Functional(ember::relu), or with the arguments after
// the input bound: Functional(ember::max_pool2d, 3, stride, 0, 1, false).
#pragma once
#include <functional>
#include <type_traits>
#include <utility>

#include "ember/nn/module.h"
#include "ember/nn/pimpl.h"

namespace ember::nn {

class FunctionalImpl : public Cloneable<FunctionalImpl> {
 public:
  using Function = std::function<Tensor(Tensor)>;

  explicit FunctionalImpl(Function function);
  template <typename SomeFunction, typename... Args, typename = std::enable_if_t<(sizeof...(Args) > 0)>>
  explicit FunctionalImpl(SomeFunction original_function, Args&&... args)
      : FunctionalImpl(Function(std::bind(original_function, std::placeholders::_1, std::forward<Args>(args)...))) {}

  Tensor forward(Tensor input);
  Tensor operator()(Tensor input) { return forward(std::move(input)); }
  void reset() override {}
  void pretty_print(std::ostream& stream) const override { stream << "ember::nn::Functional()"; }

 private:
  Function function_;
};
EMBER_MODULE(Functional);

}  // namespace ember::nn
