// Free functions: factories and ops, named as in libtorch (ember::zeros, ember::matmul, ...).
#pragma once
#include <functional>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "ember/tensor.h"
#include "ember/detail/tensor_data_container.h"

namespace ember {

// ---- factories -----------------------------------------------------------------------
Tensor empty(IntArrayRef sizes, const TensorOptions& options = {});
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor zeros(IntArrayRef sizes, const TensorOptions& options = {});
Tensor ones(IntArrayRef sizes, const TensorOptions& options = {});
Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& options = {});
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options = {});
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});
Tensor rand(IntArrayRef sizes, const TensorOptions& options = {});
Tensor randn(IntArrayRef sizes, const TensorOptions& options = {});
Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& options = kInt64);
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& options = kInt64);
Tensor randperm(int64_t n, const TensorOptions& options = kInt64);
Tensor empty_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor rand_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor randn_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor randint_like(const Tensor& t, int64_t high, std::optional<TensorOptions> options = std::nullopt);
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, std::optional<TensorOptions> options = std::nullopt);
Tensor scalar_tensor(const Scalar& value, const TensorOptions& options = {});
// A tensor from values, as torch::tensor: a value gives a 0-dim tensor, a braced list a 1-dim
// one, nested lists more (tensor({{1, 2}, {3, 4}}) is [2, 2]). Without a dtype in `options`,
// floating values make float32, integers int64 and bools bool; elements of different types
// or ragged lists are errors naming the position (ember/detail/tensor_data_container.h).
// A std::vector counts as one list level.
Tensor tensor(detail::TensorDataContainer values, const TensorOptions& options = {});
// Borrowed memory: the tensor does not own `data`; `deleter` (if any) runs when the last
// view of it dies. Copy with .clone() to own it.
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& options = {});

// ---- elementwise -----------------------------------------------------------------------
// The op table's rows (ember/detail/op_table.def), by their api column: exp(x), mul(a, b),
// mul(a, 2), add(a, b, alpha), eq(a, b), isnan(x), ...
#define EMBER_UNARY(name, program, Kernel, dtype, api, ...) EMBER_OP_FUNCTIONS_##api(name)
#define EMBER_BINARY(name, program, Kernel, dtype, api, ...) EMBER_OP_FUNCTIONS_##api(name)
#define EMBER_COMPARE(name, Kernel, api) EMBER_OP_FUNCTIONS_##api(name)
#define EMBER_PREDICATE(name, Kernel) EMBER_OP_FUNCTIONS_Unary(name)
#include "ember/detail/op_table.def"

// The ops with parameters (written by hand), and other forms.
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor max(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
// The largest / smallest element, as x.max() / x.min().
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
Tensor square(const Tensor& x);
Tensor remainder(const Scalar& a, const Tensor& b);
// approximate: "none" (exact, erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor clamp(const Tensor& x, std::optional<Scalar> min = std::nullopt, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt);
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);
Tensor clamp_max(const Tensor& x, const Tensor& max);
Tensor round(const Tensor& x, int64_t decimals = 0);
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);

// ---- reductions -------------------------------------------------------------------------
Tensor sum(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim = false);
// As Tensor::all and Tensor::any: whether every (some) element is non-zero.
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

// ---- sorting, indexing, joining ------------------------------------------------------------
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool> stable, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
// weight [num_embeddings, dim], indices of any shape -> [*indices.shape, dim]. With
// scale_grad_by_freq, each row's gradient is divided by how often its index occurs in
// `indices`. Differs from libtorch: sparse gradients do not exist (sparse=true throws).
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);
// Gradient of embedding for weight: sums grad rows by index (padding_idx rows stay zero).
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights, int64_t padding_idx = -1);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// x.transpose(dim0, dim1), as the free torch::transpose.
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
// x.reshape(shape), as the free torch::reshape.
Tensor reshape(const Tensor& x, IntArrayRef shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
// self.index_put(indices, values, accumulate): libtorch's list form (see Tensor::index_put_).
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate = false);
Tensor nonzero(const Tensor& x);
Tensor masked_select(const Tensor& x, const Tensor& mask);
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);
// [*self.shape, num_classes] int64; num_classes -1 means max(self) + 1.
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);
Tensor flip(const Tensor& x, IntArrayRef dims);
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
Tensor movedim(const Tensor& x, IntArrayRef source, IntArrayRef destination);
Tensor movedim(const Tensor& x, int64_t source, int64_t destination);
Tensor broadcast_to(const Tensor& x, IntArrayRef sizes);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
// [0, 0, ..., 1, 1, ...]: index i repeated repeats[i] times (repeats 1-D int).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = std::nullopt);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// ---- linear algebra -----------------------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// y = x @ weight^T + bias, weight [out, in].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
// beta * self + alpha * (mat1 @ mat2)
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1);
Tensor outer(const Tensor& a, const Tensor& b);
// Einstein summation with PyTorch's semantics: subscripts [a-zA-Z], "..." broadcasting, an
// implicit output (the ellipsis, then labels seen once, uppercase before lowercase) or an
// explicit one after "->"; repeated subscripts in an operand take its diagonal, subscripts
// missing from the output are summed, size-1 dims broadcast. Operands are contracted
// pairwise with bmm, left to right or in the order `path` gives (pairs of positions in the
// current operand list; each pair's product goes to the end, as torch.einsum's path).
// Differs from libtorch: the operands are a std::vector (libtorch's TensorList is an ArrayRef;
// both take a braced list).
Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors,
              std::optional<IntArrayRef> path = std::nullopt);
Tensor mv(const Tensor& self, const Tensor& vec);
Tensor dot(const Tensor& self, const Tensor& other);
// beta * self + alpha * bmm(batch1, batch2); beta == 0 ignores self (NaN in it included).
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1,
               const Scalar& alpha = 1);

// ---- convolution and pooling ---------------------------------------------------------------
// Inputs are [N, C, *spatial] (or unbatched [C, *spatial]); one-value lists expand to every
// spatial dim. float32 and float64; float16/bfloat16 compute on float32 copies and round
// once. First-order gradients only (create_graph=true throws).
// Convolution over weight.dim() - 2 spatial dims (1-3), weight [out, in / groups, *kernel],
// bias [out] or undefined; zero padding on both sides of each dim. As at::convolution without
// transposed/output_padding (the transposed convolutions are conv_transpose1d/2d/3d).
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups);
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// Transposed convolutions (the adjoint of conv1d/2d/3d with the same stride, padding,
// dilation and groups), weight [in, out / groups, *kernel], bias [out]; output size per dim
// (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1, with
// output_padding < stride or < dilation. On the same kernels: the forward is a convolution's
// input gradient (GEMM + col2im), see Note [Transposed convolution as a convolution's adjoint].
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
// Pooling over 1, 2 or 3 spatial dims, as at:: (an empty stride means stride = kernel_size;
// avg_pool1d has no divisor_override, as at::). The indices of the max forms are flat
// positions within each input plane (h * W + w in 2-d).
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);

// ---- random -----------------------------------------------------------------------------
Tensor bernoulli(const Tensor& probabilities);
Tensor bernoulli(const Tensor& like, double p);
Tensor dropout(const Tensor& x, double p, bool train);

}  // namespace ember
