#include "cpu/index.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cpu/parallel.h"
#include "cpu/type_dispatch.h"

namespace ember::cpu {
namespace {

constexpr int64_t kGrainElements = 32768;

// a + b as scatter_add/index_add accumulate it: half types round through float once per
// add (like PyTorch), integers wrap, bool saturates.
template <typename T>
T add_value(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(a) + static_cast<float>(b));
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

// Walks the lines of a ScatterGeometry: the index positions that differ only along `dim`.
// Holds the offsets (elements) of the current line's first element in each operand.
class LineWalker {
 public:
  LineWalker(const ScatterGeometry& g, int64_t first_line) : g_(g), coords_(g.sizes.size(), 0) {
    const int64_t ndim = static_cast<int64_t>(g.sizes.size());
    index_strides_.assign(ndim, 1);
    for (int64_t d = ndim - 2; d >= 0; --d) index_strides_[d] = index_strides_[d + 1] * g.sizes[d + 1];
    int64_t rest = first_line;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (d == g.dim) continue;
      coords_[d] = rest % g.sizes[d];
      rest /= g.sizes[d];
      index_offset += coords_[d] * index_strides_[d];
      self_offset += coords_[d] * g.self_strides[d];
      other_offset += coords_[d] * g.other_strides[d];
    }
  }

  void next() {
    for (int64_t d = static_cast<int64_t>(g_.sizes.size()) - 1; d >= 0; --d) {
      if (d == g_.dim) continue;
      if (++coords_[d] < g_.sizes[d]) {
        move(d, 1);
        return;
      }
      move(d, -(g_.sizes[d] - 1));
      coords_[d] = 0;
    }
  }

  int64_t index_stride() const { return index_strides_[g_.dim]; }

  int64_t index_offset = 0, self_offset = 0, other_offset = 0;

 private:
  void move(int64_t d, int64_t steps) {
    index_offset += steps * index_strides_[d];
    self_offset += steps * g_.self_strides[d];
    other_offset += steps * g_.other_strides[d];
  }

  const ScatterGeometry& g_;
  std::vector<int64_t> coords_;
  std::vector<int64_t> index_strides_;
};

// Calls visit(walker) for every line, lines split across threads in fixed chunks.
template <typename Visit>
void for_each_line(const ScatterGeometry& g, Visit visit) {
  int64_t numel = 1;
  for (int64_t s : g.sizes) numel *= s;
  if (numel == 0) return;
  const int64_t length = g.sizes[g.dim];
  const int64_t lines = numel / length;
  parallel_for(0, lines, std::max<int64_t>(1, kGrainElements / length), [&](int64_t lo, int64_t hi) {
    LineWalker walker(g, lo);
    for (int64_t line = lo; line < hi; ++line, walker.next()) visit(walker);
  });
}

// Source positions grouped by destination: sources[begin[d] .. begin[d + 1]) are the
// positions k (increasing) with index[k] == destinations[d].
struct DestinationGroups {
  std::vector<int64_t> destinations;
  std::vector<int64_t> begin;
  std::vector<int64_t> sources;
};

// A stable counting sort of the positions by index value.
DestinationGroups group_by_destination(const int64_t* index, int64_t count, int64_t bound) {
  std::vector<int64_t> start(bound + 1, 0);
  for (int64_t k = 0; k < count; ++k) ++start[index[k] + 1];
  for (int64_t s = 0; s < bound; ++s) start[s + 1] += start[s];
  DestinationGroups groups;
  groups.sources.resize(count);
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int64_t k = 0; k < count; ++k) groups.sources[next[index[k]]++] = k;
  for (int64_t s = 0; s < bound; ++s) {
    if (start[s + 1] == start[s]) continue;
    groups.destinations.push_back(s);
    groups.begin.push_back(start[s]);
  }
  groups.begin.push_back(count);
  return groups;
}

}  // namespace

std::optional<int64_t> first_out_of_bounds(const int64_t* index, int64_t n, int64_t bound) {
  for (int64_t k = 0; k < n; ++k)
    if (index[k] < 0 || index[k] >= bound) return index[k];
  return std::nullopt;
}

