// Dropout and the activation modules (no parameters).
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

// Zeroes each element with probability p and scales the rest by 1/(1-p) in training mode;
// the identity in eval mode.
class DropoutImpl : public Cloneable<DropoutImpl> {
 public:
  void reset() override {}
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  DropoutOptions options;
};
EMBER_MODULE(Dropout);

// Zeroes whole channels of [N, C, *spatial] (or [C, *spatial]) with probability p, scaling
// the rest by 1/(1-p), in training mode (F::dropout1d/2d/3d for 1-3 spatial dims); the
// identity in eval mode. One template for the three, as libtorch's _DropoutNd.
template <int64_t SpatialDims>
class FeatureDropoutImpl : public Cloneable<FeatureDropoutImpl<SpatialDims>> {
 public:
  void reset() override {}
  explicit FeatureDropoutImpl(const DropoutOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  DropoutOptions options;
};
using Dropout1dImpl = FeatureDropoutImpl<1>;
using Dropout2dImpl = FeatureDropoutImpl<2>;
using Dropout3dImpl = FeatureDropoutImpl<3>;
EMBER_MODULE(Dropout1d);
EMBER_MODULE(Dropout2d);
EMBER_MODULE(Dropout3d);

// Dropout that keeps the mean and variance of SELU activations (F::alpha_dropout); the
// feature form drops whole channels (F::feature_alpha_dropout). The identity in eval mode.
class AlphaDropoutImpl : public Cloneable<AlphaDropoutImpl> {
 public:
  void reset() override {}
  explicit AlphaDropoutImpl(const AlphaDropoutOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AlphaDropoutOptions options;
};
EMBER_MODULE(AlphaDropout);

class FeatureAlphaDropoutImpl : public Cloneable<FeatureAlphaDropoutImpl> {
 public:
  void reset() override {}
  explicit FeatureAlphaDropoutImpl(const FeatureAlphaDropoutOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  FeatureAlphaDropoutOptions options;
};
EMBER_MODULE(FeatureAlphaDropout);

class ReLUImpl : public Cloneable<ReLUImpl> {
 public:
  void reset() override {}
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  ReLUOptions options;
};
EMBER_MODULE(ReLU);

class GELUImpl : public Cloneable<GELUImpl> {
 public:
  void reset() override {}
  explicit GELUImpl(const GELUOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  GELUOptions options;
};
EMBER_MODULE(GELU);

class SiLUImpl : public Cloneable<SiLUImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(SiLU);

class TanhImpl : public Cloneable<TanhImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Tanh);

class SigmoidImpl : public Cloneable<SigmoidImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Sigmoid);

class SoftmaxImpl : public Cloneable<SoftmaxImpl> {
 public:
  void reset() override {}
  explicit SoftmaxImpl(const SoftmaxOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  SoftmaxOptions options;
};
EMBER_MODULE(Softmax);

class LogSoftmaxImpl : public Cloneable<LogSoftmaxImpl> {
 public:
  void reset() override {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LogSoftmaxOptions options;
};
EMBER_MODULE(LogSoftmax);

// The activations of options/activation.h as modules (F:: forms in nn/functional.h).
#define EMBER_ACTIVATION_MODULE(Name, Options)                      \
  class Name##Impl : public Cloneable<Name##Impl> {                \
   public:                                                          \
    void reset() override {}                                        \
    explicit Name##Impl(const Options& options = {});               \
    Tensor forward(const Tensor& input);                            \
    void pretty_print(std::ostream& stream) const override;         \
    Options options;                                                \
  };                                                                \
  EMBER_MODULE(Name)

EMBER_ACTIVATION_MODULE(LeakyReLU, LeakyReLUOptions);
EMBER_ACTIVATION_MODULE(ELU, ELUOptions);
EMBER_ACTIVATION_MODULE(ReLU6, ReLU6Options);
EMBER_ACTIVATION_MODULE(Softplus, SoftplusOptions);
EMBER_ACTIVATION_MODULE(GLU, GLUOptions);
// The activations added with libtorch's SELU ... Tanhshrink, over their F:: forms
// (nn/functional.h); RReLU draws its slopes only in training mode.
EMBER_ACTIVATION_MODULE(SELU, SELUOptions);
EMBER_ACTIVATION_MODULE(CELU, CELUOptions);
EMBER_ACTIVATION_MODULE(Hardshrink, HardshrinkOptions);
EMBER_ACTIVATION_MODULE(Softshrink, SoftshrinkOptions);
EMBER_ACTIVATION_MODULE(RReLU, RReLUOptions);

// x > threshold ? x : value.
class ThresholdImpl : public Cloneable<ThresholdImpl> {
 public:
  void reset() override {}
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  ThresholdOptions options;
};
EMBER_MODULE(Threshold);

// softmax(-x) along options.dim().
class SoftminImpl : public Cloneable<SoftminImpl> {
 public:
  void reset() override {}
  explicit SoftminImpl(int64_t dim) : SoftminImpl(SoftminOptions(dim)) {}
  explicit SoftminImpl(const SoftminOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  SoftminOptions options;
};
EMBER_MODULE(Softmin);

class LogSigmoidImpl : public Cloneable<LogSigmoidImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(LogSigmoid);

class SoftsignImpl : public Cloneable<SoftsignImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Softsign);

class TanhshrinkImpl : public Cloneable<TanhshrinkImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Tanhshrink);

#undef EMBER_ACTIVATION_MODULE

// Clamps to [min_val, max_val]; reset() checks the options again after they were changed.
class HardtanhImpl : public Cloneable<HardtanhImpl> {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  Tensor forward(const Tensor& input);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  HardtanhOptions options;
};
EMBER_MODULE(Hardtanh);

// x > 0 ? x : weight * x with a learnt weight [num_parameters] (registered as "weight",
// filled with options.init()).
class PReLUImpl : public Cloneable<PReLUImpl> {
 public:
  explicit PReLUImpl(const PReLUOptions& options = {});
  Tensor forward(const Tensor& input);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  PReLUOptions options;
  Tensor weight;
};
EMBER_MODULE(PReLU);

class MishImpl : public Cloneable<MishImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Mish);

// Softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W] inputs.
class Softmax2dImpl : public Cloneable<Softmax2dImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Softmax2d);

}  // namespace ember::nn
