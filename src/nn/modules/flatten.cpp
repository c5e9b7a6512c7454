// Identity, Flatten and Unflatten: shape-only modules over Tensor's view ops.
#include "ember/nn/modules/linear.h"

namespace ember::nn {

Tensor IdentityImpl::forward(const Tensor& input) { return input; }
void IdentityImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Identity()"; }

FlattenImpl::FlattenImpl(const FlattenOptions& options_) : options(options_) {}
Tensor FlattenImpl::forward(const Tensor& input) { return input.flatten(options.start_dim(), options.end_dim()); }
void FlattenImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim() << ")";
}

UnflattenImpl::UnflattenImpl(UnflattenOptions options_) : options(std::move(options_)) {
  EMBER_CHECK(!options.sizes().empty(), "Unflatten", "sizes must be non-empty, got []");
}
Tensor UnflattenImpl::forward(const Tensor& input) { return input.unflatten(options.dim(), options.sizes()); }
void UnflattenImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Unflatten(dim=" << options.dim() << ", unflattened_size={";
  for (size_t i = 0; i < options.sizes().size(); ++i) stream << (i ? ", " : "") << options.sizes()[i];
  stream << "})";
}

}  // namespace ember::nn
