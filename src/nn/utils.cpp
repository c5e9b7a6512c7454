// Gradient clipping with PyTorch's formulas (torch/nn/utils/clip_grad.py), parameter vectors
// and the packing of padded sequences (nn/utils.h).
#include "ember/nn/utils.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/graph_capture.h"
#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/functions.h"
#include "ops/optimizer_update.h"

namespace ember::nn::utils {
namespace {

// The norm_type norm of one gradient, accumulated in at least float32.
double gradient_norm(const Tensor& grad, double norm_type) {
  Tensor g = grad.scalar_type() == kFloat64 ? grad : grad.to(kFloat32);
  if (g.numel() == 0) return 0;
  if (std::isinf(norm_type)) return g.abs().max().item<double>();
  if (norm_type == 0) return (g != 0).sum().item<double>();
  if (norm_type == 2) return g.square().sum().sqrt().item<double>();
  return g.abs().pow(norm_type).sum().pow(1 / norm_type).item<double>();
}

double combine_norms(const std::vector<double>& norms, double norm_type) {
  double total = 0;
  if (std::isinf(norm_type)) {
    for (double n : norms) total = std::isnan(n) || std::isnan(total) ? NAN : std::max(total, n);
    return total;
  }
  if (norm_type == 0) {
    for (double n : norms) total += n;
    return total;
  }
  for (double n : norms) total += std::pow(n, norm_type);
  return std::pow(total, 1 / norm_type);
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(norm_type >= 0, "clip_grad_norm_", "norm_type must be non-negative, got ",
              norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0;
  double total_norm = 0;
  if (norm_type == 2 && !core::active_capture()) {
    // One pass over all gradients, in float64 (a pass of squares and one of sums per gradient before).
    for (double square : ops::sums_of_squares(grads)) total_norm += square;
    total_norm = std::sqrt(total_norm);
  } else {
    std::vector<double> norms;
    for (const Tensor& g : grads) norms.push_back(gradient_norm(g, norm_type));
    total_norm = combine_norms(norms, norm_type);
  }
  EMBER_CHECK(!(error_if_nonfinite && !std::isfinite(total_norm)), "clip_grad_norm_", "the total norm of order ",
              norm_type, " for gradients from `parameters` is non-finite (", total_norm,
              "), so it cannot be clipped; pass error_if_nonfinite=false to scale anyway");
  const double clip_coef = std::min(max_norm / (total_norm + 1e-6), 1.0);
  if (clip_coef != 1.0 || core::active_capture())  // x * 1 is x: gradients under max_norm stay as they are
    for (Tensor& g : grads) g.mul_(clip_coef);
  return total_norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor grad = p.grad();
    grad.clamp_(-clip_value, clip_value);
  }
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> flat;
  flat.reserve(parameters.size());
  for (const Tensor& p : parameters) {
    EMBER_CHECK(p.defined(), "parameters_to_vector", "parameter ", flat.size(), " is undefined");
    flat.push_back(p.reshape({-1}));
  }
  EMBER_CHECK(!flat.empty(), "parameters_to_vector", "expected at least one parameter");
  return ember::cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  EMBER_CHECK(vec.defined() && vec.dim() == 1, "vector_to_parameters", "expected a 1-d tensor, got ",
              vec.defined() ? vec.dim() : 0, " dimensions");
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  EMBER_CHECK(total == vec.numel(), "vector_to_parameters", "the vector has ", vec.numel(),
              " elements, the parameters ", total);
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    Tensor param = p;
    param.copy_(vec.slice(0, offset, offset + p.numel()).view_as(p));
    offset += p.numel();
  }
}

namespace rnn {

Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return {};
  Tensor inverse = ember::empty_like(permutation, TensorOptions().dtype(kInt64));
  NoGradGuard no_grad;
  inverse.scatter_(0, permutation.to(kInt64), ember::arange(permutation.numel(), TensorOptions().dtype(kInt64)));
  return inverse;
}

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(unsorted_indices.defined() ? std::move(unsorted_indices) : invert_permutation(sorted_indices_)) {}

PackedSequence PackedSequence::to(TensorOptions options) const {
  Tensor data = data_.to(options);
  if (data.is_same(data_)) return *this;
  return PackedSequence(data, batch_sizes_, sorted_indices_, unsorted_indices_);
}

namespace {

// libtorch's _pack_padded_sequence: input [T, B, *] with decreasing lengths.
std::tuple<Tensor, Tensor> pack_sorted(const Tensor& input, const std::vector<int64_t>& lengths) {
  constexpr const char* kOp = "pack_padded_sequence";
  EMBER_CHECK(input.numel() > 0, kOp, "Cannot pack empty tensors.");
  const int64_t batch_size = input.size(1);
  EMBER_CHECK(static_cast<int64_t>(lengths.size()) == batch_size, kOp,
              "Expected `len(lengths)` to be equal to batch_size, but got ", lengths.size(), " (batch_size=",
              batch_size, ")");
  EMBER_CHECK(lengths.back() > 0, kOp,
              "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  for (int64_t b = 1; b < batch_size; ++b)
    EMBER_CHECK(lengths[b - 1] >= lengths[b], kOp,
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability.");
  EMBER_CHECK(lengths.front() <= input.size(0), kOp, "the longest length (", lengths.front(),
              ") exceeds the input's ", input.size(0), " steps");
  std::vector<Tensor> steps;
  std::vector<int64_t> batch_sizes;
  for (int64_t t = 0; t < lengths.front(); ++t) {
    int64_t running = 0;
    while (running < batch_size && lengths[running] > t) ++running;
    batch_sizes.push_back(running);
    steps.push_back(input.select(0, t).slice(0, 0, running));
  }
  return {ember::cat(steps), ember::tensor(batch_sizes)};
}

std::vector<int64_t> to_vector(const Tensor& lengths) {
  Tensor l = lengths.to(kInt64).contiguous();
  const int64_t* data = l.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + l.numel());
}

}  // namespace

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  EMBER_CHECK(lengths.defined() && lengths.dim() == 1, "pack_padded_sequence",
              "'lengths' argument should be a 1D tensor");
  lengths = lengths.to(kInt64);
  Tensor sorted_indices;
  if (!enforce_sorted) {
    std::tie(lengths, sorted_indices) = ember::sort(lengths, /*stable=*/true, /*dim=*/-1, /*descending=*/true);
    input = input.index_select(batch_first ? 0 : 1, sorted_indices);
  }
  if (batch_first && input.dim() >= 2) input = input.transpose(0, 1);
  auto [data, batch_sizes] = pack_sorted(input, to_vector(lengths));
  return PackedSequence(data, batch_sizes, sorted_indices, {});
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  const std::vector<int64_t> batch_sizes = to_vector(sequence.batch_sizes());
  int64_t max_length = static_cast<int64_t>(batch_sizes.size());
  if (total_length) {
    EMBER_CHECK(*total_length >= max_length, "pad_packed_sequence",
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                "total_length=",
                *total_length, " and max sequence length being ", max_length);
    max_length = *total_length;
  }
  const Tensor& data = sequence.data();
  const int64_t max_batch = batch_sizes.empty() ? 0 : batch_sizes.front();
  std::vector<int64_t> step_shape = data.sizes().vec();
  std::vector<Tensor> steps;
  std::vector<int64_t> lengths(static_cast<size_t>(max_batch), 0);
  int64_t offset = 0;
  for (int64_t t = 0; t < max_length; ++t) {
    const int64_t size = t < static_cast<int64_t>(batch_sizes.size()) ? batch_sizes[t] : 0;
    for (int64_t b = 0; b < size; ++b) lengths[b] = t + 1;
    std::vector<Tensor> parts;
    if (size > 0) parts.push_back(data.slice(0, offset, offset + size));
    if (size < max_batch) {
      step_shape[0] = max_batch - size;
      parts.push_back(ember::full(step_shape, padding_value, data.options()));
    }
    steps.push_back(parts.size() == 1 ? parts[0] : ember::cat(parts));
    offset += size;
  }
  Tensor padded = ember::stack(steps);
  Tensor lengths_tensor = ember::tensor(lengths);
  if (batch_first) padded = padded.transpose(0, 1);
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(batch_first ? 0 : 1, sequence.unsorted_indices());
    lengths_tensor = lengths_tensor.index_select(0, sequence.unsorted_indices());
  }
  return {padded, lengths_tensor};
}

Tensor pad_sequence(ArrayRef<Tensor> sequences, bool batch_first, double padding_value) {
  EMBER_CHECK(!sequences.empty(), "pad_sequence", "expected at least one sequence");
  int64_t max_length = 0;
  for (const Tensor& s : sequences) {
    EMBER_CHECK(s.defined() && s.dim() >= 1, "pad_sequence", "every sequence must have at least one dimension");
    max_length = std::max(max_length, s.size(0));
  }
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences) {
    if (s.size(0) == max_length) {
      padded.push_back(s);
      continue;
    }
    std::vector<int64_t> pad_shape = s.sizes().vec();
    pad_shape[0] = max_length - s.size(0);
    padded.push_back(ember::cat({s, ember::full(pad_shape, padding_value, s.options())}));
  }
  return ember::stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(ArrayRef<Tensor> sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.size(0));
  return pack_padded_sequence(pad_sequence(sequences), ember::tensor(lengths), /*batch_first=*/false,
                              enforce_sorted);
}

}  // namespace rnn
}  // namespace ember::nn::utils
