// index_select, gather, scatter, scatter_add, index_add and embedding, with backward.
// Index tensors are int64 or int32; every index value is checked before any write.
#include "cpu/index.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;
using cpu::ScatterMode;

// Kernel inputs carry no autograd; 0-dim tensors index like 1-element vectors, as in
// PyTorch (ensure_nonempty_dim). The result shares storage with `t`.
Tensor kernel_view(const Tensor& t) { return t.dim() == 0 ? t.detach().reshape({1}) : t.detach(); }

// The index values as contiguous int64.
Tensor int64_index(const Tensor& index, const char* op) {
  EMBER_CHECK(index.defined(), op, "index is an undefined tensor");
  EMBER_CHECK(index.scalar_type() == kInt64 || index.scalar_type() == kInt32, op,
              "index must be an int64 or int32 tensor, got ", dtype_name(index.scalar_type()));
  return index.to(kInt64).contiguous();
}

// A recorded step like a kernel: a replayed graph checks the indices it is given too.
void check_index_bounds(const Tensor& index64, int64_t dim, int64_t size, const char* op) {
  core::launch(op, [&] {
    return [index = index64.data_ptr<int64_t>(), n = index64.numel(), dim, size, op] {
      std::optional<int64_t> bad = cpu::first_out_of_bounds(index, n, size);
      EMBER_CHECK(!bad, op, "index ", *bad, " is out of bounds for dimension ", dim, " with size ", size);
    };
  });
}

void check_vector_index(const Tensor& index, const char* op) {
  EMBER_CHECK(index.dim() <= 1, op, "index must be a vector (0 or 1 dims), got shape ", index.sizes());
}

// `self` (contiguous) as [outer, size, inner] around `dim`, with `index_size` indices.
cpu::SliceLayout slice_layout(const Tensor& self, int64_t dim, int64_t index_size) {
  cpu::SliceLayout layout;
  layout.self_size = self.size(dim);
  layout.index_size = index_size;
  for (int64_t d = 0; d < dim; ++d) layout.outer *= self.size(d);
  for (int64_t d = dim + 1; d < self.dim(); ++d) layout.inner *= self.size(d);
  return layout;
}

// PyTorch's gather/scatter shape rules (on kernel views): index has self's number of
// dims and fits in self except along `dim`, and fits in src (when given) everywhere.
void check_scatter_shapes(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  EMBER_CHECK(index.dim() == self.dim(), op, "index of shape ", index.sizes(),
              " must have as many dimensions as self of shape ", self.sizes());
  for (int64_t d = 0; d < self.dim(); ++d) {
    EMBER_CHECK(d == dim || index.size(d) <= self.size(d), op, "index of shape ", index.sizes(),
                " is larger than self of shape ", self.sizes(), " at dimension ", d);
  }
  if (!src.defined()) return;
  EMBER_CHECK(src.dim() == self.dim(), op, "src of shape ", src.sizes(), " must have as many dimensions as self of shape ",
              self.sizes());
  for (int64_t d = 0; d < self.dim(); ++d) {
    EMBER_CHECK(index.size(d) <= src.size(d), op, "index of shape ", index.sizes(), " is larger than src of shape ",
                src.sizes(), " at dimension ", d);
  }
}

cpu::ScatterGeometry scatter_geometry(const Tensor& index, const Tensor& self, const Tensor& other, int64_t dim) {
  return {index.sizes(), self.strides(), other.strides(), dim};
}

// Zero-pads `t` at the end of each dim up to `sizes`, differentiably.
Tensor pad_to(Tensor t, const std::vector<int64_t>& sizes) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == sizes[d]) continue;
    std::vector<int64_t> pad = t.sizes();
    pad[d] = sizes[d] - t.size(d);
    t = cat({t, zeros(pad, t.scalar_type())}, d);
  }
  return t;
}

// ---- gather / scatter -----------------------------------------------------------------