void gather(const ScatterGeometry& g, size_t element_size, const char* self, const int64_t* index, char* out) {
  const int64_t length = g.sizes[g.dim];
  const int64_t self_step = g.self_strides[g.dim], out_step = g.other_strides[g.dim];
  const int64_t bytes = static_cast<int64_t>(element_size);
  dispatch_element_size(element_size, [&](auto tag) {
    using Bits = typename decltype(tag)::type;
    for_each_line(g, [&](const LineWalker& w) {
      const int64_t* line_index = index + w.index_offset;
      for (int64_t j = 0; j < length; ++j) {
        const int64_t position = line_index[j * w.index_stride()];
        move_element<Bits>(out + (w.other_offset + j * out_step) * bytes,
                           self + (w.self_offset + position * self_step) * bytes);
      }
    });
  });
}

void scatter(const ScatterGeometry& g, ScalarType dtype, ScatterMode mode, char* self, const int64_t* index,
             const char* src) {
  const int64_t length = g.sizes[g.dim];
  const int64_t self_step = g.self_strides[g.dim], src_step = g.other_strides[g.dim];
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = reinterpret_cast<T*>(self);
    const T* from = reinterpret_cast<const T*>(src);
    for_each_line(g, [&](const LineWalker& w) {
      const int64_t* line_index = index + w.index_offset;
      for (int64_t j = 0; j < length; ++j) {
        T& target = dst[w.self_offset + line_index[j * w.index_stride()] * self_step];
        const T value = from[w.other_offset + j * src_step];
        target = mode == ScatterMode::Add ? add_value(target, value) : value;
      }
    });
  });
}

void index_select(const SliceLayout& layout, size_t element_size, const char* self, const int64_t* index, char* out) {
  const int64_t row_bytes = layout.inner * static_cast<int64_t>(element_size);
  const int64_t rows = layout.outer * layout.index_size;
  if (row_bytes == 0) return;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElements / layout.inner), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t o = r / layout.index_size, k = r % layout.index_size;
      std::memcpy(out + r * row_bytes, self + (o * layout.self_size + index[k]) * row_bytes, row_bytes);
    }
  });
}

void index_add(const SliceLayout& layout, ScalarType dtype, char* self, const int64_t* index, const char* source) {
  if (layout.outer * layout.inner * layout.index_size == 0) return;
  const DestinationGroups groups = group_by_destination(index, layout.index_size, layout.self_size);
  // Work items: (outer, destination, column block); see Note [Deterministic index accumulation].
  constexpr int64_t kColumns = 2048;
  const int64_t column_blocks = (layout.inner + kColumns - 1) / kColumns;
  const int64_t destinations = static_cast<int64_t>(groups.destinations.size());
  const int64_t items = layout.outer * destinations * column_blocks;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::min(layout.inner, kColumns));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = reinterpret_cast<T*>(self);
    const T* src = reinterpret_cast<const T*>(source);
    parallel_for(0, items, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t item = lo; item < hi; ++item) {
        const int64_t block = item % column_blocks;
        const int64_t d = (item / column_blocks) % destinations;
        const int64_t o = item / (column_blocks * destinations);
        const int64_t c0 = block * kColumns, c1 = std::min(layout.inner, c0 + kColumns);
        T* row = dst + (o * layout.self_size + groups.destinations[d]) * layout.inner;
        for (int64_t p = groups.begin[d]; p < groups.begin[d + 1]; ++p) {
          const T* from = src + (o * layout.index_size + groups.sources[p]) * layout.inner;
          for (int64_t c = c0; c < c1; ++c) row[c] = add_value(row[c], from[c]);
        }
      }
    });
  });
}

void copy_triangle(size_t element_size, const char* in, char* out, int64_t batch, int64_t rows, int64_t cols,
                   int64_t diagonal, bool lower) {
  const int64_t bytes = static_cast<int64_t>(element_size);
  if (cols == 0) return;
  parallel_for(0, batch * rows, std::max<int64_t>(1, kGrainElements / cols), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t i = r % rows;
      // Kept columns [keep_begin, keep_end); the rest of the row becomes zero.
      const int64_t keep_begin = lower ? 0 : std::clamp<int64_t>(i + diagonal, 0, cols);
      const int64_t keep_end = lower ? std::clamp<int64_t>(i + diagonal + 1, 0, cols) : cols;
      const char* from = in + r * cols * bytes;
      char* to = out + r * cols * bytes;
      std::memset(to, 0, keep_begin * bytes);
      std::memcpy(to + keep_begin * bytes, from + keep_begin * bytes, (keep_end - keep_begin) * bytes);
      std::memset(to + keep_end * bytes, 0, (cols - keep_end) * bytes);
    }
  });
}

}  // namespace ember::cpu
