#include "cpu/sort.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/parallel.h"
#include "cpu/type_dispatch.h"

namespace ember::cpu {
namespace {

// Half and bfloat16 compare as float; every other type as itself.
template <typename T>
using Key = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename K>
struct Entry {
  K key;
  int64_t index;
};

template <typename K>
bool is_nan(K value) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(value);
  else return false;
}

// a < b with NaN above every number (all NaNs equal).
template <typename K>
bool key_less(K a, K b) {
  return is_nan(b) ? !is_nan(a) : a < b;
}

// A strict total order on entries: by key, then by position. Sorting with it gives the
// stable order without needing a stable algorithm, and makes top-k ties deterministic.
template <typename K>
struct EntryOrder {
  bool descending;
  bool operator()(const Entry<K>& a, const Entry<K>& b) const {
    const bool before = descending ? key_less(b.key, a.key) : key_less(a.key, b.key);
    const bool after = descending ? key_less(a.key, b.key) : key_less(b.key, a.key);
    return before || (!after && a.index < b.index);
  }
};

// Runs body(row_entries, o, j) for every row, rows split across threads in fixed chunks.
// Each chunk owns its scratch buffer, so rows never share memory.
template <typename T, typename Body>
void for_each_row(const T* in, const RowLayout& rows, Body body) {
  const int64_t count = rows.outer * rows.inner;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(rows.n, 1));
  parallel_for(0, count, grain, [&](int64_t lo, int64_t hi) {
    std::vector<Entry<Key<T>>> entries(rows.n);
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t o = r / rows.inner, j = r % rows.inner;
      const T* row = in + o * rows.n * rows.inner + j;
      for (int64_t i = 0; i < rows.n; ++i) entries[i] = {static_cast<Key<T>>(row[i * rows.inner]), i};
      body(entries, o, j);
    }
  });
}

// Writes the first `count` entries of a row to [outer, count, inner] outputs.
template <typename T>
void write_row(const std::vector<Entry<Key<T>>>& entries, int64_t count, int64_t o, int64_t j, int64_t inner,
               const T* in, int64_t n, T* values, int64_t* indices) {
  const T* row = in + o * n * inner + j;
  const int64_t base = o * count * inner + j;
  for (int64_t i = 0; i < count; ++i) {
    values[base + i * inner] = row[entries[i].index * inner];  // the original element, bit for bit
    indices[base + i * inner] = entries[i].index;
  }
}

}  // namespace

void sort_rows(ScalarType dtype, const void* in, const RowLayout& rows, bool descending, void* values,
               int64_t* indices) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* input = static_cast<const T*>(in);
    for_each_row(input, rows, [&](std::vector<Entry<Key<T>>>& entries, int64_t o, int64_t j) {
      std::sort(entries.begin(), entries.end(), EntryOrder<Key<T>>{descending});
      write_row(entries, rows.n, o, j, rows.inner, input, rows.n, static_cast<T*>(values), indices);
    });
  });
}

void topk_rows(ScalarType dtype, const void* in, const RowLayout& rows, int64_t k, bool largest, bool sorted,
               void* values, int64_t* indices) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* input = static_cast<const T*>(in);
    for_each_row(input, rows, [&](std::vector<Entry<Key<T>>>& entries, int64_t o, int64_t j) {
      const EntryOrder<Key<T>> order{largest};
      std::nth_element(entries.begin(), entries.begin() + k, entries.end(), order);
      if (sorted) std::sort(entries.begin(), entries.begin() + k, order);
      write_row(entries, k, o, j, rows.inner, input, rows.n, static_cast<T*>(values), indices);
    });
  });
}

}  // namespace ember::cpu
