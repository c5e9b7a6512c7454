// AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"), as
// libtorch's torch::nn::AdaptiveLogSoftmaxWithLoss: a head over the shortlist (classes below
// cutoffs[0]) and one entry per tail cluster, each cluster a two-layer projection without bias.
#pragma once
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"

namespace ember::nn {

// cutoffs: increasing, each in (0, n_classes - 1]; cluster i has in_features / div_value^(i+1)
// hidden features.
struct AdaptiveLogSoftmaxWithLossOptions {
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, n_classes);
  EMBER_ARG(std::vector<int64_t>, cutoffs);
  EMBER_ARG(double, div_value) = 4.;
  EMBER_ARG(bool, head_bias) = false;
};

// forward's result: each row's log-probability of its target, and the mean negative of them.
struct ASMoutput {
  ASMoutput(Tensor output, double loss) : output(std::move(output)), loss(loss) {}
  Tensor output;
  double loss;
};

class AdaptiveLogSoftmaxWithLossImpl : public Module {
 public:
  AdaptiveLogSoftmaxWithLossImpl(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions(in_features, n_classes, std::move(cutoffs))) {}
  explicit AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options);

  // input [N, in_features] with target [N] (or [in_features] with a 0-d target).
  ASMoutput forward(const Tensor& input, const Tensor& target);
  // [N, n_classes] log-probabilities of every class.
  Tensor log_prob(const Tensor& input);
  // [N] the most probable class of each row.
  Tensor predict(const Tensor& input);
  void reset();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  AdaptiveLogSoftmaxWithLossOptions options;
  // options.cutoffs() with n_classes appended.
  std::vector<int64_t> cutoffs;
  int64_t shortlist_size = 0;
  int64_t n_clusters = 0;
  int64_t head_size = 0;
  Linear head = nullptr;
  ModuleList tail;

 private:
  Tensor full_log_prob(const Tensor& input, const Tensor& head_output);
};
EMBER_MODULE(AdaptiveLogSoftmaxWithLoss);

}  // namespace ember::nn
