// F::max_pool1d/2d/3d, avg_pool*, adaptive_*: options onto ember's pooling ops.
#include <array>
#include <vector>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return std::get<0>(max_pool1d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return ember::max_pool1d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                        options.dilation(), options.ceil_mode());
}
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options) {
  return ember::avg_pool1d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                           options.count_include_pad());
}
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options) {
  return ember::adaptive_avg_pool1d(input, options.output_size());
}
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options) {
  return ember::adaptive_max_pool1d(input, options.output_size());
}

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return std::get<0>(max_pool2d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return ember::max_pool2d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                        options.dilation(), options.ceil_mode());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
  return ember::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                           options.count_include_pad(), options.divisor_override());
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options) {
  return ember::adaptive_avg_pool2d(input, options.output_size());
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options) {
  return ember::adaptive_max_pool2d(input, options.output_size());
}

Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options) {
  return std::get<0>(max_pool3d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& options) {
  return ember::max_pool3d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                        options.dilation(), options.ceil_mode());
}
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options) {
  return ember::avg_pool3d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                           options.count_include_pad(), options.divisor_override());
}
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options) {
  return ember::adaptive_avg_pool3d(input, options.output_size());
}
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options) {
  return ember::adaptive_max_pool3d(input, options.output_size());
}

}  // namespace ember::nn::functional

// ---- power-average, unpooling and fractional pooling ------------------------------------------

