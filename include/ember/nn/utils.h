// ember::nn::utils, as torch::nn::utils: gradient clipping, parameters to and from one
// vector, and the packing of variable-length sequences for recurrent layers (utils::rnn).
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "ember/array_ref.h"
#include "ember/tensor.h"
#include "ember/tensor_options.h"

namespace ember::nn::utils {

// Scales the gradients of `parameters` in place so that their joint norm (the norm_type
// norm of all gradient elements together; INFINITY for the max-abs norm) is at most
// max_norm, using PyTorch's factor min(1, max_norm / (total_norm + 1e-6)). Returns the
// total norm before clipping. Parameters without a gradient are skipped. With
// error_if_nonfinite, a NaN or infinite total norm throws instead of scaling.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

// The parameters flattened and concatenated into one 1-d tensor.
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
// Copies consecutive slices of `vec` into the parameters (in place, without autograd);
// vec's length must equal their total number of elements.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

namespace rnn {

// The inverse of a permutation of 0 .. n-1 (undefined for an undefined one).
Tensor invert_permutation(const Tensor& permutation);

// A batch of sequences of different lengths packed time step by time step: data holds the
// elements of step 0 of every sequence, then step 1 of those still running, ...;
// batch_sizes[t] (int64, CPU) is how many sequences step t has. sorted_indices orders the
// batch by decreasing length (undefined when it was already), unsorted_indices undoes it.
class PackedSequence {
 public:
  explicit PackedSequence(Tensor data = {}, Tensor batch_sizes = {}, Tensor sorted_indices = {},
                          Tensor unsorted_indices = {});

  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }

  // The data converted (batch_sizes stay int64; the indices keep their dtype).
  PackedSequence to(TensorOptions options) const;
  PackedSequence cpu() const { return to(TensorOptions().device(kCPU)); }
  bool is_cuda() const { return false; }
  bool is_pinned() const { return false; }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// Packs `input` ([T, B, *], or [B, T, *] with batch_first) whose sequence b has lengths[b]
// steps. With enforce_sorted the lengths must be decreasing; else the batch is sorted first.
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

// The inverse: the padded batch ([T, B, *] or [B, T, *]) and the lengths (int64), in the
// original batch order; total_length pads T further.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);

// Stacks sequences of shape [L_i, *] into [max L, B, *] ([B, max L, *] with batch_first),
// padding with padding_value.
Tensor pad_sequence(ArrayRef<Tensor> sequences, bool batch_first = false, double padding_value = 0);

// pack_padded_sequence of pad_sequence(sequences) with their lengths.
PackedSequence pack_sequence(ArrayRef<Tensor> sequences, bool enforce_sorted = true);

}  // namespace rnn

}  // namespace ember::nn::utils
