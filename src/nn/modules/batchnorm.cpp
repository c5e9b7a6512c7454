// NormImplBase, BatchNorm1d, BatchNorm2d, BatchNorm3d.
#include "ember/nn/modules/batchnorm.h"

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember::nn {
namespace {

constexpr const char* kBatchNormNames[] = {"", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"};

}  // namespace

NormImplBase::NormImplBase(const char* name, int64_t features, bool affine, bool track_running_stats) {
  EMBER_CHECK(features > 0, name, "num_features must be positive, got ", features);
  register_state(features, affine, track_running_stats);
}

void NormImplBase::register_state(int64_t features, bool affine, bool track_running_stats) {
  if (affine) {
    weight = register_parameter("weight", ember::empty({features}));
    bias = register_parameter("bias", ember::empty({features}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", ember::zeros({features}));
    running_var = register_buffer("running_var", ember::ones({features}));
    num_batches_tracked = register_buffer("num_batches_tracked", ember::zeros({}, kInt64));
  }
  reset_parameters();
}

void NormImplBase::reset_running_stats() {
  if (!running_mean.defined()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void NormImplBase::reset_parameters() {
  reset_running_stats();
  if (weight.defined()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <size_t D>
BatchNormNdImpl<D>::BatchNormNdImpl(const BatchNormOptions& options_)
    : NormImplBase(kBatchNormNames[D], options_.num_features(), options_.affine(), options_.track_running_stats()),
      options(options_) {}

template <size_t D>
Tensor BatchNormNdImpl<D>::forward(const Tensor& input) {
  const char* name = kBatchNormNames[D];
  const int64_t rank = input.defined() ? input.dim() : -1;
  // BatchNorm1d takes [N, C] or [N, C, L]; the others [N, C, *D spatial].
  EMBER_CHECK(rank == static_cast<int64_t>(D) + 2 || (D == 1 && rank == 2), name, "expected ",
              D == 1 ? "a 2-d or 3-d" : D == 2 ? "a 4-d" : "a 5-d", " input, got ",
              input.defined() ? input.sizes() : IntArrayRef());
  EMBER_CHECK(input.size(1) == options.num_features(), name, "expected ", options.num_features(),
              " channels (num_features), got input ", input.sizes());
  // PyTorch's factor: momentum, or the cumulative average 1 / batches seen when it is unset.
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!options.momentum()) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  const bool update_running = !is_training() || options.track_running_stats();
  return functional::batch_norm(input, update_running ? running_mean : Tensor(),
                                update_running ? running_var : Tensor(),
                                BatchNormFuncOptions()
                                    .weight(weight)
                                    .bias(bias)
                                    .training(use_batch_stats)
                                    .momentum(factor)
                                    .eps(options.eps()));
}

template <size_t D>
void BatchNormNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << kBatchNormNames[D] << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    stream << *options.momentum();
  else
    stream << "None";
  stream << ", affine=" << (options.affine() ? "true" : "false")
         << ", track_running_stats=" << (options.track_running_stats() ? "true" : "false") << ")";
}

template class BatchNormNdImpl<1>;
template class BatchNormNdImpl<2>;
template class BatchNormNdImpl<3>;

}  // namespace ember::nn
