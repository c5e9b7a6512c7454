// Distances and normalisation (F::cosine_similarity, F::pairwise_distance, F::pdist,
// F::normalize) with PyTorch's formulas (aten/src/ATen/native/Distance.cpp, Normalization.cpp),
// composed of ember ops: gradients of any order.
#include <algorithm>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options) {
  const char* op = "cosine_similarity";
  const int64_t rank = std::max(x1.dim(), x2.dim());
  EMBER_CHECK(rank > 0, op, "expected inputs of at least 1 dim, got 0-dim tensors");
  const int64_t dim = options.dim() < 0 ? options.dim() + rank : options.dim();
  EMBER_CHECK(dim >= 0 && dim < rank, op, "dim ", options.dim(), " is out of range for inputs of ", rank, " dims");
  // Each input scaled to unit norm first (clamped at eps), as PyTorch, for precision.
  auto unit = [&](const Tensor& x) {
    Tensor x_wide = x.dim() < rank ? x.reshape([&] {
      std::vector<int64_t> shape(static_cast<size_t>(rank - x.dim()), 1);
      for (int64_t s : x.sizes()) shape.push_back(s);
      return shape;
    }())
                                   : x;
    return x_wide / x_wide.norm(2, {dim}, /*keepdim=*/true).clamp_min(options.eps());
  };
  return (unit(x1) * unit(x2)).sum({dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options) {
  const char* op = "pairwise_distance";
  const int64_t rank = std::max(x1.dim(), x2.dim());
  EMBER_CHECK(rank > 0, op, "expected inputs of at least 1 dim, got 0-dim tensors");
  EMBER_CHECK(options.p() >= 0, op, "p must be non-negative, got ", options.p());
  return (x1 - x2 + options.eps()).norm(options.p(), {rank - 1}, options.keepdim());
}

Tensor pdist(const Tensor& input, double p) {
  const char* op = "pdist";
  EMBER_CHECK(input.dim() == 2, op, "expected a 2-D input [N, M], got shape ", input.sizes());
  EMBER_CHECK(input.is_floating_point(), op, "expected a floating-point input, got ", dtype_name(input.scalar_type()));
  EMBER_CHECK(p >= 0, op, "p must be non-negative, got ", p);
  // The rows i < j, in row-major order of the upper triangle.
  const int64_t n = input.size(0);
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  }
  const int64_t pairs = static_cast<int64_t>(first.size());
  if (pairs == 0) return zeros({0}, input.scalar_type());
  Tensor i = tensor(first, kInt64).reshape({pairs});
  Tensor j = tensor(second, kInt64).reshape({pairs});
  return (input.index_select(0, i) - input.index_select(0, j)).norm(p, {1});
}

Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options) {
  Tensor denominator = input.norm(options.p(), {options.dim()}, /*keepdim=*/true).clamp_min(options.eps());
  Tensor result = input / denominator;
  if (!options.out()) return result;
  const Tensor& out = *options.out();
  EMBER_CHECK(out.sizes() == input.sizes(), "normalize", "out of shape ", out.sizes(),
              " must have the input's shape ", input.sizes());
  out.copy_(result);
  return out;
}

}  // namespace ember::nn::functional

namespace ember {

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  return nn::functional::pairwise_distance(x1, x2, nn::PairwiseDistanceOptions().p(p).eps(eps).keepdim(keepdim));
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  return nn::functional::cosine_similarity(x1, x2, nn::CosineSimilarityOptions().dim(dim).eps(eps));
}

}  // namespace ember