// Writes (or adds) `src` into `target` in place along `dim` at `index`; target may be strided.
void scatter_into(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& src, ScatterMode mode,
                  const char* op) {
  dim = core::wrap_dim(dim, target.dim(), op);
  EMBER_CHECK(src.scalar_type() == target.scalar_type(), op, "self (", dtype_name(target.scalar_type()),
              ") and src (", dtype_name(src.scalar_type()), ") must have the same dtype");
  Tensor index64 = int64_index(index, op);
  Tensor target_view = kernel_view(target), index_view = kernel_view(index64), src_view = kernel_view(src);
  if (src.storage().is_alias_of(target.storage())) src_view = src_view.clone();
  check_scatter_shapes(target_view, dim, index_view, src_view, op);
  check_index_bounds(index64, dim, target_view.size(dim), op);
  core::launch(op, [&] {
    return [geometry = scatter_geometry(index_view, target_view, src_view, dim), dtype = target.scalar_type(), mode,
            out = static_cast<char*>(target_view.data_ptr()), index = index_view.data_ptr<int64_t>(),
            in = static_cast<const char*>(src_view.data_ptr())] { cpu::scatter(geometry, dtype, mode, out, index, in); };
  });
}

// scatter: self's grad is grad with the overwritten places zeroed; scatter_add: grad.
// src's grad (both): grad gathered at index, zero where src was not read.
void record_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, ScatterMode mode,
                    const Tensor& out) {
  if (!autograd::should_record({self, src})) return;
  dim = core::wrap_dim(dim, self.dim(), "scatter");
  SavedTensor saved_index(index);
  std::vector<int64_t> src_sizes = src.sizes();
  const char* name = mode == ScatterMode::Add ? "ScatterAddBackward" : "ScatterBackward";
  autograd::record(name, {self, src}, {out},
                   [dim, saved_index, src_sizes, mode](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                     std::vector<Tensor> grads(2);
                     Tensor index = saved_index.get();
                     if (needs[0]) grads[0] = mode == ScatterMode::Add ? g[0] : g[0].scatter(dim, index, Scalar(0));
                     if (needs[1]) grads[1] = pad_to(g[0].gather(dim, index), src_sizes);
                     return grads;
                   });
}

Tensor scatter_op(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, ScatterMode mode,
                  const char* op) {
  EMBER_CHECK(self.defined() && src.defined(), op, "called with an undefined tensor");
  EMBER_RECORD_OP(op, self, index, src);
  Tensor out = self.detach().clone();
  scatter_into(out, dim, index, src, mode, op);
  record_scatter(self, dim, index, src, mode, out);
  return out;
}

// A scalar scatter source: `value` as self's dtype, broadcast over the index.
Tensor scalar_source(const Tensor& self, const Tensor& index, const Scalar& value) {
  EMBER_CHECK(self.defined() && index.defined(), "scatter", "called with an undefined tensor");
  return ops::scalar_to_tensor(value, self.scalar_type()).expand(index.sizes());
}

// ---- index_select / index_add ---------------------------------------------------------------

// Slices of `self` picked along `dim` by the checked `index64`, into a new tensor of `out_sizes`.
Tensor select_slices(const Tensor& self, int64_t dim, const Tensor& index64, const std::vector<int64_t>& out_sizes) {
  Tensor input = kernel_view(self).contiguous();
  Tensor out = core::make_tensor(out_sizes, self.scalar_type());
  core::launch("index_select", [&] {
    return [layout = slice_layout(input, dim, index64.numel()), item = self.element_size(),
            in = static_cast<const char*>(input.data_ptr()), index = index64.data_ptr<int64_t>(),
            o = static_cast<char*>(out.data_ptr())] { cpu::index_select(layout, item, in, index, o); };
  });
  return out;
}

// Adds the contiguous `source` into `target` along `dim` at the checked `index64`.
void launch_index_add(const char* op, const Tensor& target, int64_t dim, const Tensor& index64, const Tensor& source) {
  core::launch(op, [&] {
    return [layout = slice_layout(target, dim, index64.numel()), dtype = target.scalar_type(),
            out = static_cast<char*>(target.data_ptr()), index = index64.data_ptr<int64_t>(),
            in = static_cast<const char*>(source.data_ptr())] { cpu::index_add(layout, dtype, out, index, in); };
  });
}

