// Sum, mean, prod, amax/amin, any/all.
#include <cmath>
#include <string_view>

#include "cpu/parallel.h"
#include "cpu/reduce.h"
#include "ops/reduce_utils.h"

namespace ember {
namespace ops {

ReduceLayout reduce_shapes(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op) {
  ReduceLayout L;
  const int64_t nd = x.dim();
  L.reduced.assign(nd, dims.empty());
  for (int64_t d : dims) {
    int64_t w = core::wrap_dim(d, nd, op);
    if (nd == 0) continue;
    EMBER_CHECK(!L.reduced[w], op, "dim ", w, " appears multiple times in the list of dims ", dims);
    L.reduced[w] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    L.keep_sizes.push_back(L.reduced[d] ? 1 : x.size(d));
    if (!L.reduced[d] || keepdim) L.out_sizes.push_back(L.reduced[d] ? 1 : x.size(d));
  }
  return L;
}

ReduceLayout reduce_layout(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op) {
  ReduceLayout L = reduce_shapes(x, dims, keepdim, op);
  const int64_t nd = x.dim();
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < nd; ++d)
    if (L.reduced[d] && x.size(d) != 1) {
      if (first < 0) first = d;
      last = d;
    }
  bool adjacent = true;
  for (int64_t d = first; d >= 0 && d <= last; ++d)
    if (!L.reduced[d] && x.size(d) != 1) adjacent = false;
  if (first < 0) {  // nothing of size > 1 is reduced
    L.input = x.contiguous();
    L.outer = x.numel();
    return L;
  }
  if (adjacent) {
    L.input = x.contiguous();
    for (int64_t d = 0; d < nd; ++d) {
      if (d < first) L.outer *= x.size(d);
      else if (d <= last) L.R *= x.size(d);
      else L.inner *= x.size(d);
    }
    return L;
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; ++d)
    if (!L.reduced[d]) perm.push_back(d);
  for (int64_t d = 0; d < nd; ++d)
    if (L.reduced[d]) perm.push_back(d);
  NoGradGuard guard;
  L.input = x.permute(perm).contiguous();
  for (int64_t d = 0; d < nd; ++d) (L.reduced[d] ? L.R : L.outer) *= x.size(d);
  return L;
}

Tensor expand_reduced_grad(const Tensor& grad, const ReduceLayout& layout, IntArrayRef input_sizes) {
  return grad.reshape(layout.keep_sizes).expand(input_sizes);
}

}  // namespace ops

namespace {

using cpu::ReduceOp;
using cpu::ReduceValue;

bool accumulates_float(ScalarType t) { return is_floating_point(t); }

ReduceValue identity(ReduceOp op, bool floating) {
  ReduceValue v{};
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Any: if (floating) v.f = 0; else v.i = 0; break;
    case ReduceOp::Prod: case ReduceOp::All: if (floating) v.f = 1; else v.i = 1; break;
    case ReduceOp::Max: if (floating) v.f = -INFINITY; else v.i = INT64_MIN; break;
    case ReduceOp::Min: if (floating) v.f = INFINITY; else v.i = INT64_MAX; break;
  }
  return v;
}

ReduceValue combine(ReduceOp op, bool floating, ReduceValue a, ReduceValue b) {
  ReduceValue r{};
  if (floating) {
    double x = a.f, y = b.f;
    switch (op) {
      case ReduceOp::Sum: r.f = x + y; break;
      case ReduceOp::Prod: r.f = x * y; break;
      case ReduceOp::Max: r.f = std::isnan(x) ? x : (std::isnan(y) || y > x) ? y : x; break;
      case ReduceOp::Min: r.f = std::isnan(x) ? x : (std::isnan(y) || y < x) ? y : x; break;
      case ReduceOp::Any: r.f = (x != 0) || (y != 0); break;
      case ReduceOp::All: r.f = (x != 0) && (y != 0); break;
    }
  } else {
    int64_t x = a.i, y = b.i;
    switch (op) {
      case ReduceOp::Sum: r.i = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); break;
      case ReduceOp::Prod: r.i = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); break;
      case ReduceOp::Max: r.i = std::max(x, y); break;
      case ReduceOp::Min: r.i = std::min(x, y); break;
      case ReduceOp::Any: r.i = (x != 0) || (y != 0); break;
      case ReduceOp::All: r.i = (x != 0) && (y != 0); break;
    }
  }
  return r;
}

// Reduces one contiguous run of R elements in fixed chunks, combined in chunk order.
ReduceValue reduce_row(ReduceOp op, ScalarType dtype, const char* data, int64_t R, bool parallel) {
  const bool floating = accumulates_float(dtype);
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  auto kernel = EMBER_KERNEL(reduce_run);
  const int64_t chunks = std::max<int64_t>(cpu::num_chunks(0, R, cpu::kReduceChunk), 1);
  if (chunks == 1) {
    ReduceValue v;
    kernel(op, dtype, data, R, &v);
    return v;
  }
  std::vector<ReduceValue> partial(chunks);
  auto body = [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      int64_t begin = c * cpu::kReduceChunk;
      kernel(op, dtype, data + begin * item, std::min(cpu::kReduceChunk, R - begin), &partial[c]);
    }
  };
  if (parallel) cpu::parallel_for(0, chunks, 1, body);
  else body(0, chunks);
  ReduceValue acc = partial[0];
  for (int64_t c = 1; c < chunks; ++c) acc = combine(op, floating, acc, partial[c]);
  return acc;
}

