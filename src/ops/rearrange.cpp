// flip, roll, movedim, broadcast_to, repeat, repeat_interleave: composites of views,
// index_select and cat, so their gradients come from those ops.
#include <algorithm>

#include "ops/op_utils.h"

namespace ember {
namespace {

// dims wrapped into [0, ndim), each at most once.
std::vector<int64_t> unique_dims(IntArrayRef dims, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t w = core::wrap_dim(d, ndim, op);
    EMBER_CHECK(std::find(out.begin(), out.end(), w) == out.end(), op, "dim ", w,
                " appears multiple times in the list of dims ", std::vector<int64_t>(dims.begin(), dims.end()));
    out.push_back(w);
  }
  return out;
}

}  // namespace

Tensor Tensor::flip(IntArrayRef dims) const {
  EMBER_CHECK(defined(), "flip", "called with an undefined tensor");
  Tensor out = *this;
  for (int64_t d : unique_dims(dims, dim(), "flip")) {
    if (dim() == 0 || size(d) <= 1) continue;
    out = out.index_select(d, arange(size(d) - 1, -1, -1, kInt64));
  }
  // Like torch.flip, the result never aliases self.
  return out.is_same(*this) ? clone() : out;
}

Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  EMBER_CHECK(defined(), "roll", "called with an undefined tensor");
  EMBER_CHECK(shifts.size() > 0, "roll", "shifts must not be empty");
  if (dims.size() == 0) {
    EMBER_CHECK(shifts.size() == 1, "roll", "without dims, shifts must have one value, got ", shifts.size());
    return flatten().roll(shifts, 0).view(sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(), "roll", "shifts and dimensions must align, got ", shifts.size(),
              " shifts and ", dims.size(), " dims");
  Tensor out = *this;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = core::wrap_dim(dims.data()[i], dim(), "roll");
    const int64_t n = dim() == 0 ? 1 : size(d);
    if (n == 0 || dim() == 0) continue;
    const int64_t s = ((shifts.data()[i] % n) + n) % n;  // Python modulo: a shift of -1 moves left
    if (s == 0) continue;
    out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same(*this) ? clone() : out;
}

Tensor Tensor::movedim(IntArrayRef source, IntArrayRef destination) const {
  EMBER_CHECK(source.size() == destination.size(), "movedim", "Invalid source or destination dims: source (",
              std::vector<int64_t>(source.begin(), source.end()), ") and destination (",
              std::vector<int64_t>(destination.begin(), destination.end()), ") must have the same number of elements");
  const int64_t n = dim();
  const std::vector<int64_t> src = unique_dims(source, n, "movedim");
  const std::vector<int64_t> dst = unique_dims(destination, n, "movedim");
  // Placed dims go to their destinations; the rest keep their order in the free slots.
  std::vector<int64_t> order(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[static_cast<size_t>(dst[i])] = src[i];
    moved[static_cast<size_t>(src[i])] = true;
  }
  int64_t next = 0;
  for (auto& slot : order) {
    if (slot != -1) continue;
    while (moved[static_cast<size_t>(next)]) ++next;
    slot = next++;
  }
  return n == 0 ? *this : permute(order);
}

Tensor Tensor::movedim(int64_t source, int64_t destination) const {
  return movedim(IntArrayRef(source), IntArrayRef(destination));
}

Tensor Tensor::broadcast_to(IntArrayRef sizes) const {
  EMBER_CHECK(static_cast<int64_t>(sizes.size()) >= dim(), "broadcast_to", "target shape ",
              std::vector<int64_t>(sizes.begin(), sizes.end()), " has fewer dims than the tensor's shape ",
              this->sizes());
  return expand(sizes);
}