// Adds alpha * source into the contiguous `target` along `dim` at `index`, in place.
void index_add_into(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha,
                    const char* op) {
  dim = core::wrap_dim(dim, target.dim(), op);
  const ScalarType dtype = target.scalar_type();
  EMBER_CHECK(source.scalar_type() == dtype, op, "self (", dtype_name(dtype), ") and source (",
              dtype_name(source.scalar_type()), ") must have the same dtype");
  EMBER_CHECK(is_floating_point(dtype) || !alpha.isFloatingPoint(), op, "alpha ", alpha.toDouble(),
              " must be an integer for dtype ", dtype_name(dtype));
  Tensor index64 = int64_index(index, op);
  check_vector_index(index, op);
  Tensor target_view = kernel_view(target), source_view = kernel_view(source);
  EMBER_CHECK(source_view.dim() == target_view.dim(), op, "source of shape ", source.sizes(),
              " must have as many dimensions as self of shape ", target.sizes());
  for (int64_t d = 0; d < target_view.dim(); ++d) {
    EMBER_CHECK(d == dim || source_view.size(d) == target_view.size(d), op, "source of shape ", source.sizes(),
                " must match self of shape ", target.sizes(), " except at dimension ", dim);
  }
  EMBER_CHECK(index64.numel() == source_view.size(dim), op, "number of indices (", index64.numel(),
              ") must equal the size of source at dimension ", dim, " (", source_view.size(dim), ")");
  check_index_bounds(index64, dim, target_view.size(dim), op);
  Tensor scaled = alpha.toDouble() == 1 ? source_view : source_view.mul(alpha);
  if (scaled.storage().is_alias_of(target.storage())) scaled = scaled.clone();
  scaled = scaled.contiguous();
  launch_index_add(op, target_view, dim, index64, scaled);
}

// Records the backward of an op whose output reads self at `index` along `dim` (gather,
// index_select): self's gradient is zero but where the output read, where add_at adds the
// output's gradient back (scatter_add, index_add), so repeated indices accumulate.
using AddAt = Tensor (*)(const Tensor& grad_self, int64_t dim, const Tensor& index, const Tensor& grad);
void record_read_backward(const char* name, const Tensor& self, const Tensor& out, int64_t dim, const Tensor& index,
                          AddAt add_at) {
  if (!autograd::should_record({self})) return;
  SavedTensor saved_index(index);
  autograd::record(name, {self}, {out},
                   [self_sizes = self.sizes().vec(), dtype = self.scalar_type(), dim, saved_index, add_at](
                       std::vector<Tensor>& g, const std::vector<bool>&) {
                     return std::vector<Tensor>{add_at(zeros(self_sizes, dtype), dim, saved_index.get(), g[0])};
                   });
}

