// Float64 references for reductions, scans and softmax: plain loops over the row-major
// positions of a tensor read element by element (testutil::element), independent of
// ember's reduction layout and kernels.
#pragma once
#include <functional>
#include <vector>

#include "core/testing.h"

namespace ember::testutil {

using Slice = std::vector<double>;

inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> index(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return index;
}

inline int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& sizes) {
  int64_t flat = 0;
  for (size_t d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + index[d];
  return flat;
}

inline int64_t count_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// The values of x reduced over `dims` (empty = all), one slice per output element in
// row-major order of the output; each slice lists its values in row-major order of x, so
// along a single reduced dim they come in index order.
struct Reduction {
  std::vector<int64_t> out_sizes;
  std::vector<Slice> slices;
};

inline Reduction group_for_reduction(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const int64_t nd = x.dim();
  std::vector<bool> reduced(nd, dims.empty());
  for (int64_t d : dims) reduced[d < 0 ? d + nd : d] = true;
  std::vector<int64_t> keep_sizes;
  Reduction r;
  for (int64_t d = 0; d < nd; ++d) {
    keep_sizes.push_back(reduced[d] ? 1 : x.size(d));
    if (!reduced[d] || keepdim) r.out_sizes.push_back(reduced[d] ? 1 : x.size(d));
  }
  r.slices.resize(count_of(keep_sizes));
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, x.sizes());
    for (int64_t d = 0; d < nd; ++d)
      if (reduced[d]) index[d] = 0;
    r.slices[ravel(index, keep_sizes)].push_back(element(x, i));
  }
  return r;
}

// f applied to every slice of the reduction, in output order.
inline std::vector<double> reduce_reference(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
                                            const std::function<double(const Slice&)>& f) {
  std::vector<double> out;
  for (const Slice& s : group_for_reduction(x, std::move(dims), keepdim).slices) out.push_back(f(s));
  return out;
}

inline std::vector<int64_t> reduced_shape(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return group_for_reduction(x, std::move(dims), keepdim).out_sizes;
}

// f maps each slice along `dim` to a slice of the same length; the results are placed back
// at the slice's positions (row-major over x's shape). For scans and softmax.
inline std::vector<double> map_slices(const Tensor& x, int64_t dim, const std::function<Slice(const Slice&)>& f) {
  std::vector<double> out(static_cast<size_t>(x.numel()));
  if (x.dim() == 0) {
    if (x.numel() == 1) out[0] = f({element(x, 0)})[0];
    return out;
  }
  if (dim < 0) dim += x.dim();
  const std::vector<int64_t> sizes = x.sizes();
  const int64_t length = sizes[dim];
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, sizes);
    if (index[dim] != 0) continue;  // visit each slice once, from its first element
    Slice slice;
    std::vector<int64_t> positions;
    for (int64_t k = 0; k < length; ++k) {
      index[dim] = k;
      positions.push_back(ravel(index, sizes));
      slice.push_back(element(x, positions.back()));
    }
    const Slice mapped = f(slice);
    for (int64_t k = 0; k < length; ++k) out[positions[k]] = mapped[k];
  }
  return out;
}

// Inputs of a given logical shape in different memory layouts, filled in row-major order.
enum class InputLayout { Contiguous, Permuted, Strided };
const std::vector<InputLayout> kLayouts = {InputLayout::Contiguous, InputLayout::Permuted, InputLayout::Strided};

inline const char* layout_name(InputLayout layout) {
  switch (layout) {
    case InputLayout::Contiguous: return "contiguous";
    case InputLayout::Permuted: return "permuted";
    case InputLayout::Strided: return "strided";
  }
  return "?";
}

// Permuted: storage in reversed dim order (a transpose for 2-D). Strided: every other
// element of a wider last dim.
inline Tensor make_layout(const std::vector<double>& v, const std::vector<int64_t>& sizes, ScalarType dtype,
                          InputLayout layout) {
  Tensor t;
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (layout == InputLayout::Contiguous || nd == 0) {
    t = empty(sizes, dtype);
  } else if (layout == InputLayout::Permuted) {
    std::vector<int64_t> reversed(sizes.rbegin(), sizes.rend()), order;
    for (int64_t d = nd - 1; d >= 0; --d) order.push_back(d);
    t = empty(reversed, dtype).permute(order);
  } else {
    std::vector<int64_t> wide = sizes;
    wide.back() = 2 * sizes.back() + 1;
    t = zeros(wide, dtype).slice(nd - 1, 1, std::nullopt, 2);
  }
  for (int64_t i = 0; i < t.numel(); ++i) write_element(t, i, v[i]);
  return t;
}

// Shared reference math.
inline double ref_sum(const Slice& s) {
  double total = 0;
  for (double v : s) total += v;
  return total;
}

inline double ref_mean(const Slice& s) { return ref_sum(s) / static_cast<double>(s.size()); }

inline double ref_var(const Slice& s, bool unbiased) {
  const double mean = ref_mean(s);
  double squares = 0;
  for (double v : s) squares += (v - mean) * (v - mean);
  const double divisor = std::max<double>(0, static_cast<double>(s.size()) - (unbiased ? 1 : 0));
  return squares / divisor;
}

inline Slice ref_softmax(const Slice& s, bool log) {
  double max = -INFINITY;
  for (double v : s) max = std::max(max, v);
  double total = 0;
  for (double v : s) total += std::exp(v - max);
  Slice out;
  for (double v : s) out.push_back(log ? v - max - std::log(total) : std::exp(v - max) / total);
  return out;
}

// Gradient of f(x).sum() with respect to x.
inline Tensor grad_of_sum(const std::function<Tensor(const Tensor&)>& f, const Tensor& input) {
  Tensor x = input.detach().clone().requires_grad_(true);
  f(x).sum().backward();
  return x.grad();
}

}  // namespace ember::testutil
