// Strided elementwise iteration over up to kMaxOperands tensors of one shape (broadcast
// operands have stride 0). Dims are reordered and merged so the innermost run is as long
// and as dense as possible; the inner loop then sees a plain 1-D run with byte strides.
#pragma once
#include <cstdint>
#include <vector>

namespace ember::cpu {

constexpr int kMaxDims = 32;
constexpr int kMaxOperands = 4;

// data[k] points at operand k's first element of the run; strides[k] is its byte stride.
using InnerLoop = void (*)(char** data, const int64_t* strides, int64_t n, const void* params);

struct Geometry {
  int ndim = 0;
  int nops = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};                 // innermost first
  int64_t strides[kMaxOperands][kMaxDims] = {};  // bytes
};

// sizes: the common shape; strides[k]: operand k's strides in elements (0 where broadcast);
// element_sizes[k]: its bytes per element. Operand 0 is the output and decides the order.
Geometry make_geometry(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides,
                       const std::vector<int64_t>& element_sizes);
// The same over arrays: ndim sizes, nops stride arrays of ndim each; allocates nothing.
Geometry make_geometry(int ndim, const int64_t* sizes, int nops, const int64_t* const* strides,
                       const int64_t* element_sizes);

// Runs `loop` over the whole geometry in parallel chunks of `grain` elements.
void run_elementwise(const Geometry& g, char* const* base, InnerLoop loop, const void* params, int64_t grain = 32768);

// Runs `loop` over elements [begin, end) of the geometry's iteration order on this thread.
void run_elementwise_range(const Geometry& g, char* const* base, InnerLoop loop, const void* params, int64_t begin,
                           int64_t end);

}  // namespace ember::cpu