void check_padding_idx(int64_t padding_idx, int64_t num_weights, const char* op) {
  EMBER_CHECK(padding_idx < num_weights, op, "padding_idx ", padding_idx, " must be below num_embeddings ",
              num_weights, " (a negative padding_idx means none)");
}

}  // namespace

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  const char* op = "gather";
  EMBER_CHECK(defined(), op, "called on an undefined tensor");
  EMBER_RECORD_OP(op, *this, index);
  dim = core::wrap_dim(dim, this->dim(), op);
  Tensor index64 = int64_index(index, op);
  Tensor self_view = kernel_view(*this), index_view = kernel_view(index64);
  check_scatter_shapes(self_view, dim, index_view, Tensor(), op);
  check_index_bounds(index64, dim, self_view.size(dim), op);
  Tensor out = core::make_tensor(index.sizes(), scalar_type());
  core::launch(op, [&] {
    return [geometry = scatter_geometry(index_view, self_view, kernel_view(out), dim), item = element_size(),
            in = static_cast<const char*>(self_view.data_ptr()), index = index_view.data_ptr<int64_t>(),
            o = static_cast<char*>(out.data_ptr())] { cpu::gather(geometry, item, in, index, o); };
  });
  record_read_backward("GatherBackward", *this, out, dim, index,
                       [](const Tensor& grad_self, int64_t d, const Tensor& i, const Tensor& g) {
                         return grad_self.scatter_add(d, i, g);
                       });
  return out;
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return scatter_op(*this, dim, index, src, ScatterMode::Assign, "scatter");
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return scatter_op(*this, dim, index, scalar_source(*this, index, value), ScatterMode::Assign, "scatter");
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return scatter_op(*this, dim, index, src, ScatterMode::Add, "scatter_add");
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ops::inplace(
      *this, "scatter_", {index, src}, [&](const Tensor& a) { return a.scatter(dim, index, src); },
      [&] { scatter_into(*this, dim, index, src, ScatterMode::Assign, "scatter"); });
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
  return scatter_(dim, index, scalar_source(*this, index, value));
}

Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ops::inplace(
      *this, "scatter_add_", {index, src}, [&](const Tensor& a) { return a.scatter_add(dim, index, src); },
      [&] { scatter_into(*this, dim, index, src, ScatterMode::Add, "scatter_add"); });
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  const char* op = "index_select";
  EMBER_CHECK(defined(), op, "called on an undefined tensor");
  EMBER_RECORD_OP(op, *this, index);
  dim = core::wrap_dim(dim, this->dim(), op);
  Tensor index64 = int64_index(index, op);
  check_vector_index(index, op);
  EMBER_CHECK(this->dim() > 0 || index64.numel() == 1, op, "index into a 0-dim tensor must hold one value, got ",
              index64.numel());
  check_index_bounds(index64, dim, this->dim() == 0 ? 1 : size(dim), op);
  std::vector<int64_t> out_sizes = sizes();
  if (this->dim() > 0) out_sizes[dim] = index64.numel();
  Tensor out = select_slices(*this, dim, index64, out_sizes);
  record_read_backward("IndexSelectBackward", *this, out, dim, index,
                       [](const Tensor& grad_self, int64_t d, const Tensor& i, const Tensor& g) {
                         return grad_self.index_add(d, i, g);
                       });
  return out;
}

Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  const char* op = "index_add";
  EMBER_CHECK(defined() && source.defined(), op, "called with an undefined tensor");
  EMBER_RECORD_OP(op, *this, index, source);
  dim = core::wrap_dim(dim, this->dim(), op);
  Tensor out = detach().clone();
  index_add_into(out, dim, index, source, alpha, op);
  if (autograd::should_record({*this, source})) {
    SavedTensor saved_index(index);
    autograd::record("IndexAddBackward", {*this, source}, {out},
                     [dim, saved_index, alpha](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                       std::vector<Tensor> grads(2);
                       if (needs[0]) grads[0] = g[0];
                       if (needs[1]) {
                         grads[1] = g[0].index_select(dim, saved_index.get());
                         if (alpha.toDouble() != 1) grads[1] = grads[1] * alpha;
                       }
                       return grads;
                     });
  }
  return out;
}

Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return ops::inplace(
      *this, "index_add_", {index, source}, [&](const Tensor& a) { return a.index_add(dim, index, source, alpha); },
      [&] {
        if (is_contiguous()) {
          index_add_into(*this, dim, index, source, alpha, "index_add");
          return;
        }
        Tensor result = detach().contiguous();
        index_add_into(result, dim, index, source, alpha, "index_add");
        ops::copy_into(*this, result);
      });
}

