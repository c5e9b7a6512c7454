// Fold, Unfold, PixelShuffle and PixelUnshuffle modules.
#include "ember/nn/modules/fold.h"

#include "ember/nn/functional.h"

namespace ember::nn {

Tensor FoldImpl::forward(const Tensor& input) { return functional::fold(input, options); }
void FoldImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Fold(output_size=" << IntArrayRef(options.output_size())
         << ", kernel_size=" << IntArrayRef(options.kernel_size()) << ", dilation=" << IntArrayRef(options.dilation())
         << ", padding=" << IntArrayRef(options.padding()) << ", stride=" << IntArrayRef(options.stride()) << ")";
}

Tensor UnfoldImpl::forward(const Tensor& input) { return functional::unfold(input, options); }
void UnfoldImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Unfold(kernel_size=" << IntArrayRef(options.kernel_size())
         << ", dilation=" << IntArrayRef(options.dilation()) << ", padding=" << IntArrayRef(options.padding())
         << ", stride=" << IntArrayRef(options.stride()) << ")";
}

Tensor PixelShuffleImpl::forward(const Tensor& input) { return functional::pixel_shuffle(input, options); }
void PixelShuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::PixelShuffle(upscale_factor=" << options.upscale_factor() << ")";
}

Tensor PixelUnshuffleImpl::forward(const Tensor& input) { return functional::pixel_unshuffle(input, options); }
void PixelUnshuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::PixelUnshuffle(downscale_factor=" << options.downscale_factor() << ")";
}

}  // namespace ember::nn
