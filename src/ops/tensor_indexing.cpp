// Tensor::index and index_put_ (Python's x[...] and x[...] = v). Basic indices (integers,
// slices, None, Ellipsis, bools) become views; tensor indices are then gathered with one
// index_select over the advanced dims flattened, so autograd comes from the view ops,
// reshape and index_select (index) or scatter (index_put_).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "ember/warning.h"
#include "ops/op_utils.h"

namespace ember {

void indexing::TensorIndex::check_ellipsis(const char* text) {
  EMBER_CHECK(text != nullptr && std::strcmp(text, "...") == 0, "index",
              "Expected \"...\" to represent an ellipsis index, but got \"", text == nullptr ? "" : text, "\"");
}

std::ostream& indexing::operator<<(std::ostream& out, const Slice& slice) {
  return out << slice.start() << ':' << slice.stop() << ':' << slice.step();
}

std::ostream& indexing::operator<<(std::ostream& out, const TensorIndex& index) {
  switch (index.type()) {
    case TensorIndexType::None: return out << "None";
    case TensorIndexType::Ellipsis: return out << "...";
    case TensorIndexType::Integer: return out << index.integer();
    case TensorIndexType::Boolean: return out << std::boolalpha << index.boolean();
    case TensorIndexType::Slice: return out << index.slice();
    case TensorIndexType::Tensor: return out << index.tensor();
  }
  return out;
}

std::ostream& indexing::operator<<(std::ostream& out, const std::vector<TensorIndex>& indices) {
  out << '(';
  for (size_t i = 0; i < indices.size(); ++i) out << (i ? ", " : "") << indices[i];
  return out << ')';
}

namespace {

using indexing::TensorIndex;

// Integer index tensors (as int64, not yet wrapped) and the dims of `view` they index.
struct IndexPlan {
  Tensor view;
  std::vector<int64_t> dims;
  std::vector<Tensor> indices;
};

bool is_mask(const Tensor& t) { return t.scalar_type() == kBool || t.scalar_type() == kUInt8; }

// How many dims of self an index consumes (None, Ellipsis and bools add or skip, consume none).
int64_t consumed_dims(const TensorIndex& index) {
  if (index.is_integer() || index.is_slice()) return 1;
  if (index.is_tensor()) return is_mask(index.tensor()) ? index.tensor().dim() : 1;
  return 0;
}

// Python's x[True] / x[False] (and a 0-dim bool or uint8 tensor): a new dim of size 1 at
// `dim`, indexed by the index tensor [0] or [] (an advanced index, so the result is a copy), as
// libtorch's.
void boolean_dim(IndexPlan& plan, int64_t dim, bool keep) {
  plan.view = plan.view.unsqueeze(dim);
  plan.dims.push_back(dim);
  plan.indices.push_back(zeros({keep ? 1 : 0}, kInt64));
}

IndexPlan apply_basic(const Tensor& self, const std::vector<TensorIndex>& indices, const char* op) {
  EMBER_CHECK(self.defined(), op, "called with an undefined tensor");
  EMBER_CHECK(!indices.empty(), op, "Passing an empty index list to Tensor::", op, "() is not valid syntax");
  int64_t consumed = 0, ellipses = 0;
  for (const auto& index : indices) {
    consumed += consumed_dims(index);
    ellipses += index.is_ellipsis() ? 1 : 0;
  }
  EMBER_CHECK(ellipses <= 1, op, "an index can only have a single ellipsis ('...'), got ", ellipses);
  EMBER_CHECK(self.dim() > 0 || std::none_of(indices.begin(), indices.end(), [](const TensorIndex& i) { return i.is_integer(); }),
              op, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert "
              "a 0-dim tensor to a number");
  EMBER_CHECK(consumed <= self.dim(), op, "too many indices for tensor of dimension ", self.dim(), " (got ", consumed,
              ")");
  IndexPlan plan{self, {}, {}};
  int64_t dim = 0;       // the next dim of plan.view to index
  int64_t self_dim = 0;  // the dim of self it is (for messages)
  for (size_t position = 0; position < indices.size(); ++position) {
    const TensorIndex& index = indices[position];
    Tensor& view = plan.view;
    switch (index.type()) {
      case indexing::TensorIndexType::None: view = view.unsqueeze(dim++); break;
      case indexing::TensorIndexType::Ellipsis:
        dim += self.dim() - consumed;
        self_dim += self.dim() - consumed;
        break;
      case indexing::TensorIndexType::Boolean: boolean_dim(plan, dim++, index.boolean()); break;
      case indexing::TensorIndexType::Integer: {
        const int64_t size = view.size(dim), i = index.integer();
        EMBER_CHECK(i >= -size && i < size, op, "index ", i, " is out of bounds for dimension ", self_dim, " with size ",
                    size);
        view = view.select(dim, i);
        ++self_dim;
        break;
      }
      case indexing::TensorIndexType::Slice: {
        const indexing::Slice& s = index.slice();
        EMBER_CHECK(s.step() > 0, op, "slice step must be positive, got ", s.step());
        view = view.slice(dim++, s.start(), s.stop(), s.step());
        ++self_dim;
        break;
      }
      case indexing::TensorIndexType::Tensor: {
        const Tensor& t = index.tensor();
        EMBER_CHECK(t.defined(), op, "index ", position, " is an undefined tensor");
        if (is_mask(t) && t.dim() == 0) {
          boolean_dim(plan, dim++, t.item<bool>());
          break;
        }
        if (t.dim() == 0 && is_integral(t.scalar_type())) {  // as an integer: a view
          const int64_t size = view.size(dim), i = t.item<int64_t>();
          EMBER_CHECK(i >= -size && i < size, op, "index ", i, " is out of bounds for dimension ", self_dim,
                      " with size ", size);
          view = view.select(dim, i);
          ++self_dim;
          break;
        }
        if (is_mask(t)) {
          if (t.scalar_type() == kUInt8) {
            EMBER_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
          }
          for (int64_t j = 0; j < t.dim(); ++j) {
            EMBER_CHECK(t.size(j) == view.size(dim + j), op, "the shape of the mask ", t.sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ", view.sizes(), " at index ", dim + j);
          }
          const Tensor positions = t.nonzero();
          for (int64_t j = 0; j < t.dim(); ++j) {
            plan.dims.push_back(dim + j);
            plan.indices.push_back(positions.select(1, j));
          }
          dim += t.dim();
          self_dim += t.dim();
          break;
        }
        EMBER_CHECK(t.scalar_type() == kInt64 || t.scalar_type() == kInt32 || t.scalar_type() == kInt8, op,
                    "tensors used as indices must be long, int, byte or bool tensors, got ", dtype_name(t.scalar_type()));
        plan.dims.push_back(dim++);
        plan.indices.push_back(t.to(kInt64));
        ++self_dim;
        break;
      }
    }
  }
  return plan;
}

// x[..., idx_0, ..., idx_k, ...] on the plan's view: the index tensors broadcast to B; the
// result holds B where the indexed dims were if they are adjacent, else in front (PyTorch).
Tensor gather_advanced(const IndexPlan& plan, const char* op) {
  const Tensor& view = plan.view;
  std::vector<int64_t> broadcast;
  for (const Tensor& t : plan.indices) broadcast = ops::broadcast_shapes(broadcast, t.sizes(), op);
  // Flat position within the indexed dims, row-major: sum_j idx_j * prod_{l > j} size_l.
  Tensor flat_index = zeros(broadcast, kInt64);
  {
    NoGradGuard guard;
    int64_t stride = 1;
    for (size_t j = plan.indices.size(); j-- > 0;) {
      const int64_t dim = plan.dims[j], size = view.size(dim);
      Tensor idx = plan.indices[j];
      if (idx.numel() > 0) {
        const int64_t lowest = idx.min().item<int64_t>(), highest = idx.max().item<int64_t>();
        const int64_t bad = lowest < -size ? lowest : highest;
        EMBER_CHECK(lowest >= -size && highest < size, op, "index ", bad,
                    " is out of bounds for dimension with size ", size, " (dimension ", dim, " of the indexed view)");
      }
      idx = idx + (idx < 0).to(kInt64) * size;
      flat_index = flat_index + idx * stride;
      stride *= size;
    }
  }
  std::vector<int64_t> order = plan.dims, rest_sizes;
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (std::find(plan.dims.begin(), plan.dims.end(), d) != plan.dims.end()) continue;
    order.push_back(d);
    rest_sizes.push_back(view.size(d));
  }
  int64_t indexed_numel = 1;
  for (int64_t d : plan.dims) indexed_numel *= view.size(d);
  std::vector<int64_t> flat_sizes = {indexed_numel};
  flat_sizes.insert(flat_sizes.end(), rest_sizes.begin(), rest_sizes.end());
  Tensor picked = view.permute(order).reshape(flat_sizes).index_select(0, flat_index.reshape({-1}));
  std::vector<int64_t> out_sizes = broadcast;
  out_sizes.insert(out_sizes.end(), rest_sizes.begin(), rest_sizes.end());
  Tensor out = picked.reshape(out_sizes);
  bool adjacent = true;
  for (size_t j = 1; j < plan.dims.size(); ++j) adjacent = adjacent && plan.dims[j] == plan.dims[j - 1] + 1;
  if (!adjacent || plan.dims.front() == 0) return out;
  std::vector<int64_t> from(broadcast.size()), to(broadcast.size());
  std::iota(from.begin(), from.end(), 0);
  std::iota(to.begin(), to.end(), plan.dims.front());
  return out.movedim(from, to);
}

Tensor index_impl(const Tensor& self, const std::vector<TensorIndex>& indices, const char* op) {
  IndexPlan plan = apply_basic(self, indices, op);
  if (!plan.dims.empty()) return gather_advanced(plan, op);
  // x[...] is a new view of x, never x itself (as libtorch's alias).
  if (plan.view.is_same(self)) return self.as_strided(self.sizes(), self.strides(), self.storage_offset());
  return plan.view;
}

// With accumulate, scatter_add sums repeated positions in index order (Note [Deterministic
// index accumulation]); without, scatter lets the last write win.
Tensor& index_put_impl(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& rhs,
                       bool accumulate = false) {
  const char* op = "index_put_";
  EMBER_CHECK(rhs.defined(), op, "called with an undefined value tensor");
  // Leading size-1 dims of the value are dropped before broadcasting, as NumPy and libtorch.
  const std::vector<int64_t> value_sizes = rhs.sizes();
  const auto leading_ones = std::find_if(value_sizes.begin(), value_sizes.end(), [](int64_t s) { return s != 1; });
  const Tensor value = leading_ones == value_sizes.begin() ? rhs : rhs.reshape(std::vector<int64_t>(leading_ones, value_sizes.end()));
  // The flat (row-major) position in self of each indexed element, found by indexing positions.
  Tensor positions;
  {
    NoGradGuard guard;
    positions = index_impl(arange(self.numel(), kInt64).view(self.sizes()), indices, op);
  }
  const std::vector<int64_t> shape = positions.sizes();
  const std::vector<int64_t> fitted = value.sizes();
  bool fits = fitted.size() <= shape.size();
  for (size_t i = 1; fits && i <= fitted.size(); ++i) {
    const int64_t from = fitted[fitted.size() - i];
    fits = from == 1 || from == shape[shape.size() - i];
  }
  EMBER_CHECK(fits, op, "shape mismatch: value tensor of shape ", fitted,
              " cannot be broadcast to indexing result of shape ", shape);
  const Tensor flat_positions = positions.reshape({-1});
  auto put = [&](const Tensor& a) {
    const Tensor values = value.to(a.scalar_type()).expand(shape).reshape({-1});
    const Tensor flat = a.reshape({-1});
    return (accumulate ? flat.scatter_add(0, flat_positions, values) : flat.scatter(0, flat_positions, values))
        .view(a.sizes());
  };
  return ops::inplace(self, op, {value}, put, [&] { ops::copy_into(self, put(self)); });
}

// libtorch's List<optional<Tensor>> form as Python indices: a tensor per dim, nullopt as `:`.
std::vector<TensorIndex> as_tensor_indices(const std::vector<std::optional<Tensor>>& indices) {
  std::vector<TensorIndex> out;
  out.reserve(indices.size());
  for (const auto& index : indices) {
    if (index.has_value()) out.emplace_back(*index);
    else out.emplace_back(indexing::Slice());
  }
  return out;
}

}  // namespace

Tensor Tensor::index(const std::vector<std::optional<Tensor>>& indices) const {
  return index_impl(*this, as_tensor_indices(indices), "index");
}
Tensor& Tensor::index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                           bool accumulate) const {
  return index_put_impl(*this, as_tensor_indices(indices), values, accumulate);
}
Tensor Tensor::index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                         bool accumulate) const {
  Tensor out = clone();
  out.index_put_(indices, values, accumulate);
  return out;
}
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate) {
  return self.index_put(indices, values, accumulate);
}
Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) { return self.index(indices); }
Tensor& index_put_(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                   bool accumulate) {
  return self.index_put_(indices, values, accumulate);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index_impl(*this, std::vector<TensorIndex>(indices), "index");
}
Tensor Tensor::index(const std::vector<TensorIndex>& indices) const { return index_impl(*this, indices, "index"); }
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& rhs) const {
  return index_put_impl(*this, std::vector<TensorIndex>(indices), rhs);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& v) const {
  return index_put_impl(*this, std::vector<TensorIndex>(indices), ops::scalar_to_tensor(v, scalar_type()));
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& rhs) const {
  return index_put_impl(*this, indices, rhs);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& v) const {
  return index_put_impl(*this, indices, ops::scalar_to_tensor(v, scalar_type()));
}

}  // namespace ember
