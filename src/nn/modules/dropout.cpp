// Dropout1d/2d/3d: one module template over F::dropout1d/2d/3d.
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/modules/activation.h"

namespace ember::nn {
namespace {

template <int64_t SpatialDims>
constexpr const char* module_name() {
  return SpatialDims == 1 ? "Dropout1d" : SpatialDims == 2 ? "Dropout2d" : "Dropout3d";
}

}  // namespace

template <int64_t SpatialDims>
FeatureDropoutImpl<SpatialDims>::FeatureDropoutImpl(const DropoutOptions& options_) : options(options_) {
  EMBER_CHECK(options.p() >= 0 && options.p() <= 1, module_name<SpatialDims>(),
              "dropout probability has to be between 0 and 1, but got ", options.p());
}

template <int64_t SpatialDims>
Tensor FeatureDropoutImpl<SpatialDims>::forward(const Tensor& input) {
  const DropoutFuncOptions f =
      DropoutFuncOptions().p(options.p()).training(this->is_training()).inplace(options.inplace());
  if constexpr (SpatialDims == 1) return functional::dropout1d(input, f);
  else if constexpr (SpatialDims == 2) return functional::dropout2d(input, f);
  else return functional::dropout3d(input, f);
}

template <int64_t SpatialDims>
void FeatureDropoutImpl<SpatialDims>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << module_name<SpatialDims>() << "(p=" << options.p()
         << ", inplace=" << (options.inplace() ? "true" : "false") << ")";
}

template class FeatureDropoutImpl<1>;
template class FeatureDropoutImpl<2>;
template class FeatureDropoutImpl<3>;

}  // namespace ember::nn
