#include "cpu/rms_norm.h"

#include <algorithm>
#include <vector>

#include "cpu/parallel.h"

namespace ember::cpu {
namespace {

// Rows per chunk: about kChunkElements elements, but never more than kMaxChunks chunks, so
// the backward's per-chunk weight-gradient partials stay small. Depends on the shape only.
constexpr int64_t kChunkElements = 16384;
constexpr int64_t kMaxChunks = 64;

int64_t chunk_rows(int64_t rows, int64_t width) {
  const int64_t by_size = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, width));
  return std::max(by_size, (rows + kMaxChunks - 1) / kMaxChunks);
}

int64_t acc_size(ScalarType dtype) { return dtype == kFloat64 ? 8 : 4; }

}  // namespace

void rms_norm_forward(ScalarType dtype, const void* x, const void* weight, void* y, void* rstd, int64_t rows,
                      int64_t width, double eps) {
  if (rows == 0) return;
  const int64_t item = static_cast<int64_t>(element_size(dtype)), acc = acc_size(dtype);
  auto kernel = EMBER_KERNEL(rms_norm_rows);
  parallel_for(0, rows, chunk_rows(rows, width), [&](int64_t lo, int64_t hi) {
    kernel(dtype, static_cast<const char*>(x) + lo * width * item, weight, static_cast<char*>(y) + lo * width * item,
           static_cast<char*>(rstd) + lo * acc, hi - lo, width, eps);
  });
}

void rms_norm_backward(ScalarType dtype, const void* grad_y, const void* x, const void* weight, const void* rstd,
                       void* grad_x, double* grad_weight, int64_t rows, int64_t width) {
  if (grad_weight) std::fill(grad_weight, grad_weight + width, 0.0);
  if (rows == 0) return;
  const int64_t item = static_cast<int64_t>(element_size(dtype)), acc = acc_size(dtype);
  const int64_t grain = chunk_rows(rows, width);
  std::vector<double> partials(grad_weight ? static_cast<size_t>(num_chunks(0, rows, grain) * width) : 0, 0.0);
  auto kernel = EMBER_KERNEL(rms_norm_backward_rows);
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    const int64_t at = lo * width * item;
    kernel(dtype, static_cast<const char*>(grad_y) + at, static_cast<const char*>(x) + at, weight,
           static_cast<const char*>(rstd) + lo * acc, grad_x ? static_cast<char*>(grad_x) + at : nullptr,
           grad_weight ? partials.data() + lo / grain * width : nullptr, hi - lo, width);
  });
  for (size_t at = 0; at < partials.size(); at += static_cast<size_t>(width))
    for (int64_t j = 0; j < width; ++j) grad_weight[j] += partials[at + static_cast<size_t>(j)];
}

}  // namespace ember::cpu