// Runs `op` over `outer` x R x `inner` elements of `dtype` at `base`; returns one value per
// output element (outer * inner).
std::vector<ReduceValue> reduce_values(ReduceOp op, ScalarType dtype, const char* base, int64_t outer, int64_t R,
                                       int64_t inner) {
  const bool floating = accumulates_float(dtype);
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  std::vector<ReduceValue> out(outer * inner, identity(op, floating));
  if (R == 0 || out.empty()) return out;
  if (inner == 1) {
    if (outer < 2 * cpu::num_threads()) {
      for (int64_t o = 0; o < outer; ++o) out[o] = reduce_row(op, dtype, base + o * R * item, R, true);
    } else {
      const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(R, 1));
      cpu::parallel_for(0, outer, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t o = lo; o < hi; ++o) out[o] = reduce_row(op, dtype, base + o * R * item, R, false);
      });
    }
    return out;
  }
  // Reduce over the middle dim: columns of `inner` values, in blocks that run in parallel.
  constexpr int64_t kBlock = 256;
  const int64_t blocks_per_outer = (inner + kBlock - 1) / kBlock;
  auto columns = EMBER_KERNEL(reduce_columns);
  cpu::parallel_for(0, outer * blocks_per_outer, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t o = b / blocks_per_outer, j0 = (b % blocks_per_outer) * kBlock;
      const int64_t count = std::min(kBlock, inner - j0);
      columns(op, dtype, base + (o * R * inner + j0) * item, R, inner, count, &out[o * inner + j0]);
    }
  });
  return out;
}

// The reduction of L.input into a new float64 (floating inputs) or int64 tensor of L.out_sizes.
Tensor reduce_to_wide(ReduceOp op, const ops::ReduceLayout& L) {
  const ScalarType dtype = L.input.scalar_type();
  const bool floating = accumulates_float(dtype);
  Tensor wide = core::make_tensor(L.out_sizes, floating ? kFloat64 : kInt64);
  core::launch("reduce", [&] {
    return [op, dtype, floating, base = static_cast<const char*>(L.input.data_ptr()), outer = L.outer, R = L.R,
            inner = L.inner, out = wide.data_ptr()] {
      const std::vector<ReduceValue> values = reduce_values(op, dtype, base, outer, R, inner);
      for (size_t i = 0; i < values.size(); ++i) {
        if (floating) static_cast<double*>(out)[i] = values[i].f;
        else static_cast<int64_t*>(out)[i] = values[i].i;
      }
    };
  });
  return wide;
}

Tensor reduce(ReduceOp op, const Tensor& x, IntArrayRef dims, bool keepdim, ScalarType out_dtype, const char* name,
              std::optional<ScalarType> compute_dtype = std::nullopt) {
  EMBER_CHECK(x.defined(), name, "called on an undefined tensor");
  EMBER_RECORD_OP(name, x);
  Tensor input = compute_dtype ? x.to(*compute_dtype) : x;
  ops::ReduceLayout L = ops::reduce_layout(input, dims, keepdim, name);
  if (op == ReduceOp::Max || op == ReduceOp::Min) {
    EMBER_CHECK(L.R > 0 || L.outer * L.inner == 0, name, "cannot reduce over an empty dimension of shape ",
                x.sizes(), ": the operation has no identity");
  }
  Tensor out = reduce_to_wide(op, L).to(out_dtype);
  if (op == ReduceOp::Sum && std::string_view(name) == "sum") {
    // Exported as x.sum(dim, keepdim, dtype) (mean, whose frame this also is, is not).
    ember_trace_op_.attr("dim", dims.vec()).attr("keepdim", static_cast<int64_t>(keepdim));
    if (compute_dtype) ember_trace_op_.attr("dtype", static_cast<int64_t>(*compute_dtype));
    ember_trace_op_.result(out);
  }
  return out;
}

ScalarType sum_dtype(const Tensor& x, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_floating_point(x.scalar_type()) ? x.scalar_type() : kInt64;
}

Tensor sum_impl(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  ScalarType out_dtype = sum_dtype(x, dtype);
  Tensor out = reduce(ReduceOp::Sum, x, dims, keepdim, out_dtype, "sum", dtype);
  if (autograd::should_record({x})) {
    ops::ReduceLayout L = ops::reduce_shapes(x, dims, keepdim, "sum");
    std::vector<int64_t> in_sizes = x.sizes();
    ScalarType in_dtype = x.scalar_type();
    autograd::record("SumBackward", {x}, {out},
                     [L, in_sizes, in_dtype](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {ops::expand_reduced_grad(g[0], L, in_sizes).to(in_dtype)};
                     });
  }
  return out;
}

