// MaxPool, AvgPool, AdaptiveAvgPool and AdaptiveMaxPool over 1, 2 or 3 spatial dims (no
// parameters): one template per kind, named as libtorch's MaxPool2d etc.
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any_value.h"
#include "ember/nn/options.h"

namespace ember::nn {

template <size_t D>
class MaxPoolNdImpl : public Module {
 public:
  explicit MaxPoolNdImpl(const MaxPoolOptions<D>& options) : options(options) {}
  explicit MaxPoolNdImpl(ExpandingArray<D> kernel_size) : MaxPoolNdImpl(MaxPoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input);
  // The output and the flat position of each maximum within its input plane.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  MaxPoolOptions<D> options;
};

template <size_t D>
class AvgPoolNdImpl : public Module {
 public:
  explicit AvgPoolNdImpl(const AvgPoolOptions<D>& options) : options(options) {}
  explicit AvgPoolNdImpl(ExpandingArray<D> kernel_size) : AvgPoolNdImpl(AvgPoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AvgPoolOptions<D> options;
};

template <size_t D>
class AdaptiveAvgPoolNdImpl : public Module {
 public:
  explicit AdaptiveAvgPoolNdImpl(const AdaptivePoolOptions<D>& options) : options(options) {}
  explicit AdaptiveAvgPoolNdImpl(ExpandingArray<D> output_size)
      : AdaptiveAvgPoolNdImpl(AdaptivePoolOptions<D>(output_size)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptivePoolOptions<D> options;
};

template <size_t D>
class AdaptiveMaxPoolNdImpl : public Module {
 public:
  explicit AdaptiveMaxPoolNdImpl(const AdaptivePoolOptions<D>& options) : options(options) {}
  explicit AdaptiveMaxPoolNdImpl(ExpandingArray<D> output_size)
      : AdaptiveMaxPoolNdImpl(AdaptivePoolOptions<D>(output_size)) {}
  Tensor forward(const Tensor& input);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptivePoolOptions<D> options;
};

// NameImpl for each rank, and its holder Name.
#define EMBER_POOL_MODULE(Name, Template, D)                 \
  class Name##Impl : public Cloneable<Name##Impl, Template<D>> { \
   public:                                                   \
    using Cloneable::Cloneable;                              \
    void reset() override {}                                 \
  };                                                         \
  EMBER_MODULE(Name)

EMBER_POOL_MODULE(MaxPool1d, MaxPoolNdImpl, 1);
EMBER_POOL_MODULE(MaxPool2d, MaxPoolNdImpl, 2);
EMBER_POOL_MODULE(MaxPool3d, MaxPoolNdImpl, 3);
EMBER_POOL_MODULE(AvgPool1d, AvgPoolNdImpl, 1);
EMBER_POOL_MODULE(AvgPool2d, AvgPoolNdImpl, 2);
EMBER_POOL_MODULE(AvgPool3d, AvgPoolNdImpl, 3);
EMBER_POOL_MODULE(AdaptiveAvgPool1d, AdaptiveAvgPoolNdImpl, 1);
EMBER_POOL_MODULE(AdaptiveAvgPool2d, AdaptiveAvgPoolNdImpl, 2);
EMBER_POOL_MODULE(AdaptiveAvgPool3d, AdaptiveAvgPoolNdImpl, 3);
EMBER_POOL_MODULE(AdaptiveMaxPool1d, AdaptiveMaxPoolNdImpl, 1);
EMBER_POOL_MODULE(AdaptiveMaxPool2d, AdaptiveMaxPoolNdImpl, 2);
EMBER_POOL_MODULE(AdaptiveMaxPool3d, AdaptiveMaxPoolNdImpl, 3);
// MaxUnpool: places each value at its index (from MaxPool's forward_with_indices) in a zero
// output; output_size picks among the sizes the pooling could have come from.
template <size_t D>
class MaxUnpoolNdImpl : public Module {
 public:
  explicit MaxUnpoolNdImpl(const MaxUnpoolOptions<D>& options) : options(options) {}
  explicit MaxUnpoolNdImpl(ExpandingArray<D> kernel_size) : MaxUnpoolNdImpl(MaxUnpoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  EMBER_FORWARD_HAS_DEFAULT_ARGS({2, AnyValue(std::optional<std::vector<int64_t>>())})
  void pretty_print(std::ostream& stream) const override;
  MaxUnpoolOptions<D> options;
};

// LPPool: (sum of x^p over each window)^(1/p).
template <size_t D>
class LPPoolNdImpl : public Module {
 public:
  explicit LPPoolNdImpl(const LPPoolOptions<D>& options) : options(options) {}
  LPPoolNdImpl(double norm_type, ExpandingArray<D> kernel_size) : LPPoolNdImpl(LPPoolOptions<D>(norm_type, kernel_size)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LPPoolOptions<D> options;
};

// FractionalMaxPool: max over pseudo-random windows; either output_size or output_ratio (in
// (0, 1)) must be given. The samples that place the windows are the buffer `_random_samples`
// when given (else drawn per call).
template <size_t D>
class FractionalMaxPoolNdImpl : public Module {
 public:
  explicit FractionalMaxPoolNdImpl(const FractionalMaxPoolOptions<D>& options);
  explicit FractionalMaxPoolNdImpl(ExpandingArray<D> kernel_size)
      : FractionalMaxPoolNdImpl(FractionalMaxPoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void reset();
  void pretty_print(std::ostream& stream) const override;
  FractionalMaxPoolOptions<D> options;
  Tensor _random_samples;
};

EMBER_POOL_MODULE(MaxUnpool1d, MaxUnpoolNdImpl, 1);
EMBER_POOL_MODULE(MaxUnpool2d, MaxUnpoolNdImpl, 2);
EMBER_POOL_MODULE(MaxUnpool3d, MaxUnpoolNdImpl, 3);
EMBER_POOL_MODULE(LPPool1d, LPPoolNdImpl, 1);
EMBER_POOL_MODULE(LPPool2d, LPPoolNdImpl, 2);
EMBER_POOL_MODULE(FractionalMaxPool2d, FractionalMaxPoolNdImpl, 2);
EMBER_POOL_MODULE(FractionalMaxPool3d, FractionalMaxPoolNdImpl, 3);
#undef EMBER_POOL_MODULE

}  // namespace ember::nn