namespace ember::nn::functional {
namespace {

// PyTorch's lp_pool: avg_pool of x^p, sign-preserving relu, times the window size, to 1/p.
Tensor lp_pool_from_average(const Tensor& average, double norm_type, int64_t window) {
  return (average.sign() * average.abs().relu()).mul(static_cast<double>(window)).pow(1.0 / norm_type);
}

// Batched view [N, C, *spatial] of an input of D spatial dims (unbatched [C, *spatial]
// gets N = 1); throws naming `op` for other ranks.
Tensor batched(const Tensor& input, int64_t spatial_dims, const char* op) {
  EMBER_CHECK(input.dim() == spatial_dims + 1 || input.dim() == spatial_dims + 2, op, "expected an input [N, C, ",
              spatial_dims, " spatial dims] or unbatched [C, ", spatial_dims, " spatial dims], got shape ",
              input.sizes());
  return input.dim() == spatial_dims + 2 ? input : input.unsqueeze(0);
}

template <size_t D>
Tensor max_unpool(const Tensor& input, const Tensor& indices, const MaxUnpoolFuncOptions<D>& options, const char* op) {
  const int64_t spatial = static_cast<int64_t>(D);
  EMBER_CHECK(indices.sizes() == input.sizes(), op, "indices of shape ", indices.sizes(),
              " must have the input's shape ", input.sizes());
  EMBER_CHECK(is_integral(indices.scalar_type()), op, "indices must be an integer tensor, got ",
              dtype_name(indices.scalar_type()));
  Tensor x = batched(input, spatial, op);
  std::vector<int64_t> out_spatial;
  for (size_t d = 0; d < D; ++d) {
    const int64_t in = x.size(static_cast<int64_t>(2 + d));
    out_spatial.push_back((in - 1) * options.stride()[d] - 2 * options.padding()[d] + options.kernel_size()[d]);
  }
  if (options.output_size()) {
    const std::vector<int64_t>& given = *options.output_size();
    EMBER_CHECK(given.size() == D || given.size() == D + 2 || given.size() == D + 1, op, "output_size ", given,
                " must have ", D, " spatial values (or the whole output shape)");
    out_spatial.assign(given.end() - static_cast<std::ptrdiff_t>(D), given.end());
  }
  int64_t plane = 1;
  for (int64_t s : out_spatial) plane *= s;
  const int64_t n = x.size(0), c = x.size(1);
  Tensor flat_indices = batched(indices, spatial, op).reshape({n, c, -1}).to(kInt64);
  EMBER_CHECK(flat_indices.numel() == 0 || (flat_indices.min().item<int64_t>() >= 0 &&
                                           flat_indices.max().item<int64_t>() < plane),
              op, "found an index outside the output of ", plane, " positions per plane (output size ", out_spatial,
              ")");
  Tensor out = zeros({n, c, plane}, x.scalar_type()).scatter(2, flat_indices, x.reshape({n, c, -1}));
  std::vector<int64_t> shape = {n, c};
  shape.insert(shape.end(), out_spatial.begin(), out_spatial.end());
  out = out.reshape(shape);
  return input.dim() == spatial + 2 ? out : out.squeeze(0);
}

// PyTorch's generate_intervals: the window starts along one dim for a sample u in [0, 1).
std::vector<int64_t> fractional_starts(double u, int64_t input_size, int64_t output_size, int64_t pool_size) {
  std::vector<int64_t> starts(static_cast<size_t>(output_size));
  if (output_size > 1) {
    const double alpha = static_cast<double>(input_size - pool_size) / static_cast<double>(output_size - 1);
    for (int64_t i = 0; i < output_size - 1; ++i) {
      starts[static_cast<size_t>(i)] = static_cast<int64_t>((static_cast<double>(i) + u) * alpha) -
                                       static_cast<int64_t>(u * alpha);
    }
  }
  starts[static_cast<size_t>(output_size - 1)] = input_size - pool_size;
  return starts;
}

template <size_t D>
std::tuple<Tensor, Tensor> fractional_max_pool(const Tensor& input, const FractionalMaxPoolOptions<D>& options,
                                               const char* op) {
  const int64_t spatial = static_cast<int64_t>(D);
  Tensor x = batched(input, spatial, op);
  EMBER_CHECK(options.output_size().has_value() != options.output_ratio().has_value(), op,
              "exactly one of output_size and output_ratio must be set");
  const int64_t n = x.size(0), c = x.size(1);
  std::vector<int64_t> in_size, out_size, kernel;
  for (size_t d = 0; d < D; ++d) {
    const int64_t in = x.size(static_cast<int64_t>(2 + d));
    const int64_t k = options.kernel_size()[d];
    const int64_t out = options.output_size() ? (*options.output_size())[d]
                                              : static_cast<int64_t>(static_cast<double>(in) *
                                                                     (*options.output_ratio())[d]);
    EMBER_CHECK(k > 0 && out > 0 && out + k - 1 <= in, op, "output size ", out, " with kernel size ", k,
                " is too large for input size ", in, " (dim ", d, ")");
    in_size.push_back(in);
    out_size.push_back(out);
    kernel.push_back(k);
  }
  Tensor samples = options._random_samples();
  if (samples.defined()) {
    EMBER_CHECK(samples.dim() == 3 && samples.size(0) == n && samples.size(1) == c && samples.size(2) == spatial,
                op, "_random_samples must have shape [", n, ", ", c, ", ", spatial, "], got ", samples.sizes());
  } else {
    samples = empty({n, c, spatial}, kFloat64);
    samples.uniform_(0, 1);
  }
  Tensor u = samples.to(kFloat64).contiguous();
  const double* u_data = u.data_ptr<double>();
  int64_t out_positions = 1, window = 1, plane = 1;
  for (size_t d = 0; d < D; ++d) {
    out_positions *= out_size[d];
    window *= kernel[d];
    plane *= in_size[d];
  }
  // For each (sample, channel, output position, window offset), the flat input position read.
  std::vector<int64_t> gather_index(static_cast<size_t>(n * c * out_positions * window));
  size_t next = 0;
  for (int64_t b = 0; b < n * c; ++b) {
    std::array<std::vector<int64_t>, D> starts;
    for (size_t d = 0; d < D; ++d) starts[d] = fractional_starts(u_data[b * spatial + static_cast<int64_t>(d)],
                                                                 in_size[d], out_size[d], kernel[d]);
    for (int64_t o = 0; o < out_positions; ++o) {
      for (int64_t w = 0; w < window; ++w) {
        int64_t flat = 0, o_rest = o, w_rest = w, o_div = out_positions, w_div = window;
        for (size_t d = 0; d < D; ++d) {
          o_div /= out_size[d];
          w_div /= kernel[d];
          const int64_t position = starts[d][static_cast<size_t>(o_rest / o_div)] + w_rest / w_div;
          o_rest %= o_div;
          w_rest %= w_div;
          flat = flat * in_size[d] + position;
        }
        gather_index[next++] = flat;
      }
    }
  }
  Tensor index = tensor(gather_index, kInt64).reshape({n, c, out_positions * window});
  Tensor windows = x.reshape({n, c, plane}).gather(2, index).reshape({n, c, out_positions, window});
  auto [values, arg] = windows.max(3);
  Tensor indices = index.reshape({n, c, out_positions, window}).gather(3, arg.unsqueeze(3)).squeeze(3);
  std::vector<int64_t> shape = {n, c};
  shape.insert(shape.end(), out_size.begin(), out_size.end());
  values = values.reshape(shape);
  indices = indices.reshape(shape);
  if (input.dim() == spatial + 1) return {values.squeeze(0), indices.squeeze(0)};
  return {values, indices};
}

}  // namespace

Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& options) {
  Tensor average = ember::avg_pool1d(input.pow(options.norm_type()), options.kernel_size(), options.stride(), 0,
                                     options.ceil_mode());
  return lp_pool_from_average(average, options.norm_type(), options.kernel_size()[0]);
}

Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& options) {
  Tensor average = ember::avg_pool2d(input.pow(options.norm_type()), options.kernel_size(), options.stride(), 0,
                                     options.ceil_mode());
  return lp_pool_from_average(average, options.norm_type(), options.kernel_size()[0] * options.kernel_size()[1]);
}

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& options) {
  return max_unpool<1>(input, indices, options, "max_unpool1d");
}
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& options) {
  return max_unpool<2>(input, indices, options, "max_unpool2d");
}
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& options) {
  return max_unpool<3>(input, indices, options, "max_unpool3d");
}

Tensor fractional_max_pool2d(const Tensor& input, const FractionalMaxPool2dFuncOptions& options) {
  return std::get<0>(fractional_max_pool<2>(input, options, "fractional_max_pool2d"));
}
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input,
                                                              const FractionalMaxPool2dFuncOptions& options) {
  return fractional_max_pool<2>(input, options, "fractional_max_pool2d");
}
Tensor fractional_max_pool3d(const Tensor& input, const FractionalMaxPool3dFuncOptions& options) {
  return std::get<0>(fractional_max_pool<3>(input, options, "fractional_max_pool3d"));
}
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input,
                                                              const FractionalMaxPool3dFuncOptions& options) {
  return fractional_max_pool<3>(input, options, "fractional_max_pool3d");
}

}  // namespace ember::nn::functional