Tensor Tensor::repeat(IntArrayRef repeats) const {
  EMBER_CHECK(defined(), "repeat", "called with an undefined tensor");
  const int64_t n = static_cast<int64_t>(repeats.size());
  EMBER_CHECK(n >= dim(), "repeat", "number of dimensions of repeat dims (", n,
              ") can not be smaller than number of dimensions of tensor (", dim(), ")");
  // [r0, s0, r1, s1, ...] by expanding size-1 dims interleaved with self's, then merged pairwise.
  std::vector<int64_t> padded(static_cast<size_t>(n - dim()), 1);
  padded.insert(padded.end(), sizes().begin(), sizes().end());
  std::vector<int64_t> interleaved, expanded, result;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = repeats.data()[i], s = padded[static_cast<size_t>(i)];
    EMBER_CHECK(r >= 0, "repeat", "repeats can not be negative, got ", r, " at dim ", i);
    interleaved.insert(interleaved.end(), {1, s});
    expanded.insert(expanded.end(), {r, s});
    result.push_back(r * s);
  }
  return reshape(interleaved).expand(expanded).reshape(result);
}

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim, std::optional<int64_t> output_size) const {
  EMBER_CHECK(repeats >= 0, "repeat_interleave", "repeats can not be negative, got ", repeats);
  if (!dim) return flatten().repeat_interleave(repeats, 0, output_size);
  const int64_t d = core::wrap_dim(*dim, this->dim(), "repeat_interleave");
  const Tensor x = this->dim() == 0 ? reshape({1}) : *this;
  std::vector<int64_t> expanded = x.sizes();
  expanded.insert(expanded.begin() + d + 1, repeats);
  Tensor out = x.unsqueeze(d + 1).expand(expanded).flatten(d, d + 1);
  EMBER_CHECK(!output_size || *output_size == out.size(d), "repeat_interleave", "output_size ",
              output_size.value_or(0), " does not match the repeated size ", out.size(d));
  return out;
}

Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) const {
  if (!dim) return flatten().repeat_interleave(repeats, 0, output_size);
  const int64_t d = core::wrap_dim(*dim, this->dim(), "repeat_interleave");
  const int64_t n = this->dim() == 0 ? 1 : size(d);
  EMBER_CHECK(repeats.dim() <= 1, "repeat_interleave", "repeats must be 0-dim or 1-dim, got shape ", repeats.sizes());
  // One count (0-dim or size 1) applies to every slice, as PyTorch.
  Tensor counts = repeats.numel() == 1 ? repeats.reshape({1}).expand({n}) : repeats;
  EMBER_CHECK(counts.size(0) == n, "repeat_interleave", "repeats must have the same size as input along dim ", d,
              ", got repeats of size ", counts.size(0), " for size ", n);
  Tensor index = ember::repeat_interleave(counts);
  EMBER_CHECK(!output_size || *output_size == index.numel(), "repeat_interleave", "output_size ",
              output_size.value_or(0), " does not match the repeated size ", index.numel());
  return (this->dim() == 0 ? reshape({1}) : *this).index_select(d, index);
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  EMBER_CHECK(repeats.dim() == 1, "repeat_interleave", "repeats must be 1-dim, got shape ", repeats.sizes());
  EMBER_CHECK(repeats.scalar_type() == kInt64 || repeats.scalar_type() == kInt32, "repeat_interleave",
              "repeats must be int64 or int32, got ", dtype_name(repeats.scalar_type()));
  NoGradGuard guard;
  const int64_t n = repeats.size(0);
  if (n == 0) return empty({0}, kInt64);
  Tensor counts = repeats.to(kInt64);
  const int64_t lowest = counts.min().item<int64_t>();
  EMBER_CHECK(lowest >= 0, "repeat_interleave", "repeats can not be negative, got ", lowest);
  // Position j of row i is kept when j < repeats[i]: the kept row numbers, in order.
  const int64_t longest = counts.max().item<int64_t>();
  Tensor keep = arange(longest, kInt64).unsqueeze(0) < counts.unsqueeze(1);
  Tensor rows = arange(n, kInt64).unsqueeze(1).expand({n, longest});
  Tensor index = rows.masked_select(keep);
  EMBER_CHECK(!output_size || *output_size == index.numel(), "repeat_interleave", "output_size ",
              output_size.value_or(0), " does not match the repeated size ", index.numel());
  return index;
}

Tensor flip(const Tensor& x, IntArrayRef dims) { return x.flip(dims); }
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) { return x.roll(shifts, dims); }
Tensor movedim(const Tensor& x, IntArrayRef source, IntArrayRef destination) { return x.movedim(source, destination); }
Tensor movedim(const Tensor& x, int64_t source, int64_t destination) { return x.movedim(source, destination); }
Tensor broadcast_to(const Tensor& x, IntArrayRef sizes) { return x.broadcast_to(sizes); }
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  return x.repeat_interleave(repeats, dim, output_size);
}
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  return x.repeat_interleave(repeats, dim, output_size);
}

}  // namespace ember
