// InstanceNorm1d, InstanceNorm2d, InstanceNorm3d over F::instance_norm.
#include "ember/nn/modules/instancenorm.h"

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

constexpr const char* kInstanceNormNames[] = {"", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"};

}  // namespace

template <size_t D>
InstanceNormNdImpl<D>::InstanceNormNdImpl(const InstanceNormOptions& options_)
    : NormImplBase(kInstanceNormNames[D], options_.num_features(), options_.affine(), options_.track_running_stats()),
      options(options_) {}

template <size_t D>
Tensor InstanceNormNdImpl<D>::forward(const Tensor& input) {
  const char* name = kInstanceNormNames[D];
  const int64_t rank = input.defined() ? input.dim() : -1;
  EMBER_CHECK(rank == static_cast<int64_t>(D) + 1 || rank == static_cast<int64_t>(D) + 2, name, "expected a ", D + 1,
              "-d (unbatched) or ", D + 2, "-d input, got ", input.defined() ? input.sizes() : IntArrayRef());
  const bool unbatched = rank == static_cast<int64_t>(D) + 1;
  const Tensor batched = unbatched ? input.unsqueeze(0) : input;
  EMBER_CHECK(!options.affine() || batched.size(1) == options.num_features(), name, "expected ", options.num_features(),
              " channels (num_features), got input ", input.sizes());
  Tensor out = functional::instance_norm(batched, InstanceNormFuncOptions()
                                                      .running_mean(running_mean)
                                                      .running_var(running_var)
                                                      .weight(weight)
                                                      .bias(bias)
                                                      .use_input_stats(is_training() || !options.track_running_stats())
                                                      .momentum(options.momentum())
                                                      .eps(options.eps()));
  return unbatched ? out.squeeze(0) : out;
}

template <size_t D>
void InstanceNormNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << kInstanceNormNames[D] << "(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=" << options.momentum() << ", affine=" << (options.affine() ? "true" : "false")
         << ", track_running_stats=" << (options.track_running_stats() ? "true" : "false") << ")";
}

template class InstanceNormNdImpl<1>;
template class InstanceNormNdImpl<2>;
template class InstanceNormNdImpl<3>;

}  // namespace ember::nn
