// Turning a convolution's padding option into per-dim amounts (internal, shared by the
// functional forms and the Conv modules).
#pragma once
#include <vector>

#include "ember/nn/options.h"

namespace ember::nn::detail {

// Padding before and after each spatial dim.
struct PadAmounts {
  std::vector<int64_t> before, after;
  bool symmetric() const { return before == after; }
  // The F::pad list: (before, after) pairs from the last dim backwards.
  std::vector<int64_t> pad_list() const;
};

// kSame: dilation * (kernel - 1) in all, the odd one after (stride must be 1); kValid: none.
PadAmounts pad_amounts(bool same, bool valid, IntArrayRef values, IntArrayRef kernel, IntArrayRef dilation,
                       IntArrayRef stride, const char* op);

template <size_t D>
PadAmounts pad_amounts(const ConvPadding<D>& padding, IntArrayRef kernel, IntArrayRef dilation, IntArrayRef stride,
                       const char* op) {
  const auto* values = std::get_if<ExpandingArray<D>>(&padding);
  return pad_amounts(std::holds_alternative<enumtype::kSame>(padding),
                     std::holds_alternative<enumtype::kValid>(padding), values ? IntArrayRef(*values) : IntArrayRef(),
                     kernel, dilation, stride, op);
}

}  // namespace ember::nn::detail
