// InstanceNorm1d, InstanceNorm2d and InstanceNorm3d: one implementation, checked for its
// input rank ([N, C, *D] or unbatched [C, *D]), as libtorch's.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/modules/batchnorm.h"
#include "ember/nn/options.h"

namespace ember::nn {

// Parameters and running-stat buffers as NormImplBase (batchnorm.h). Normalises with each
// instance's statistics in training mode or without running stats; in eval mode with
// track_running_stats, with the running ones.
template <size_t D>
class InstanceNormNdImpl : public NormImplBase {
 public:
  explicit InstanceNormNdImpl(const InstanceNormOptions& options);

  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  InstanceNormOptions options;
};

class InstanceNorm1dImpl : public Cloneable<InstanceNorm1dImpl, InstanceNormNdImpl<1>> {
 public:
  using Cloneable::Cloneable;
  void reset() override { register_state(options.num_features(), options.affine(), options.track_running_stats()); }
};
EMBER_MODULE(InstanceNorm1d);

class InstanceNorm2dImpl : public Cloneable<InstanceNorm2dImpl, InstanceNormNdImpl<2>> {
 public:
  using Cloneable::Cloneable;
  void reset() override { register_state(options.num_features(), options.affine(), options.track_running_stats()); }
};
EMBER_MODULE(InstanceNorm2d);

class InstanceNorm3dImpl : public Cloneable<InstanceNorm3dImpl, InstanceNormNdImpl<3>> {
 public:
  using Cloneable::Cloneable;
  void reset() override { register_state(options.num_features(), options.affine(), options.track_running_stats()); }
};
EMBER_MODULE(InstanceNorm3d);

extern template class InstanceNormNdImpl<1>;
extern template class InstanceNormNdImpl<2>;
extern template class InstanceNormNdImpl<3>;

}  // namespace ember::nn
