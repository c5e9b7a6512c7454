// nn::functional::linear_cross_entropy (its options checked, then the fused op of
// src/ops/linear_cross_entropy.cpp, Note [Fused linear cross-entropy]) and the module
// LinearCrossEntropyLoss, the LM head and its loss.
#include "ember/nn/loss/linear_cross_entropy.h"

#include <cmath>
#include <ostream>

#include "ember/functions.h"
#include "ember/nn/init.h"
#include "ops/linear_cross_entropy.h"

namespace ember::nn {
namespace functional {
namespace {

constexpr const char* kOp = "linear_cross_entropy";

void check_options(const LinearCrossEntropyFuncOptions& o) {
  EMBER_CHECK(o.label_smoothing() >= 0 && o.label_smoothing() <= 1, kOp, "label_smoothing must be within [0, 1], got ",
              o.label_smoothing());
  EMBER_CHECK(o.z_loss() >= 0 && std::isfinite(o.z_loss()), kOp, "z_loss must be a finite value >= 0, got ", o.z_loss());
  EMBER_CHECK(o.softcap() >= 0 && std::isfinite(o.softcap()), kOp, "softcap must be a finite value >= 0 (0 is off), got ",
              o.softcap());
  EMBER_CHECK(o.reduction() != kBatchMean, kOp, "reduction 'batchmean' is not supported; use kMean, kSum or kNone");
  EMBER_CHECK(o.chunk_size() >= 0 && o.chunk_size() % kLinearCrossEntropyTokenBlock == 0, kOp, "chunk_size (",
              o.chunk_size(), ") must be 0 (auto) or a positive multiple of ", kLinearCrossEntropyTokenBlock);
  EMBER_CHECK(o.memory_budget() > 0, kOp, "memory_budget must be positive, got ", o.memory_budget());
  EMBER_CHECK(!o.loss_dtype() || is_floating_point(*o.loss_dtype()), kOp, "loss_dtype must be a floating dtype, got ",
              dtype_name(o.loss_dtype().value_or(kFloat32)));
}

ops::LinearCrossEntropyParams::Reduction op_reduction(Reduction reduction) {
  using R = ops::LinearCrossEntropyParams::Reduction;
  return reduction == kNone ? R::None : reduction == kSum ? R::Sum : R::Mean;
}

}  // namespace

Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& target,
                            const LinearCrossEntropyFuncOptions& options) {
  check_options(options);
  ops::LinearCrossEntropyParams params;
  params.bias = options.bias();
  params.class_weight = options.class_weight();
  params.reduction = op_reduction(options.reduction());
  params.ignore_index = options.ignore_index();
  params.label_smoothing = options.label_smoothing();
  params.z_loss = options.z_loss();
  params.softcap = options.softcap();
  params.chunk_size = options.chunk_size();
  params.memory_budget = options.memory_budget();
  params.token_block = kLinearCrossEntropyTokenBlock;
  params.loss_dtype = options.loss_dtype();
  return ops::linear_cross_entropy(input, weight, target, params);
}

}  // namespace functional

LinearCrossEntropyLossImpl::LinearCrossEntropyLossImpl(const LinearCrossEntropyLossOptions& options_)
    : options(options_) {
  const int64_t in = options.in_features(), classes = options.num_classes();
  EMBER_CHECK(in >= 0 && classes >= 1, "LinearCrossEntropyLoss", "in_features (", in,
              ") must be non-negative and num_classes (", classes, ") positive");
  const Tensor& tied = options.tied_weight();
  if (tied.defined()) {
    EMBER_CHECK(tied.dim() == 2 && tied.size(0) == classes && tied.size(1) == in, "LinearCrossEntropyLoss",
                "tied_weight of shape ", tied.sizes(), " must be [num_classes, in_features] = [", classes, ", ", in,
                "]");
  }
  weight = register_parameter("weight", tied.defined() ? tied : empty({classes, in}));
  bias = register_parameter("bias", options.bias() ? empty({classes}) : Tensor(), options.bias());
  class_weight = register_buffer("class_weight", options.class_weight());
  reset_parameters();
}

void LinearCrossEntropyLossImpl::reset_parameters() {
  // A tied weight belongs to (and was initialised by) its other module.
  if (!options.tied_weight().defined()) init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = options.in_features();
    const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearCrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::linear_cross_entropy(input, weight, target,
                                          LinearCrossEntropyFuncOptions()
                                              .settings(options.settings())
                                              .class_weight(class_weight)  // the buffer: load_state_dict and to() act on it
                                              .bias(bias));
}

void LinearCrossEntropyLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::LinearCrossEntropyLoss(in_features=" << options.in_features() << ", num_classes=" << options.num_classes()
         << ", bias=" << (options.bias() ? "true" : "false") << ", tied=" << (options.tied_weight().defined() ? "true" : "false")
         << ", reduction=" << reduction_name(options.reduction()) << ")";
}

}  // namespace ember::nn
