// MaxPool, AvgPool, AdaptiveAvgPool and AdaptiveMaxPool over 1, 2 or 3 spatial dims (no
// parameters): one template per kind, named as libtorch's MaxPool2d etc.
#pragma once
#include <tuple>

#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

template <size_t D>
class MaxPoolNdImpl : public Module {
 public:
  explicit MaxPoolNdImpl(const MaxPoolOptions<D>& options) : options(options) {}
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
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AvgPoolOptions<D> options;
};

template <size_t D>
class AdaptiveAvgPoolNdImpl : public Module {
 public:
  explicit AdaptiveAvgPoolNdImpl(const AdaptivePoolOptions<D>& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptivePoolOptions<D> options;
};

template <size_t D>
class AdaptiveMaxPoolNdImpl : public Module {
 public:
  explicit AdaptiveMaxPoolNdImpl(const AdaptivePoolOptions<D>& options) : options(options) {}
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
#undef EMBER_POOL_MODULE

}  // namespace ember::nn
