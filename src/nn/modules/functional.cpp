// Functional: a module around a function of one tensor (functional.h).
#include "ember/nn/modules/functional.h"

#include "ember/error.h"

namespace ember::nn {

FunctionalImpl::FunctionalImpl(Function function) : function_(std::move(function)) {
  EMBER_CHECK(static_cast<bool>(function_), "Functional", "needs a function, got an empty one");
}

Tensor FunctionalImpl::forward(Tensor input) { return function_(std::move(input)); }

}  // namespace ember::nn
