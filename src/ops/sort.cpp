// sort, argsort and topk along one dim, with the backward of the selected values.
#include "cpu/sort.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;

// x (contiguous) seen as [outer, n, inner] around `dim`; a 0-dim tensor is one row of one.
cpu::RowLayout row_layout(const Tensor& x, int64_t dim) {
  cpu::RowLayout rows;
  if (x.dim() == 0) {
    rows.n = 1;
    return rows;
  }
  rows.n = x.size(dim);
  for (int64_t d = 0; d < dim; ++d) rows.outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) rows.inner *= x.size(d);
  return rows;
}

// values = x picked along `dim` at `indices`: their gradient goes back to the picked places.
void record_selection(const char* name, const Tensor& x, int64_t dim, const Tensor& values, const Tensor& indices) {
  if (!autograd::should_record({x})) return;
  std::vector<int64_t> sizes = x.sizes();
  ScalarType dtype = x.scalar_type();
  SavedTensor saved_indices(indices, true);
  autograd::record(name, {x}, {values, indices},
                   [sizes, dtype, dim, saved_indices](std::vector<Tensor>& g, const std::vector<bool>&) {
                     return std::vector<Tensor>{zeros(sizes, dtype).scatter(dim, saved_indices.get(), g[0])};
                   });
}

std::tuple<Tensor, Tensor> sort_impl(const Tensor& x, int64_t dim, bool descending) {
  EMBER_CHECK(x.defined(), "sort", "called on an undefined tensor");
  EMBER_RECORD_OP("sort", x);
  dim = core::wrap_dim(dim, x.dim(), "sort");
  Tensor input = x.detach().contiguous();
  Tensor values = core::make_tensor(x.sizes(), x.scalar_type());
  Tensor indices = core::make_tensor(x.sizes(), kInt64);
  core::launch("sort", [&] {
    return [dtype = x.scalar_type(), in = input.data_ptr(), rows = row_layout(x, dim), descending, v = values.data_ptr(),
            i = indices.data_ptr<int64_t>()] { cpu::sort_rows(dtype, in, rows, descending, v, i); };
  });
  record_selection("SortBackward", x, dim, values, indices);
  return {values, indices};
}

}  // namespace

// Every sort is stable (see cpu::sort_rows), so `stable` only documents the caller's intent.
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { return sort_impl(*this, dim, descending); }
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool>, int64_t dim, bool descending) const {
  return sort_impl(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return std::get<1>(sort_impl(*this, dim, descending)); }
Tensor Tensor::argsort(bool, int64_t dim, bool descending) const {
  return std::get<1>(sort_impl(*this, dim, descending));
}

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  EMBER_CHECK(defined(), "topk", "called on an undefined tensor");
  EMBER_RECORD_OP("topk", *this);
  dim = core::wrap_dim(dim, this->dim(), "topk");
  const cpu::RowLayout rows = row_layout(*this, dim);
  EMBER_CHECK(k >= 0 && k <= rows.n, "topk", "k ", k, " is out of range [0, ", rows.n, "] for dimension ", dim,
              " of a tensor of shape ", sizes());
  std::vector<int64_t> out_sizes = sizes();
  if (this->dim() > 0) out_sizes[dim] = k;
  // Like PyTorch, a 0-dim input returns itself whatever k is.
  const int64_t kept = this->dim() == 0 ? 1 : k;
  Tensor input = detach().contiguous();
  Tensor values = core::make_tensor(out_sizes, scalar_type());
  Tensor indices = core::make_tensor(out_sizes, kInt64);
  core::launch("topk", [&] {
    return [dtype = scalar_type(), in = input.data_ptr(), rows, kept, largest, sorted, v = values.data_ptr(),
            i = indices.data_ptr<int64_t>()] { cpu::topk_rows(dtype, in, rows, kept, largest, sorted, v, i); };
  });
  record_selection("TopkBackward", *this, dim, values, indices);
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) { return x.sort(dim, descending); }
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool> stable, int64_t dim, bool descending) {
  return x.sort(stable, dim, descending);
}
Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return x.argsort(dim, descending); }
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  return x.topk(k, dim, largest, sorted);
}

}  // namespace ember
