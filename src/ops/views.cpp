// View ops: new geometry over the same storage, with backward formulas.
#include <numeric>

#include "ember/autograd.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

using core::wrap_dim;

// Makes a view of `self` with the given geometry and records `backward` for it; `op` names the
// view on the profiler's timeline.
Tensor make_view_of(const Tensor& self, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset,
                    const char* op, const char* name, autograd::BackwardFunction backward) {
  EMBER_RECORD_OP(op, self);
  Tensor out = core::make_view(self.storage(), std::move(sizes), std::move(strides), offset, self.scalar_type());
  TensorImpl* impl = self.unsafeGetTensorImpl();
  out.unsafeGetTensorImpl()->view_base = impl->view_base ? impl->view_base : self.impl();
  out.unsafeGetTensorImpl()->is_inference = impl->is_inference;  // a view is of its base's kind
  autograd::record(name, {self}, {out}, std::move(backward));
  return out;
}

// Strides for viewing `self` as `sizes` without copying, if possible (PyTorch's computeStride).
std::optional<std::vector<int64_t>> view_strides(const Tensor& self, const std::vector<int64_t>& sizes) {
  const auto& old_sizes = self.sizes();
  const auto& old_strides = self.strides();
  std::vector<int64_t> new_strides(sizes.size());
  if (self.numel() <= 1) return core::contiguous_strides(sizes);
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    if (d == 0 || (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

std::vector<int64_t> infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  std::vector<int64_t> out = shape.vec();
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      EMBER_CHECK(infer < 0, op, "only one dimension can be inferred in shape ", shape);
      infer = static_cast<int>(i);
    } else {
      EMBER_CHECK(out[i] >= 0, op, "invalid shape dimension ", out[i], " in ", shape);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, op, "shape ", shape, " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, op, "shape ", shape, " is invalid for input of size ", numel);
  }
  return out;
}

autograd::BackwardFunction reshape_back(std::vector<int64_t> sizes) {
  return [sizes](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
    return {g[0].reshape(sizes)};
  };
}

}  // namespace

Tensor Tensor::view(IntArrayRef shape) const {
  auto sizes = infer_size(shape, numel(), "view");
  auto strides = view_strides(*this, sizes);
  EMBER_CHECK(strides.has_value(), "view", "view size ", sizes, " is not compatible with input tensor's size ",
              this->sizes(), " and stride ", this->strides(), "; use reshape() instead");
  return make_view_of(*this, sizes, *strides, storage_offset(), "view", "ViewBackward", reshape_back(this->sizes()));
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  auto sizes = infer_size(shape, numel(), "reshape");
  if (view_strides(*this, sizes)) return view(sizes);
  return contiguous().view(sizes);
}

Tensor reshape(const Tensor& x, IntArrayRef shape) { return x.reshape(shape); }
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) { return x.transpose(dim0, dim1); }
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) { return x.flatten(start_dim, end_dim); }

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  EMBER_CHECK(start_dim <= end_dim, "flatten", "start_dim ", start_dim, " cannot come after end_dim ", end_dim);
  std::vector<int64_t> shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(shape);
}

