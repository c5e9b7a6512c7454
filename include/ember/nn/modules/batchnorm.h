// BatchNorm1d, BatchNorm2d and BatchNorm3d: one implementation, checked for its input rank.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

// What BatchNorm and InstanceNorm share (libtorch's NormImplBase): parameters weight (ones)
// and bias (zeros) [num_features] when affine; buffers running_mean (zeros), running_var
// (ones) and num_batches_tracked (int64 0) when track_running_stats, as PyTorch's state_dict.
class NormImplBase : public Module {
 public:
  void reset_running_stats();
  void reset_parameters();

  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;

 protected:
  // name: the module's name for errors.
  NormImplBase(const char* name, int64_t num_features, bool affine, bool track_running_stats);
  // Registers and initialises weight and bias (affine) and the running statistics: the
  // constructor's work, and reset()'s in a clone.
  void register_state(int64_t num_features, bool affine, bool track_running_stats);
};

// Training normalises with the batch's statistics and updates the running ones; evaluation
// (eval()) uses the running ones.
template <size_t D>
class BatchNormNdImpl : public NormImplBase {
 public:
  explicit BatchNormNdImpl(const BatchNormOptions& options);

  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  BatchNormOptions options;
};

class BatchNorm1dImpl : public Cloneable<BatchNorm1dImpl, BatchNormNdImpl<1>> {
 public:
  using Cloneable::Cloneable;
  void reset() override { register_state(options.num_features(), options.affine(), options.track_running_stats()); }
};
EMBER_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public Cloneable<BatchNorm2dImpl, BatchNormNdImpl<2>> {
 public:
  using Cloneable::Cloneable;
  void reset() override { register_state(options.num_features(), options.affine(), options.track_running_stats()); }
};
EMBER_MODULE(BatchNorm2d);

class BatchNorm3dImpl : public Cloneable<BatchNorm3dImpl, BatchNormNdImpl<3>> {
 public:
  using Cloneable::Cloneable;
  void reset() override { register_state(options.num_features(), options.affine(), options.track_running_stats()); }
};
EMBER_MODULE(BatchNorm3d);

extern template class BatchNormNdImpl<1>;
extern template class BatchNormNdImpl<2>;
extern template class BatchNormNdImpl<3>;

}  // namespace ember::nn