// For each position of `indices`, how many times its index occurs in all of `indices`, shaped
// [*indices.shape, 1] to divide an embedding gradient (scale_grad_by_freq).
static Tensor index_frequencies(const Tensor& indices, int64_t num_weights) {
  Tensor flat = indices.reshape({-1}).to(kInt64);
  Tensor counts = zeros({num_weights}, kFloat64).index_add(0, flat, ones({flat.numel()}, kFloat64));
  std::vector<int64_t> shape = indices.sizes().vec();
  shape.push_back(1);
  return counts.index_select(0, flat).reshape(shape);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse) {
  const char* op = "embedding";
  EMBER_CHECK(!sparse, op, "sparse gradients are not supported (ember has no sparse tensors)");
  EMBER_CHECK(weight.defined(), op, "weight is an undefined tensor");
  EMBER_RECORD_OP(op, weight, indices);
  EMBER_CHECK(weight.dim() == 2, op, "weight must be 2-D [num_embeddings, embedding_dim], got shape ", weight.sizes());
  const int64_t num_weights = weight.size(0);
  check_padding_idx(padding_idx, num_weights, op);
  Tensor index64 = int64_index(indices, op);
  check_index_bounds(index64, 0, num_weights, op);
  std::vector<int64_t> out_sizes = indices.sizes();
  out_sizes.push_back(weight.size(1));
  Tensor out = select_slices(weight, 0, index64, out_sizes);
  if (autograd::should_record({weight})) {
    SavedTensor saved_indices(indices);
    autograd::record("EmbeddingBackward", {weight}, {out},
                     [saved_indices, num_weights, padding_idx, scale_grad_by_freq](std::vector<Tensor>& g,
                                                                                   const std::vector<bool>&) {
                       Tensor grad = g[0];
                       if (scale_grad_by_freq) grad = grad / index_frequencies(saved_indices.get(), num_weights).to(grad.scalar_type());
                       return std::vector<Tensor>{embedding_backward(grad, saved_indices.get(), num_weights, padding_idx)};
                     });
  }
  ember_trace_op_.attr("padding_idx", padding_idx);
  return ember_trace_op_.result(out);
}

// Sums grad rows per index (see Note [Deterministic index accumulation]); the padding
// row gets nothing, so padding_idx's embedding is never trained.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights, int64_t padding_idx) {
  const char* op = "embedding_backward";
  EMBER_CHECK(grad.defined(), op, "grad is an undefined tensor");
  EMBER_CHECK(num_weights >= 0, op, "num_weights must be non-negative, got ", num_weights);
  check_padding_idx(padding_idx, num_weights, op);
  Tensor index64 = int64_index(indices, op);
  const bool shapes_match = grad.dim() == indices.dim() + 1 &&
                            std::equal(indices.sizes().begin(), indices.sizes().end(), grad.sizes().begin());
  EMBER_CHECK(shapes_match, op, "grad of shape ", grad.sizes(), " does not match indices of shape ", indices.sizes(),
              " (expected [*indices.shape, embedding_dim])");
  check_index_bounds(index64, 0, num_weights, op);
  const int64_t embedding_dim = grad.size(-1);
  Tensor rows = grad.detach().reshape({index64.numel(), embedding_dim}).contiguous();
  Tensor out = zeros({num_weights, embedding_dim}, grad.scalar_type());
  launch_index_add(op, out, 0, index64, rows);
  if (padding_idx >= 0) out.select(0, padding_idx).zero_();
  if (autograd::should_record({grad})) {
    SavedTensor saved_indices(indices);
    autograd::record("EmbeddingBackwardBackward", {grad}, {out},
                     [saved_indices, padding_idx](std::vector<Tensor>& g, const std::vector<bool>&) {
                       Tensor indices = saved_indices.get();
                       Tensor picked = embedding(g[0], indices);
                       if (padding_idx >= 0) picked = picked.masked_fill((indices == padding_idx).unsqueeze(-1), 0);
                       return std::vector<Tensor>{picked};
                     });
  }
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { return x.index_select(dim, index); }
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return x.gather(dim, index); }
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter(dim, index, src);
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter_add(dim, index, src);
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return x.index_add(dim, index, source, alpha);
}

}  // namespace ember
