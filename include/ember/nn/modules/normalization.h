// LayerNorm and RMSNorm over the trailing normalized_shape dims; GroupNorm over groups of
// channels; CrossMapLRN2d across neighbouring channels.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

// weight starts at ones and bias at zeros (when elementwise_affine).
class LayerNormImpl : public Cloneable<LayerNormImpl> {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);

  Tensor forward(const Tensor& input);
  // Registers the parameters and initialises them.
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  LayerNormOptions options;
  Tensor weight;
  Tensor bias;
};
EMBER_MODULE(LayerNorm);

// weight starts at ones (when elementwise_affine).
class RMSNormImpl : public Cloneable<RMSNormImpl> {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);

  Tensor forward(const Tensor& input);
  // Registers the parameters and initialises them.
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  RMSNormOptions options;
  Tensor weight;
};
EMBER_MODULE(RMSNorm);

// Parameters weight (ones) and bias (zeros) [num_channels] when affine.
class GroupNormImpl : public Cloneable<GroupNormImpl> {
 public:
  explicit GroupNormImpl(const GroupNormOptions& options);

  Tensor forward(const Tensor& input);
  // Registers the parameters and initialises them.
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  GroupNormOptions options;
  Tensor weight;
  Tensor bias;
};
EMBER_MODULE(GroupNorm);

// CrossMapLRN2dOptions's normalisation over the channels of a 4-D input (no parameters).
class CrossMapLRN2dImpl : public Module {
 public:
  explicit CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  CrossMapLRN2dOptions options;
};
EMBER_MODULE(CrossMapLRN2d);

// F::local_response_norm over the channels of a 3-D or wider input (no parameters).
class LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LocalResponseNormOptions options;
};
EMBER_MODULE(LocalResponseNorm);

}  // namespace ember::nn
