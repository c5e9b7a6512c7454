// F::embedding_bag / ember::embedding_bag (sums, means or maxima of bags of embedding rows,
// PyTorch's aten/src/ATen/native/EmbeddingBag.cpp semantics) and F::bilinear, composed of
// index_select, index_add and reductions: gradients of any order for the weights.
#include <algorithm>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember {
namespace nn {

EmbeddingBagMode::EmbeddingBagMode(Reduction reduction) {
  EMBER_CHECK(reduction == Reduction::Sum || reduction == Reduction::Mean, "EmbeddingBagMode",
              "the mode must be kSum, kMean or kMax, got ", reduction_name(reduction));
  kind_ = reduction == Reduction::Sum ? Kind::Sum : Kind::Mean;
}

}  // namespace nn

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(const Tensor& weight, const Tensor& indices,
                                                         const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                                                         bool sparse, const Tensor& per_sample_weights,
                                                         bool include_last_offset, int64_t padding_idx) {
  const char* op = "embedding_bag";
  EMBER_CHECK(!sparse && !scale_grad_by_freq, op,
              "sparse gradients and scale_grad_by_freq are not supported for bags");
  EMBER_CHECK(mode >= 0 && mode <= 2, op, "mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  EMBER_CHECK(weight.dim() == 2, op, "weight must be 2-D [num_embeddings, embedding_dim], got shape ", weight.sizes());
  EMBER_CHECK(indices.dim() == 1 && offsets.dim() == 1, op, "indices and offsets must be 1-D, got shapes ",
              indices.sizes(), " and ", offsets.sizes());
  EMBER_CHECK(is_integral(indices.scalar_type()) && is_integral(offsets.scalar_type()), op,
              "indices and offsets must be integer tensors");
  const int64_t rows = weight.size(0), dim = weight.size(1), count = indices.numel();
  EMBER_CHECK(padding_idx < rows, op, "padding_idx ", padding_idx, " is out of range for ", rows, " rows");
  Tensor index = indices.to(kInt64).contiguous();
  std::vector<int64_t> starts(offsets.numel());
  Tensor offsets64 = offsets.to(kInt64).contiguous();
  std::copy_n(offsets64.data_ptr<int64_t>(), starts.size(), starts.begin());
  if (!include_last_offset) starts.push_back(count);
  EMBER_CHECK(!starts.empty() && (starts.size() > 1 || include_last_offset), op, "offsets must not be empty");
  const int64_t bags = static_cast<int64_t>(starts.size()) - 1;
  EMBER_CHECK(bags == 0 || starts[0] == 0, op, "offsets[0] has to be 0, got ", starts[0]);
  for (int64_t b = 0; b < bags; ++b) {
    EMBER_CHECK(starts[b] <= starts[b + 1] && starts[b + 1] <= count, op,
                "offsets must be increasing and within the ", count, " indices, got ", offsets64.sizes());
  }
  // Each index's bag, and whether it counts (padding_idx does not).
  std::vector<int64_t> bag_of(static_cast<size_t>(count), 0), bag_size(static_cast<size_t>(bags), 0);
  std::vector<double> keep(static_cast<size_t>(count), 0);
  const int64_t* idx = index.data_ptr<int64_t>();
  for (int64_t b = 0; b < bags; ++b) {
    for (int64_t i = starts[b]; i < starts[b + 1]; ++i) {
      EMBER_CHECK(idx[i] >= 0 && idx[i] < rows, op, "index ", idx[i], " is out of range for ", rows, " rows");
      bag_of[static_cast<size_t>(i)] = b;
      if (idx[i] != padding_idx) {
        keep[static_cast<size_t>(i)] = 1;
        ++bag_size[static_cast<size_t>(b)];
      }
    }
  }
  Tensor offset2bag = tensor(bag_of, kInt64).reshape({count});
  Tensor sizes = tensor(bag_size, kInt64).reshape({bags});
  Tensor kept = tensor(keep, kFloat64).reshape({count, 1}).to(weight.scalar_type());
  Tensor gathered = weight.index_select(0, index) * kept;  // [count, dim], padding rows zeroed
  if (per_sample_weights.defined()) {
    EMBER_CHECK(mode == 0, op, "per_sample_weights are only supported for mode sum");
    EMBER_CHECK(per_sample_weights.sizes() == indices.sizes(), op, "per_sample_weights of shape ",
                per_sample_weights.sizes(), " must have the indices' shape ", indices.sizes());
    gathered = gathered * per_sample_weights.unsqueeze(1);
  }
  if (mode != 2) {
    Tensor out = zeros({bags, dim}, weight.scalar_type()).index_add(0, offset2bag, gathered);
    if (mode == 1) out = out / sizes.clamp_min(1).to(weight.scalar_type()).unsqueeze(1);
    return {out, offset2bag, sizes, zeros({bags}, kInt64)};
  }
  // Max: per bag over its kept rows; an empty bag gives zeros and index -1.
  std::vector<Tensor> maxima, arg_rows;
  for (int64_t b = 0; b < bags; ++b) {
    std::vector<int64_t> members;
    for (int64_t i = starts[b]; i < starts[b + 1]; ++i)
      if (keep[static_cast<size_t>(i)] != 0) members.push_back(i);
    if (members.empty()) {
      maxima.push_back(zeros({dim}, weight.scalar_type()));
      arg_rows.push_back(full({dim}, -1, kInt64));
      continue;
    }
    Tensor member_index = tensor(members, kInt64).reshape({static_cast<int64_t>(members.size())});
    auto [values, position] = gathered.index_select(0, member_index).max(0);
    maxima.push_back(values);
    arg_rows.push_back(index.index_select(0, member_index).index_select(0, position));
  }
  if (bags == 0) return {zeros({0, dim}, weight.scalar_type()), offset2bag, sizes, zeros({0, dim}, kInt64)};
  return {stack(maxima), offset2bag, sizes, stack(arg_rows)};
}

namespace nn::functional {

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options) {
  const char* op = "embedding_bag";
  Tensor indices = input;
  Tensor offsets = options.offsets();
  if (input.dim() == 2) {
    EMBER_CHECK(!offsets.defined(), op, "if input is 2-D, then offsets has to be undefined, as input is treated as a ",
                "mini-batch of fixed length sequences");
    offsets = arange(0, input.numel(), input.size(1), kInt64);
    indices = input.reshape({-1});
  } else {
    EMBER_CHECK(input.dim() == 1, op, "input has to be 1-D or 2-D, got shape ", input.sizes());
    EMBER_CHECK(offsets.defined() && offsets.dim() == 1, op, "offsets has to be a 1-D tensor for a 1-D input");
  }
  int64_t mode = 1;
  switch (options.mode().kind()) {
    case EmbeddingBagMode::Kind::Sum: mode = 0; break;
    case EmbeddingBagMode::Kind::Mean: mode = 1; break;
    case EmbeddingBagMode::Kind::Max: mode = 2; break;
  }
  // ember::embedding_bag's "no padding" is -1; the options count negative values from the end.
  int64_t padding_idx = -1;
  if (options.padding_idx()) {
    const int64_t rows = weight.size(0), p = *options.padding_idx();
    EMBER_CHECK(p >= -rows && p < rows, op, "padding_idx ", p, " must be within [", -rows, ", ", rows, ")");
    padding_idx = p < 0 ? p + rows : p;
  }
  return std::get<0>(ember::embedding_bag(weight, indices, offsets, false, mode, false, options.per_sample_weights(),
                                          options.include_last_offset(), padding_idx));
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  const char* op = "bilinear";
  EMBER_CHECK(weight.dim() == 3, op, "weight must be 3-D [out, in1, in2], got shape ", weight.sizes());
  EMBER_CHECK(input1.dim() >= 1 && input1.dim() == input2.dim() && input1.size(-1) == weight.size(1) &&
                  input2.size(-1) == weight.size(2),
              op, "inputs [*, ", weight.size(1), "] and [*, ", weight.size(2), "] expected for weight ",
              weight.sizes(), ", got ", input1.sizes(), " and ", input2.sizes());
  std::vector<int64_t> batch(input1.sizes().begin(), input1.sizes().end() - 1);
  Tensor x1 = input1.reshape({-1, weight.size(1)});
  Tensor x2 = input2.reshape({-1, weight.size(2)});
  // y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]; products of integer tensors stay exact.
  Tensor left;  // [B, out, in2]
  if (x1.is_floating_point() && weight.is_floating_point()) {
    left = matmul(x1, weight.permute({1, 0, 2}).reshape({weight.size(1), -1}))
               .reshape({x1.size(0), weight.size(0), weight.size(2)});
  } else {
    left = (x1.unsqueeze(1).unsqueeze(3) * weight.unsqueeze(0)).sum({2});
  }
  Tensor out = (left * x2.unsqueeze(1)).sum({2});
  if (bias.defined()) out = out + bias;
  batch.push_back(weight.size(0));
  return out.reshape(batch);
}

}  // namespace nn::functional
}  // namespace ember
