// F::pixel_shuffle/pixel_unshuffle, F::unfold/fold, F::affine_grid and F::grid_sample with
// PyTorch's formulas (aten/src/ATen/native/PixelShuffle.cpp, Im2Col.cpp, AffineGridGenerator.cpp,
// GridSampler.h), composed of views, index_select/gather and index_add: gradients of any order
// for the inputs (and, through the interpolation weights, for grid_sample's grid).
#include <algorithm>
#include <cmath>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {
namespace {

// Shape checks shared by the pixel shuffles: input [*, C, H, W].
void check_image(const Tensor& input, int64_t factor, const char* op) {
  EMBER_CHECK(input.dim() >= 3, op, "expected an input [*, C, H, W] of at least 3 dims, got shape ", input.sizes());
  EMBER_CHECK(factor > 0, op, "the factor must be positive, got ", factor);
}

// The sliding blocks of unfold/fold over an image of `height` x `width` padded by `padding`:
// for each kernel offset (row-major) and block (row-major), the flat position it reads in
// the padded image [padded_height * padded_width].
struct Blocks {
  int64_t padded_height = 0, padded_width = 0, count = 0;
  Tensor positions;  // [kh * kw * count] int64
};

Blocks sliding_blocks(int64_t height, int64_t width, const ExpandingArray<2>& kernel, const ExpandingArray<2>& dilation,
                      const ExpandingArray<2>& padding, const ExpandingArray<2>& stride, const char* op) {
  for (size_t d = 0; d < 2; ++d) {
    EMBER_CHECK(kernel[d] > 0 && dilation[d] > 0 && stride[d] > 0 && padding[d] >= 0, op,
                "kernel_size, dilation and stride must be positive and padding non-negative, got kernel_size ",
                kernel[d], ", dilation ", dilation[d], ", stride ", stride[d], ", padding ", padding[d]);
  }
  Blocks blocks;
  blocks.padded_height = height + 2 * padding[0];
  blocks.padded_width = width + 2 * padding[1];
  const int64_t span_h = dilation[0] * (kernel[0] - 1) + 1, span_w = dilation[1] * (kernel[1] - 1) + 1;
  const int64_t rows = (blocks.padded_height - span_h) / stride[0] + 1;
  const int64_t cols = (blocks.padded_width - span_w) / stride[1] + 1;
  EMBER_CHECK(blocks.padded_height >= span_h && blocks.padded_width >= span_w && rows > 0 && cols > 0, op,
              "the kernel (", span_h, " x ", span_w, " with dilation) does not fit the padded input ",
              blocks.padded_height, " x ", blocks.padded_width);
  blocks.count = rows * cols;
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(kernel[0] * kernel[1] * blocks.count));
  for (int64_t ki = 0; ki < kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < kernel[1]; ++kj) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          positions.push_back((r * stride[0] + ki * dilation[0]) * blocks.padded_width + c * stride[1] +
                              kj * dilation[1]);
        }
      }
    }
  }
  blocks.positions = tensor(positions, kInt64).reshape({static_cast<int64_t>(positions.size())});
  return blocks;
}

// PyTorch's reflect_coordinates followed by clipping into [0, size - 1].
Tensor reflect(const Tensor& coordinate, int64_t size, bool align_corners) {
  const double twice_low = align_corners ? 0 : -1;
  const double twice_high = align_corners ? 2.0 * static_cast<double>(size - 1) : 2.0 * static_cast<double>(size) - 1;
  if (twice_low == twice_high) return zeros_like(coordinate);
  const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  Tensor distance = (coordinate - low).abs();
  Tensor extra = distance.fmod(span);
  Tensor flips = (distance / span).floor();
  Tensor even = flips.remainder(2) == 0;
  Tensor reflected = where(even, extra + low, span - extra + low);
  return reflected.clamp(0, static_cast<double>(size - 1));
}

