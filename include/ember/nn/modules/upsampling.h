// nn::Upsample: F::interpolate with the module's options.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

class UpsampleImpl : public Cloneable<UpsampleImpl> {
 public:
  void reset() override {}
  explicit UpsampleImpl(const UpsampleOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  UpsampleOptions options;
};
EMBER_MODULE(Upsample);

}  // namespace ember::nn
