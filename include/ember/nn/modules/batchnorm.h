// BatchNorm1d, BatchNorm2d and BatchNorm3d: one implementation, checked for its input rank.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

// Parameters weight (ones) and bias (zeros) when affine; buffers running_mean (zeros),
// running_var (ones) and num_batches_tracked (int64 0) when track_running_stats, as PyTorch's
// state_dict. Training normalises with the batch's statistics and updates the running ones;
// evaluation (eval()) uses the running ones.
template <size_t D>
class BatchNormNdImpl : public Module {
 public:
  explicit BatchNormNdImpl(const BatchNormOptions& options);

  Tensor forward(const Tensor& input);
  void reset_running_stats();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  BatchNormOptions options;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;
};

class BatchNorm1dImpl : public BatchNormNdImpl<1> {
 public:
  using BatchNormNdImpl<1>::BatchNormNdImpl;
};
EMBER_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public BatchNormNdImpl<2> {
 public:
  using BatchNormNdImpl<2>::BatchNormNdImpl;
};
EMBER_MODULE(BatchNorm2d);

class BatchNorm3dImpl : public BatchNormNdImpl<3> {
 public:
  using BatchNormNdImpl<3>::BatchNormNdImpl;
};
EMBER_MODULE(BatchNorm3d);

extern template class BatchNormNdImpl<1>;
extern template class BatchNormNdImpl<2>;
extern template class BatchNormNdImpl<3>;

}  // namespace ember::nn