Tensor mean_impl(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  ScalarType out_dtype = dtype.value_or(x.scalar_type());
  EMBER_CHECK(is_floating_point(out_dtype), "mean", "could not infer output dtype. Input dtype must be a floating point "
              "dtype, got ", dtype_name(out_dtype));
  ops::ReduceLayout L = ops::reduce_shapes(x, dims, keepdim, "mean");
  int64_t count = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (L.reduced[d]) count *= x.size(d);
  Tensor out;
  {
    NoGradGuard guard;
    Tensor total = reduce(ReduceOp::Sum, x, dims, keepdim, kFloat64, "mean", dtype);
    out = total.div(static_cast<double>(count)).to(out_dtype);
  }
  if (autograd::should_record({x})) {
    std::vector<int64_t> in_sizes = x.sizes();
    ScalarType in_dtype = x.scalar_type();
    autograd::record("MeanBackward", {x}, {out},
                     [L, in_sizes, in_dtype, count](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {ops::expand_reduced_grad(g[0] / static_cast<double>(count), L, in_sizes).to(in_dtype)};
                     });
  }
  return out;
}

Tensor prod_impl(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  Tensor out = reduce(ReduceOp::Prod, x, dims, keepdim, sum_dtype(x, dtype), "prod", dtype);
  if (autograd::should_record({x})) {
    ops::ReduceLayout L = ops::reduce_shapes(x, dims, keepdim, "prod");
    autograd::SavedTensor sx(x), so(out, true);
    std::vector<int64_t> d = dims.vec();
    autograd::record("ProdBackward", {x}, {out},
                     [L, sx, so, d](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       // d prod / d x_i = product of the others: out / x_i away from zeros; at a
                       // zero, the product of the non-zeros if it is the slice's only zero, else 0.
                       Tensor xv = sx.get();
                       Tensor is_zero = xv == 0;
                       Tensor nonzero_prod = prod_impl(where(is_zero, 1.0, xv), d, true, std::nullopt);
                       Tensor zero_count = sum_impl(is_zero, d, true, std::nullopt);
                       Tensor at_zero = where(zero_count == 1, nonzero_prod, 0.0).expand(xv.sizes());
                       Tensor away = ops::expand_reduced_grad(so.get(), L, xv.sizes()) / where(is_zero, 1.0, xv);
                       Tensor local = where(is_zero, at_zero, away);
                       return {ops::expand_reduced_grad(g[0], L, xv.sizes()) * local};
                     });
  }
  return out;
}

// amax/amin: the gradient is shared evenly between tied extremes, as in PyTorch.
Tensor extreme_impl(ReduceOp op, const Tensor& x, IntArrayRef dims, bool keepdim, const char* name) {
  Tensor out = reduce(op, x, dims, keepdim, x.scalar_type(), name);
  if (autograd::should_record({x})) {
    ops::ReduceLayout L = ops::reduce_shapes(x, dims, keepdim, name);
    autograd::SavedTensor sx(x), so(out, true);
    std::vector<int64_t> d = dims.vec();
    autograd::record(name, {x}, {out},
                     [L, sx, so, d](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                       Tensor xv = sx.get();
                       Tensor hit = (xv == ops::expand_reduced_grad(so.get(), L, xv.sizes())).to(xv.scalar_type());
                       Tensor count = sum_impl(hit, d, true, std::nullopt);
                       return {ops::expand_reduced_grad(g[0], L, xv.sizes()) * hit / count};
                     });
  }
  return out;
}

Tensor logical_reduce(ReduceOp op, const Tensor& x, IntArrayRef dims, bool keepdim, const char* name) {
  return reduce(op, x, dims, keepdim, kBool, name);
}

}  // namespace

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return sum_impl(*this, {}, false, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return sum_impl(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return mean_impl(*this, {}, false, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return mean_impl(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return prod_impl(*this, {}, false, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return prod_impl(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return extreme_impl(ReduceOp::Max, *this, {}, false, "max"); }
Tensor Tensor::min() const { return extreme_impl(ReduceOp::Min, *this, {}, false, "min"); }
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return extreme_impl(ReduceOp::Max, *this, dim, keepdim, "amax"); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return extreme_impl(ReduceOp::Min, *this, dim, keepdim, "amin"); }
Tensor Tensor::any() const { return logical_reduce(ReduceOp::Any, *this, {}, false, "any"); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return logical_reduce(ReduceOp::Any, *this, dim, keepdim, "any"); }
Tensor Tensor::all() const { return logical_reduce(ReduceOp::All, *this, {}, false, "all"); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return logical_reduce(ReduceOp::All, *this, dim, keepdim, "all"); }
Tensor all(const Tensor& x) { return x.all(); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) { return x.all(dim, keepdim); }
Tensor any(const Tensor& x) { return x.any(); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) { return x.any(dim, keepdim); }

Tensor sum(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sum_impl(x, dim, keepdim, dtype);
}
Tensor mean(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return mean_impl(x, dim, keepdim, dtype);
}

}  // namespace ember
