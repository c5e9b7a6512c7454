// nonzero and the ops that select by a mask (masked_select, masked_scatter), plus one_hot.
// The positions come from cpu::nonzero_indices; gradients flow through index_select and scatter.
#include "cpu/nonzero.h"
#include "ops/op_utils.h"

namespace ember {

Tensor Tensor::nonzero() const {
  EMBER_CHECK(defined(), "nonzero", "called with an undefined tensor");
  NoGradGuard guard;
  const Tensor mask = (scalar_type() == kBool ? *this : ne(0)).contiguous();
  const bool* data = mask.data_ptr<bool>();
  Tensor out = core::make_tensor({cpu::count_true(data, mask.numel()), dim()}, kInt64);
  cpu::nonzero_indices(data, mask.sizes().data(), dim(), out.data_ptr<int64_t>());
  return out;
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  EMBER_CHECK(defined() && mask.defined(), "masked_select", "called with an undefined tensor");
  EMBER_CHECK(mask.scalar_type() == kBool, "masked_select", "mask must be bool, got ", dtype_name(mask.scalar_type()));
  const std::vector<int64_t> shape = ops::broadcast_shapes(sizes(), mask.sizes(), "masked_select");
  const Tensor positions = mask.expand(shape).reshape({-1}).nonzero().view({-1});
  return expand(shape).reshape({-1}).index_select(0, positions);
}

Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  EMBER_CHECK(defined() && mask.defined() && source.defined(), "masked_scatter", "called with an undefined tensor");
  EMBER_CHECK(mask.scalar_type() == kBool, "masked_scatter", "mask must be bool, got ",
              dtype_name(mask.scalar_type()));
  EMBER_CHECK(source.scalar_type() == scalar_type(), "masked_scatter", "source dtype ",
              dtype_name(source.scalar_type()), " does not match self dtype ", dtype_name(scalar_type()));
  const std::vector<int64_t> shape = ops::broadcast_shapes(sizes(), mask.sizes(), "masked_scatter");
  EMBER_CHECK(shape == sizes(), "masked_scatter", "mask of shape ", mask.sizes(), " cannot be broadcast to ", sizes());
  const Tensor positions = mask.expand(shape).reshape({-1}).nonzero().view({-1});
  const int64_t count = positions.numel();
  EMBER_CHECK(source.numel() >= count, "masked_scatter", "the mask selects ", count,
              " elements but source has only ", source.numel());
  const Tensor taken = source.reshape({-1}).narrow(0, 0, count);
  return reshape({-1}).scatter(0, positions, taken).view(shape);
}

Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) const {
  const Tensor& self = *this;
  return ops::inplace(
      self, "masked_scatter_", {mask, source}, [&](const Tensor& a) { return a.masked_scatter(mask, source); },
      [&] { ops::copy_into(self, self.masked_scatter(mask, source)); });
}

Tensor nonzero(const Tensor& x) { return x.nonzero(); }
Tensor masked_select(const Tensor& x, const Tensor& mask) { return x.masked_select(mask); }
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  return x.masked_scatter(mask, source);
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  EMBER_CHECK(self.defined(), "one_hot", "called with an undefined tensor");
  EMBER_CHECK(self.scalar_type() == kInt64, "one_hot", "one_hot is only applicable to index tensor of dtype int64, got ",
              dtype_name(self.scalar_type()));
  EMBER_CHECK(num_classes >= -1, "one_hot", "num_classes should be -1 or positive, got ", num_classes);
  NoGradGuard guard;
  if (self.numel() == 0) {
    EMBER_CHECK(num_classes > 0, "one_hot", "Can not infer total number of classes from empty tensor.");
  } else {
    const int64_t lowest = self.min().item<int64_t>(), highest = self.max().item<int64_t>();
    EMBER_CHECK(lowest >= 0, "one_hot", "Class values must be non-negative, got ", lowest);
    if (num_classes == -1) num_classes = highest + 1;
    EMBER_CHECK(highest < num_classes, "one_hot", "Class values must be smaller than num_classes (", num_classes,
                "), got ", highest);
  }
  return self.unsqueeze(-1).eq(arange(num_classes, kInt64)).to(kInt64);
}

}  // namespace ember