Tensor Tensor::unflatten(int64_t d, IntArrayRef parts) const {
  d = wrap_dim(d, dim(), "unflatten");
  std::vector<int64_t> shape(sizes().begin(), sizes().begin() + d);
  auto inner = infer_size(parts, size(d), "unflatten");
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), sizes().begin() + d + 1, sizes().end());
  return view(shape);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute", "number of dims ", dims.size(),
              " doesn't match the tensor's ", dim(), " dims (shape ", sizes(), ")");
  std::vector<int64_t> sz(dim()), st(dim()), inverse(dim());
  std::vector<bool> seen(dim(), false);
  for (int64_t i = 0; i < dim(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    EMBER_CHECK(!seen[d], "permute", "repeated dim ", d, " in ", dims);
    seen[d] = true;
    sz[i] = size(d);
    st[i] = stride(d);
    inverse[d] = i;
  }
  return make_view_of(*this, sz, st, storage_offset(), "permute", "PermuteBackward",
                      [inverse](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                        return {g[0].permute(inverse)};
                      });
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) return *this;
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  std::vector<int64_t> perm(dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[d0], perm[d1]);
  return permute(perm);
}

Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t", "expects a tensor with <= 2 dimensions, but got ", dim(), "D");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt, int64_t step) const {
  EMBER_CHECK(dim() > 0, "slice", "cannot slice a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  EMBER_CHECK(step > 0, "slice", "step must be positive, got ", step);
  const int64_t n = size(d);
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  std::vector<int64_t> sz = sizes();
  std::vector<int64_t> st = strides();
  sz[d] = (end - start + step - 1) / step;
  st[d] *= step;
  const int64_t offset = storage_offset() + start * stride(d);
  std::vector<int64_t> in_sizes = sizes();
  ScalarType dtype = scalar_type();
  return make_view_of(*this, sz, st, offset, "slice", "SliceBackward",
                      [in_sizes, dtype, d, start, end, step](std::vector<Tensor>& g, const std::vector<bool>&)
                          -> std::vector<Tensor> {
                        Tensor grad = zeros(in_sizes, dtype);
                        ops::copy_into(grad.slice(d, start, end, step), g[0]);
                        return {grad};
                      });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  EMBER_CHECK(dim() > 0, "narrow", "cannot narrow a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(d);
  EMBER_CHECK(start >= -n && start <= n, "narrow", "start ", start, " out of range for dimension ", d, " of size ", n);
  if (start < 0) start += n;
  EMBER_CHECK(length >= 0 && start + length <= n, "narrow", "start (", start, ") + length (", length,
              ") exceeds dimension size (", n, ")");
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  EMBER_CHECK(dim() > 0, "select", "cannot select on a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = size(d);
  EMBER_CHECK(index >= -n && index < n, "select", "index ", index, " out of range for tensor of size ", sizes(),
              " at dimension ", d);
  if (index < 0) index += n;
  std::vector<int64_t> sz = sizes();
  std::vector<int64_t> st = strides();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  std::vector<int64_t> in_sizes = sizes();
  ScalarType dtype = scalar_type();
  return make_view_of(*this, sz, st, storage_offset() + index * stride(d), "select", "SelectBackward",
                      [in_sizes, dtype, d, index](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                        Tensor grad = zeros(in_sizes, dtype);
                        ops::copy_into(grad.select(d, index), g[0]);
                        return {grad};
                      });
}

Tensor Tensor::squeeze() const {
  std::vector<int64_t> sz, st;
  for (int64_t d = 0; d < dim(); ++d) {
    if (size(d) != 1) {
      sz.push_back(size(d));
      st.push_back(stride(d));
    }
  }
  return make_view_of(*this, sz, st, storage_offset(), "squeeze", "SqueezeBackward", reshape_back(sizes()));
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return *this;
  d = wrap_dim(d, dim(), "squeeze");
  if (size(d) != 1)
    return make_view_of(*this, sizes(), strides(), storage_offset(), "squeeze", "SqueezeBackward",
                        reshape_back(sizes()));
  std::vector<int64_t> sz = sizes();
  std::vector<int64_t> st = strides();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return make_view_of(*this, sz, st, storage_offset(), "squeeze", "SqueezeBackward", reshape_back(sizes()));
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  std::vector<int64_t> sz = sizes();
  std::vector<int64_t> st = strides();
  int64_t new_stride = d < dim() ? size(d) * stride(d) : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  return make_view_of(*this, sz, st, storage_offset(), "unsqueeze", "UnsqueezeBackward", reshape_back(sizes()));
}

Tensor Tensor::expand(IntArrayRef shape) const {
  EMBER_CHECK(static_cast<int64_t>(shape.size()) >= dim(), "expand", "the number of sizes provided (", shape.size(),
              ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  const int64_t lead = static_cast<int64_t>(shape.size()) - dim();
  std::vector<int64_t> sz(shape.size()), st(shape.size());
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    int64_t want = shape[i];
    if (i < lead) {
      EMBER_CHECK(want >= 0, "expand", "the expanded size ", want, " is not allowed in a leading dimension");
      sz[i] = want;
      st[i] = 0;
      continue;
    }
    int64_t have = size(i - lead);
    if (want == -1) want = have;
    EMBER_CHECK(have == want || have == 1, "expand", "the expanded size of the tensor (", want,
                ") must match the existing size (", have, ") at non-singleton dimension ", i, ". Target sizes: ",
                shape, ". Tensor sizes: ", sizes());
    sz[i] = want;
    st[i] = have == want ? stride(i - lead) : 0;
  }
  std::vector<int64_t> in_sizes = sizes();
  return make_view_of(*this, sz, st, storage_offset(), "expand", "ExpandBackward",
                      [in_sizes](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                        return {autograd::sum_to(g[0], in_sizes)};
                      });
}

Tensor Tensor::as_strided(IntArrayRef shape, IntArrayRef new_strides, std::optional<int64_t> offset_opt) const {
  EMBER_CHECK(shape.size() == new_strides.size(), "as_strided", "mismatch in length of strides ", new_strides,
              " and shape ", shape);
  core::check_sizes(shape, "as_strided");
  const int64_t offset = offset_opt.value_or(storage_offset());
  EMBER_CHECK(offset >= 0, "as_strided", "negative storage offset ", offset);
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    EMBER_CHECK(new_strides[i] >= 0, "as_strided", "negative stride ", new_strides[i], " is not supported");
    if (shape[i] == 0) empty = true;
    else last += (shape[i] - 1) * new_strides[i];
  }
  const int64_t capacity = static_cast<int64_t>(storage().nbytes() / element_size());
  EMBER_CHECK(empty || last < capacity, "as_strided", "size ", shape, " with stride ", new_strides,
              " and storage offset ", offset, " needs ", last + 1, " elements but the storage holds ", capacity);
  // Backward: scatter the gradient into a zero buffer with this tensor's geometry,
  // accumulating where the strided view reads one element several times.
  Tensor self_view = *this;
  std::vector<int64_t> out_sizes = shape.vec(), out_strides = new_strides.vec();
  return make_view_of(*this, shape.vec(), new_strides.vec(), offset, "as_strided", "AsStridedBackward",
                      [in_sizes = sizes(), in_strides = strides(), in_offset = storage_offset(), out_sizes,
                       out_strides, offset, dtype = scalar_type()](std::vector<Tensor>& g, const std::vector<bool>&)
                          -> std::vector<Tensor> {
                        int64_t in_last = in_offset, out_last = offset;
                        for (size_t i = 0; i < in_sizes.size(); ++i)
                          if (in_sizes[i] > 0) in_last += (in_sizes[i] - 1) * in_strides[i];
                        for (size_t i = 0; i < out_sizes.size(); ++i)
                          if (out_sizes[i] > 0) out_last += (out_sizes[i] - 1) * out_strides[i];
                        const int64_t extent = std::max(in_last, out_last) + 1;
                        Tensor flat = zeros({extent}, kFloat64);
                        Tensor gd = g[0].to(kFloat64).contiguous();
                        const double* src = gd.data_ptr<double>();
                        double* dst = flat.data_ptr<double>();
                        std::vector<int64_t> idx(out_sizes.size(), 0);
                        for (int64_t n = 0; n < gd.numel(); ++n) {
                          int64_t pos = offset;
                          for (size_t i = 0; i < idx.size(); ++i) pos += idx[i] * out_strides[i];
                          dst[pos] += src[n];
                          for (int64_t i = static_cast<int64_t>(idx.size()) - 1; i >= 0; --i) {
                            if (++idx[i] < out_sizes[i]) break;
                            idx[i] = 0;
                          }
                        }
                        return {flat.as_strided(in_sizes, in_strides, in_offset).to(dtype)};
                      });
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  dim1 = wrap_dim(dim1, dim(), "diagonal");
  dim2 = wrap_dim(dim2, dim(), "diagonal");
  EMBER_CHECK(dim1 != dim2, "diagonal", "dim1 and dim2 cannot be identical (", dim1, ")");
  int64_t len = offset >= 0 ? std::min(size(dim1), size(dim2) - offset) : std::min(size(dim1) + offset, size(dim2));
  len = std::max<int64_t>(len, 0);
  int64_t start = storage_offset();
  if (len > 0) start += offset >= 0 ? offset * stride(dim2) : -offset * stride(dim1);
  std::vector<int64_t> sz, st;
  for (int64_t d = 0; d < dim(); ++d) {
    if (d == dim1 || d == dim2) continue;
    sz.push_back(size(d));
    st.push_back(stride(d));
  }
  sz.push_back(len);
  st.push_back(stride(dim1) + stride(dim2));
  return as_strided(sz, st, start);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  d = wrap_dim(d, dim(), "unbind");
  std::vector<Tensor> out;
  {
    // One backward node for all the slices, which stacks their gradients once: a select
    // backward per slice would fill a zero gradient of the whole tensor each, O(L^2) for L.
    NoGradGuard no_grad;
    for (int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
  }
  if (out.empty()) return out;
  autograd::record("UnbindBackward", {*this}, out,
                   [d, dtype = scalar_type()](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                     return {stack(g, d).to(dtype)};
                   });
  return out;
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  d = wrap_dim(d, dim(), "split");
  EMBER_CHECK(split_size > 0 || (split_size == 0 && size(d) == 0), "split", "split_size must be positive, got ",
              split_size);
  std::vector<Tensor> out;
  if (size(d) == 0) return {*this};
  for (int64_t start = 0; start < size(d); start += split_size)
    out.push_back(narrow(d, start, std::min(split_size, size(d) - start)));
  return out;
}

std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t d) const {
  d = wrap_dim(d, dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, "split_with_sizes", "negative split size ", s, " in ", split_sizes);
    total += s;
  }
  EMBER_CHECK(total == size(d), "split_with_sizes", "split sizes ", split_sizes, " sum to ", total,
              " but dimension ", d, " has size ", size(d));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  EMBER_CHECK(chunks > 0, "chunk", "number of chunks must be positive, got ", chunks);
  d = wrap_dim(d, dim(), "chunk");
  const int64_t each = (size(d) + chunks - 1) / chunks;
  return split(std::max<int64_t>(each, size(d) == 0 ? 0 : 1), d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) { return x.split(split_size, dim); }
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) { return x.chunk(chunks, dim); }

}  // namespace ember