// A normalised grid coordinate in [-1, 1] to a pixel coordinate of a dim of `size`.
Tensor unnormalize(const Tensor& coordinate, int64_t size, bool align_corners) {
  const double n = static_cast<double>(size);
  return align_corners ? (coordinate + 1) / 2 * (n - 1) : ((coordinate + 1) * n - 1) / 2;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options) {
  const char* op = "pixel_shuffle";
  const int64_t r = options.upscale_factor();
  check_image(input, r, op);
  const int64_t channels = input.size(-3), height = input.size(-2), width = input.size(-1);
  EMBER_CHECK(channels % (r * r) == 0, op, "the channel count ", channels, " must be divisible by upscale_factor^2 = ",
              r * r);
  std::vector<int64_t> batch(input.sizes().begin(), input.sizes().end() - 3);
  const int64_t b = static_cast<int64_t>(batch.size());
  std::vector<int64_t> split = batch;
  split.insert(split.end(), {channels / (r * r), r, r, height, width});
  std::vector<int64_t> order;
  for (int64_t d = 0; d < b; ++d) order.push_back(d);
  order.insert(order.end(), {b, b + 3, b + 1, b + 4, b + 2});
  std::vector<int64_t> out = batch;
  out.insert(out.end(), {channels / (r * r), height * r, width * r});
  return input.reshape(split).permute(order).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options) {
  const char* op = "pixel_unshuffle";
  const int64_t r = options.downscale_factor();
  check_image(input, r, op);
  const int64_t channels = input.size(-3), height = input.size(-2), width = input.size(-1);
  EMBER_CHECK(height % r == 0 && width % r == 0, op, "height ", height, " and width ", width,
              " must be divisible by downscale_factor ", r);
  std::vector<int64_t> batch(input.sizes().begin(), input.sizes().end() - 3);
  const int64_t b = static_cast<int64_t>(batch.size());
  std::vector<int64_t> split = batch;
  split.insert(split.end(), {channels, height / r, r, width / r, r});
  std::vector<int64_t> order;
  for (int64_t d = 0; d < b; ++d) order.push_back(d);
  order.insert(order.end(), {b, b + 2, b + 4, b + 1, b + 3});
  std::vector<int64_t> out = batch;
  out.insert(out.end(), {channels * r * r, height / r, width / r});
  return input.reshape(split).permute(order).reshape(out);
}

Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options) {
  const char* op = "unfold";
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, op, "expected an input [N, C, H, W] or unbatched [C, H, W], got ",
              "shape ", input.sizes());
  Tensor x = input.dim() == 4 ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  const auto& padding = options.padding();
  Blocks blocks = sliding_blocks(x.size(2), x.size(3), options.kernel_size(), options.dilation(), padding,
                                 options.stride(), op);
  Tensor padded = pad(x, PadFuncOptions({padding[1], padding[1], padding[0], padding[0]}));
  const int64_t window = options.kernel_size()[0] * options.kernel_size()[1];
  Tensor out = padded.reshape({n, c, blocks.padded_height * blocks.padded_width})
                   .index_select(2, blocks.positions)
                   .reshape({n, c * window, blocks.count});
  return input.dim() == 4 ? out : out.squeeze(0);
}

