// cat, stack, tril and triu, with backward.
#include "cpu/index.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

// PyTorch still accepts (and skips) 1-D tensors of shape [0] next to tensors of any shape.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// Checks that `t` (at `position` in the list) can be concatenated to `reference` along `dim`.
void check_cat_shape(const Tensor& reference, const Tensor& t, size_t position, int64_t dim) {
  EMBER_CHECK(t.dim() == reference.dim(), "cat", "tensors must have the same number of dimensions: got ",
              reference.dim(), " and ", t.dim(), " (tensor ", position, " in the list, shape ", t.sizes(), ")");
  for (int64_t d = 0; d < t.dim(); ++d) {
    EMBER_CHECK(d == dim || t.size(d) == reference.size(d), "cat", "sizes of tensors must match except in dimension ",
                dim, ": expected size ", reference.size(d), " but got size ", t.size(d), " for tensor number ",
                position, " in the list (shapes ", reference.sizes(), " and ", t.sizes(), ")");
  }
}

void record_cat(const std::vector<Tensor>& tensors, int64_t dim, const Tensor& out) {
  if (!autograd::should_record(tensors)) return;
  // Where each input sits along `dim` of the output; skipped inputs get a zero gradient.
  std::vector<int64_t> starts, lengths;
  std::vector<std::vector<int64_t>> skipped_sizes;
  std::vector<ScalarType> dtypes;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const bool skipped = is_legacy_empty(t);
    starts.push_back(offset);
    lengths.push_back(skipped ? -1 : t.size(dim));
    skipped_sizes.push_back(t.sizes());
    dtypes.push_back(t.scalar_type());
    if (!skipped) offset += t.size(dim);
  }
  autograd::record("CatBackward", tensors, {out},
                   [dim, starts, lengths, skipped_sizes, dtypes](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                     std::vector<Tensor> grads(needs.size());
                     for (size_t i = 0; i < needs.size(); ++i) {
                       if (!needs[i]) continue;
                       grads[i] = lengths[i] < 0 ? zeros(skipped_sizes[i], dtypes[i])
                                                 : g[0].narrow(dim, starts[i], lengths[i]).to(dtypes[i]);
                     }
                     return grads;
                   });
}

// Keeps the lower (or upper) triangle of the last two dims of x.
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower) {
  const char* op = lower ? "tril" : "triu";
  EMBER_CHECK(x.defined(), op, "called on an undefined tensor");
  EMBER_RECORD_OP(op, x);
  EMBER_CHECK(x.dim() >= 2, op, "input must have at least 2 dimensions, got shape ", x.sizes());
  Tensor input = x.detach().contiguous();
  Tensor out = core::make_tensor(x.sizes(), x.scalar_type());
  const int64_t rows = x.size(-2), cols = x.size(-1);
  if (x.numel() > 0) {
    core::launch(op, [&] {
      return [item = x.element_size(), in = static_cast<const char*>(input.data_ptr()),
              o = static_cast<char*>(out.data_ptr()), matrices = x.numel() / (rows * cols), rows, cols, diagonal, lower] {
        cpu::copy_triangle(item, in, o, matrices, rows, cols, diagonal, lower);
      };
    });
  }
  autograd::record(lower ? "TrilBackward" : "TriuBackward", {x}, {out},
                   [diagonal, lower](std::vector<Tensor>& g, const std::vector<bool>&) {
                     return std::vector<Tensor>{triangle(g[0], diagonal, lower)};
                   });
  return out;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "cat", "expected a non-empty list of tensors");
  profiler::RecordFunction record("cat", profiler::Category::Op);
  if (record.record_shapes()) core::describe_inputs(*record.event(), tensors);
  const Tensor* reference = nullptr;
  ScalarType dtype = kBool;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t.defined(), "cat", "tensor ", i, " in the list is undefined");
    EMBER_CHECK(t.dim() > 0, "cat", "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    dtype = i == 0 ? t.scalar_type() : promote_types(dtype, t.scalar_type());
    if (!reference && !is_legacy_empty(t)) reference = &t;
  }
  if (!reference) return core::make_tensor({0}, dtype);  // every input is a legacy empty tensor
  dim = core::wrap_dim(dim, reference->dim(), "cat");
  std::vector<int64_t> out_sizes = reference->sizes();
  out_sizes[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (is_legacy_empty(tensors[i])) continue;
    check_cat_shape(*reference, tensors[i], i, dim);
    out_sizes[dim] += tensors[i].size(dim);
  }
  Tensor out = core::make_tensor(out_sizes, dtype);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    ops::copy_into(out.narrow(dim, offset, t.size(dim)), t);
    offset += t.size(dim);
  }
  record_cat(tensors, dim, out);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "stack", "expected a non-empty list of tensors");
  profiler::RecordFunction record("stack", profiler::Category::Op);
  if (record.record_shapes()) core::describe_inputs(*record.event(), tensors);
  EMBER_CHECK(tensors[0].defined(), "stack", "tensor 0 in the list is undefined");
  dim = core::wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "stack", "tensor ", i, " in the list is undefined");
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack", "expects each tensor to be equal size, but got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(parts, dim);
}

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

}  // namespace ember
