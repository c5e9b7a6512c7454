// mv, dot, baddbmm: shape checks over matmul, bmm and sum (their gradients come with them).
#include "ops/op_utils.h"

namespace ember {

Tensor mv(const Tensor& self, const Tensor& vec) {
  EMBER_CHECK(self.defined() && vec.defined(), "mv", "called with an undefined tensor");
  EMBER_CHECK(self.dim() == 2 && vec.dim() == 1, "mv", "vector + matrix @ vector expected, got ", self.dim(), ", ",
              vec.dim());
  EMBER_CHECK(self.size(1) == vec.size(0), "mv", "size mismatch, got input (", self.size(0), "x", self.size(1),
              "), vec (", vec.size(0), ")");
  return matmul(self, vec);
}

Tensor dot(const Tensor& self, const Tensor& other) {
  EMBER_CHECK(self.defined() && other.defined(), "dot", "called with an undefined tensor");
  EMBER_CHECK(self.dim() == 1 && other.dim() == 1, "dot", "1D tensors expected, but got ", self.dim(), "D and ",
              other.dim(), "D tensors");
  EMBER_CHECK(self.scalar_type() == other.scalar_type(), "dot",
              "expected both vectors to have same dtype, but found ", dtype_name(self.scalar_type()), " and ",
              dtype_name(other.scalar_type()));
  EMBER_CHECK(self.size(0) == other.size(0), "dot", "inconsistent tensor size, expected tensor [", self.size(0),
              "] and src [", other.size(0), "] to have the same number of elements, but got ", self.size(0),
              " and ", other.size(0), " elements respectively");
  return (self * other).sum(self.scalar_type());
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  EMBER_CHECK(self.defined() && batch1.defined() && batch2.defined(), "baddbmm", "called with an undefined tensor");
  EMBER_CHECK(batch1.dim() == 3 && batch2.dim() == 3, "baddbmm", "batch1 must be a 3D tensor and batch2 too, got ",
              batch1.dim(), "-D and ", batch2.dim(), "-D");
  EMBER_CHECK(batch1.size(0) == batch2.size(0) && batch1.size(2) == batch2.size(1), "baddbmm", "shapes ",
              batch1.sizes(), " and ", batch2.sizes(), " cannot be multiplied batchwise");
  const std::vector<int64_t> shape = {batch1.size(0), batch1.size(1), batch2.size(2)};
  EMBER_CHECK(ops::broadcast_shapes(self.sizes(), shape, "baddbmm") == shape, "baddbmm", "self of shape ",
              self.sizes(), " cannot be broadcast to the product's shape ", shape);
  Tensor product = bmm(batch1, batch2);
  if (alpha.toDouble() != 1) product = product * alpha;
  // beta == 0 ignores self entirely (NaN and inf in it do not propagate), as PyTorch.
  if (beta.toDouble() == 0) return product;
  return (beta.toDouble() == 1 ? self : self * beta) + product;
}

Tensor Tensor::mv(const Tensor& vec) const { return ember::mv(*this, vec); }
Tensor Tensor::dot(const Tensor& other) const { return ember::dot(*this, other); }
Tensor Tensor::baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta, const Scalar& alpha) const {
  return ember::baddbmm(*this, batch1, batch2, beta, alpha);
}

}  // namespace ember