Tensor fold(const Tensor& input, const FoldFuncOptions& options) {
  const char* op = "fold";
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, op,
              "expected an input [N, C * kernel positions, L] or unbatched [C * kernel positions, L], got shape ",
              input.sizes());
  Tensor x = input.dim() == 3 ? input : input.unsqueeze(0);
  const auto& output_size = options.output_size();
  const auto& padding = options.padding();
  Blocks blocks = sliding_blocks(output_size[0], output_size[1], options.kernel_size(), options.dilation(), padding,
                                 options.stride(), op);
  const int64_t window = options.kernel_size()[0] * options.kernel_size()[1];
  const int64_t n = x.size(0);
  EMBER_CHECK(x.size(1) % window == 0, op, "dim 1 of the input (", x.size(1),
              ") must be divisible by the kernel's size (", window, ")");
  EMBER_CHECK(x.size(2) == blocks.count, op, "the input has ", x.size(2), " blocks but output_size ", output_size[0],
              " x ", output_size[1], " with these options makes ", blocks.count);
  const int64_t c = x.size(1) / window;
  Tensor summed = zeros({n, c, blocks.padded_height * blocks.padded_width}, x.scalar_type())
                      .index_add(2, blocks.positions, x.reshape({n, c, window * blocks.count}))
                      .reshape({n, c, blocks.padded_height, blocks.padded_width})
                      .narrow(2, padding[0], output_size[0])
                      .narrow(3, padding[1], output_size[1]);
  return input.dim() == 3 ? summed : summed.squeeze(0);
}

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  const char* op = "affine_grid";
  EMBER_CHECK(theta.is_floating_point(), op, "Expected theta to have floating point type, but got ",
              dtype_name(theta.scalar_type()));
  if (size.size() == 4) {
    EMBER_CHECK(theta.dim() == 3 && theta.size(-2) == 2 && theta.size(-1) == 3, op,
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size ", size, ". Got ", theta.sizes(),
                ".");
  } else if (size.size() == 5) {
    EMBER_CHECK(theta.dim() == 3 && theta.size(-2) == 3 && theta.size(-1) == 4, op,
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size ", size, ". Got ", theta.sizes(),
                ".");
  } else {
    EMBER_FAIL(op, "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size ",
               size);
  }
  EMBER_CHECK(*std::min_element(size.begin(), size.end()) > 0, op, "Expected non-zero, positive output size. Got ",
              size);
  EMBER_CHECK(theta.size(0) == size[0], op, "theta has ", theta.size(0), " matrices but size asks for a batch of ",
              size[0]);
  // The pixel centres of each spatial dim in [-1, 1] (the corner pixels' centres at -1 and 1
  // with align_corners; otherwise shrunk by (steps - 1) / steps).
  auto steps = [&](int64_t count) {
    if (count <= 1) return zeros({count}, theta.scalar_type());
    Tensor line = linspace(-1, 1, count, theta.scalar_type());
    return align_corners ? line : line * (static_cast<double>(count - 1) / static_cast<double>(count));
  };
  const int64_t spatial = static_cast<int64_t>(size.size()) - 2;
  std::vector<int64_t> grid_shape(size.begin() + 2, size.end());
  int64_t positions = 1;
  for (int64_t s : grid_shape) positions *= s;
  // Base grid [positions, spatial + 1] of (x, y[, z], 1), x the fastest-varying (last) dim.
  std::vector<Tensor> columns;
  for (int64_t k = 0; k < spatial; ++k) {
    const int64_t dim = spatial - 1 - k;  // x walks the last spatial dim
    std::vector<int64_t> view(static_cast<size_t>(spatial), 1);
    view[static_cast<size_t>(dim)] = grid_shape[static_cast<size_t>(dim)];
    columns.push_back(steps(grid_shape[static_cast<size_t>(dim)]).reshape(view).expand(grid_shape).reshape({positions}));
  }
  columns.push_back(ones({positions}, theta.scalar_type()));
  Tensor base = stack(columns, 1);
  Tensor grid = matmul(base.unsqueeze(0), theta.transpose(1, 2));  // [N, positions, spatial]
  std::vector<int64_t> out_shape = {size[0]};
  out_shape.insert(out_shape.end(), grid_shape.begin(), grid_shape.end());
  out_shape.push_back(spatial);
  return grid.reshape(out_shape);
}

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options) {
  const char* op = "grid_sample";
  EMBER_CHECK(input.dim() == 4, op, "expected an input [N, C, H, W] (5-D volumes are not supported), got shape ",
              input.sizes());
  EMBER_CHECK(grid.dim() == 4 && grid.size(0) == input.size(0) && grid.size(3) == 2, op,
              "expected a grid [N, H_out, W_out, 2] with the input's batch size ", input.size(0), ", got shape ",
              grid.sizes());
  EMBER_CHECK(input.is_floating_point() && grid.is_floating_point(), op, "expected floating-point input and grid");
  const bool align_corners = options.align_corners().value_or(false);
  const int64_t n = input.size(0), c = input.size(1), height = input.size(2), width = input.size(3);
  const int64_t out_h = grid.size(1), out_w = grid.size(2);
  Tensor ix = unnormalize(grid.select(3, 0), width, align_corners);   // [N, H_out, W_out]
  Tensor iy = unnormalize(grid.select(3, 1), height, align_corners);
  if (std::holds_alternative<enumtype::kBorder>(options.padding_mode())) {
    ix = ix.clamp(0, static_cast<double>(width - 1));
    iy = iy.clamp(0, static_cast<double>(height - 1));
  } else if (std::holds_alternative<enumtype::kReflection>(options.padding_mode())) {
    ix = reflect(ix, width, align_corners);
    iy = reflect(iy, height, align_corners);
  }
  Tensor flat_input = input.reshape({n, c, height * width});
  // The input at integer pixel (x, y), zero outside the image.
  auto sample = [&](const Tensor& x, const Tensor& y) {
    Tensor inside = (x >= 0).logical_and(x <= width - 1).logical_and(y >= 0).logical_and(y <= height - 1);
    Tensor position = (y.clamp(0, static_cast<double>(height - 1)) * width + x.clamp(0, static_cast<double>(width - 1)))
                          .to(kInt64)
                          .reshape({n, 1, out_h * out_w})
                          .expand({n, c, out_h * out_w});
    Tensor values = flat_input.gather(2, position).reshape({n, c, out_h, out_w});
    return values * inside.unsqueeze(1).to(input.scalar_type());
  };
  if (std::holds_alternative<enumtype::kNearest>(options.mode())) return sample(ix.round(), iy.round());
  Tensor x0 = ix.floor().detach(), y0 = iy.floor().detach();
  Tensor wx1 = (ix - x0).unsqueeze(1), wy1 = (iy - y0).unsqueeze(1);
  Tensor wx0 = 1 - wx1, wy0 = 1 - wy1;
  return sample(x0, y0) * wx0 * wy0 + sample(x0 + 1, y0) * wx1 * wy0 + sample(x0, y0 + 1) * wx0 * wy1 +
         sample(x0 + 1, y0 + 1) * wx1 * wy1;
}

}  // namespace ember::nn::functional
