// Gather/scatter, index_select/index_add and triangle kernels (internal). Index arrays
// are contiguous int64 whose values the caller has already checked to be in bounds.
//
// Note [Deterministic index accumulation]
// scatter_add and index_add may send many sources to one destination. Both kernels split
// work by destination: scatter lines (all elements that differ only along `dim`) write
// disjoint parts of self, and index_add groups its sources per destination slice, summing
// each in increasing source order. No two threads touch one element, and every element
// adds its sources in the same order as a serial loop, so the result is bitwise identical
// for any thread count.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/dtype.h"

namespace ember::cpu {

// The first value (in memory order) of the n contiguous indices outside [0, bound).
std::optional<int64_t> first_out_of_bounds(const int64_t* index, int64_t n, int64_t bound);

// Geometry shared by gather and scatter: `index` is contiguous with shape `sizes`; `self`
// and `other` (scatter's src, gather's out) are addressed through their own strides, in
// elements. Index values select positions along `dim` of self.
struct ScatterGeometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> self_strides;
  std::vector<int64_t> other_strides;
  int64_t dim = 0;
};

// out[i][j][k] = self[i][index[i][j][k]][k] (for dim 1).
void gather(const ScatterGeometry& g, size_t element_size, const char* self, const int64_t* index, char* out);

enum class ScatterMode { Assign, Add };

// self[i][index[i][j][k]][k] = src[i][j][k] (Assign: the last write along dim wins) or
// += src[i][j][k] (Add).
void scatter(const ScatterGeometry& g, ScalarType dtype, ScatterMode mode, char* self, const int64_t* index,
             const char* src);

// Contiguous blocks seen as [outer, size, inner] with `size` differing per operand.
struct SliceLayout {
  int64_t outer = 1, inner = 1;
  int64_t self_size = 0;   // length of self's (or weight's) indexed dim
  int64_t index_size = 0;  // number of indices = length of out's / source's indexed dim
};

// out[o, k, :] = self[o, index[k], :].
void index_select(const SliceLayout& layout, size_t element_size, const char* self, const int64_t* index, char* out);

// self[o, index[k], :] += source[o, k, :].
void index_add(const SliceLayout& layout, ScalarType dtype, char* self, const int64_t* index, const char* source);

// Copies the lower (or upper) triangle of each of `batch` contiguous rows x cols matrices
// and zeroes the rest: (i, j) is kept when j - i <= diagonal (lower) or >= diagonal (upper).
void copy_triangle(size_t element_size, const char* in, char* out, int64_t batch, int64_t rows, int64_t cols,
                   int64_t diagonal, bool lower);

}  // namespace ember::cpu
