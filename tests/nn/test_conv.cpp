// Conv1d/2d/3d and F::pad: forward against a direct float64 convolution, gradients by
// gradcheck, every padding option and mode, odd layouts, and the argument errors.
#include <algorithm>
#include <iostream>

#include "cpu/conv_onednn.h"
#include "ember/backends.h"
#include "vision_reference.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// The kernel-level shape of a 2-d convolution of a [batch, in, height, width] input with a
// square kernel, padding and stride (what the oneDNN checks below ask about).
cpu::ConvShape conv2d_shape(int64_t batch, int64_t in, int64_t out, int64_t height, int64_t width, int64_t kernel,
                            int64_t pad, int64_t stride = 1) {
  cpu::ConvShape s;
  s.batch = batch;
  s.in_channels = in;
  s.out_channels = out;
  s.in[1] = height;
  s.in[2] = width;
  s.out[1] = (height + 2 * pad - kernel) / stride + 1;
  s.out[2] = (width + 2 * pad - kernel) / stride + 1;
  s.kernel[1] = s.kernel[2] = kernel;
  s.pad[1] = s.pad[2] = pad;
  s.stride[1] = s.stride[2] = stride;
  return s;
}

// A convolution of an input and weight of these sizes with a bias of out_channels, as a
// function of the three (the cases of the tests that compare whole forward + backward runs).
struct ConvCase {
  const char* name;
  std::vector<int64_t> x_sizes, w_sizes;
  int64_t out_channels;
  std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> conv;
};

// Runs F::conv2d with the module-free options and compares with the reference.
::testing::AssertionResult conv2d_matches(const Tensor& x, const Tensor& w, const Tensor& b,
                                          const F::Conv2dFuncOptions& options, const ConvArgs& args) {
  std::vector<int64_t> sizes;
  const auto expected = conv_reference(x, w, b, args, sizes);
  F::Conv2dFuncOptions o = options;
  o.bias(b);
  const Tensor y = F::conv2d(x, w, o);
  if (y.sizes() != sizes) return ::testing::AssertionFailure() << "shape " << IntArrayRef(y.sizes())
                                                               << ", expected " << IntArrayRef(sizes);
  return all_close(y, expected);
}

TEST(Conv2d, ForwardMatchesDirectConvolution) {
  const Tensor x = uniform({2, 4, 7, 6}, 1), b = uniform({6}, 3);
  const Tensor w = uniform({6, 4, 3, 3}, 2), w_groups = uniform({6, 2, 3, 2}, 4);
  EXPECT_TRUE(conv2d_matches(x, w, b, F::Conv2dFuncOptions().padding(1), {{1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_TRUE(conv2d_matches(x, w, Tensor(), F::Conv2dFuncOptions(), {{1, 1}, {0, 0}, {0, 0}, {1, 1}}));
  // Stride, dilation, per-dim padding and groups together, with a non-square kernel.
  EXPECT_TRUE(conv2d_matches(x, w_groups, b,
                             F::Conv2dFuncOptions().stride({2, 1}).padding({2, 1}).dilation({2, 3}).groups(2),
                             {{2, 1}, {2, 1}, {2, 1}, {2, 3}, 2}));
  // Depthwise: groups == channels.
  EXPECT_TRUE(conv2d_matches(x, uniform({8, 1, 3, 3}, 5), Tensor(), F::Conv2dFuncOptions().groups(4).stride(3),
                             {{3, 3}, {0, 0}, {0, 0}, {1, 1}, 4}));
  // 1x1 kernels take the im2col-free path, with and without groups.
  EXPECT_TRUE(conv2d_matches(x, uniform({6, 4, 1, 1}, 6), b, F::Conv2dFuncOptions(), {{1, 1}, {0, 0}, {0, 0}, {1, 1}}));
  EXPECT_TRUE(conv2d_matches(x, uniform({6, 2, 1, 1}, 7), b, F::Conv2dFuncOptions().groups(2),
                             {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 2}));
  // A 1x1 kernel with stride or padding reads through im2col.
  EXPECT_TRUE(conv2d_matches(x, uniform({6, 4, 1, 1}, 8), b, F::Conv2dFuncOptions().stride(2).padding(1),
                             {{2, 2}, {1, 1}, {1, 1}, {1, 1}}));
}

TEST(Conv2d, SameAndValidPadding) {
  const Tensor x = uniform({2, 3, 6, 7}, 10), b = uniform({4}, 11);
  // Odd kernels pad evenly; even kernels put the extra one after, as PyTorch.
  EXPECT_TRUE(conv2d_matches(x, uniform({4, 3, 3, 5}, 12), b, F::Conv2dFuncOptions().padding(kSame),
                             {{1, 1}, {1, 2}, {1, 2}, {1, 1}}));
  EXPECT_TRUE(conv2d_matches(x, uniform({4, 3, 4, 2}, 13), b, F::Conv2dFuncOptions().padding(kSame),
                             {{1, 1}, {1, 0}, {2, 1}, {1, 1}}));
  // Dilation 2 with an even kernel: 2 * (4 - 1) = 6 in all, 3 and 3; (2 - 1) * 3 = 3: 1 and 2.
  EXPECT_TRUE(conv2d_matches(x, uniform({4, 3, 4, 2}, 14), b, F::Conv2dFuncOptions().padding(kSame).dilation({2, 3}),
                             {{1, 1}, {3, 1}, {3, 2}, {2, 3}}));
  const Tensor y = F::conv2d(x, uniform({4, 3, 4, 2}, 13), F::Conv2dFuncOptions().padding(kSame));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 4, 6, 7}));
  EXPECT_TRUE(conv2d_matches(x, uniform({4, 3, 3, 3}, 15), b, F::Conv2dFuncOptions().padding(kValid),
                             {{1, 1}, {0, 0}, {0, 0}, {1, 1}}));
}

TEST(Conv2d, NonContiguousUnbatchedAndEmptyInputs) {
  const Tensor w = uniform({5, 3, 2, 3}, 20), b = uniform({5}, 21);
  const ConvArgs args{{1, 2}, {1, 1}, {1, 1}, {1, 1}};
  const auto options = F::Conv2dFuncOptions().stride({1, 2}).padding(1);
  // A channels-last layout viewed as NCHW, and a slice with strides in every dim.
  const Tensor permuted = uniform({2, 6, 5, 3}, 22).permute({0, 3, 1, 2});
  EXPECT_FALSE(permuted.is_contiguous());
  EXPECT_TRUE(conv2d_matches(permuted, w, b, options, args));
  const Tensor sliced = uniform({3, 6, 9, 8}, 23).slice(1, 0, 6, 2).slice(2, 1, 8).slice(3, 0, 8, 2);
  EXPECT_TRUE(conv2d_matches(sliced, w, b, options, args));
  EXPECT_TRUE(conv2d_matches(sliced, w.transpose(2, 3).contiguous().transpose(2, 3), b, options, args));
  // Unbatched [C, H, W] gives [O, H', W'].
  const Tensor single = uniform({3, 5, 6}, 24);
  std::vector<int64_t> sizes;
  const Tensor y = F::conv2d(single, w, F::Conv2dFuncOptions(options).bias(b));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 6, 3}));
  EXPECT_TRUE(all_close(y, conv_reference(single.unsqueeze(0), w, b, args, sizes)));
  // An empty batch gives an empty output, and empty gradients.
  const Tensor empty_x = zeros({0, 3, 5, 6}, kFloat64).requires_grad_(true), wl = leaf(w);
  const Tensor out = F::conv2d(empty_x, wl, options);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{0, 5, 6, 3}));
  out.sum().backward();
  EXPECT_EQ(empty_x.grad().sizes(), empty_x.sizes());
  EXPECT_TRUE(all_close(wl.grad(), std::vector<double>(static_cast<size_t>(w.numel()), 0.0)));
}

TEST(Conv2d, Float32MatchesFloat64Reference) {
  const Tensor x = uniform({2, 8, 9, 9}, 30, -1, 1, kFloat32), w = uniform({16, 4, 3, 3}, 31, -1, 1, kFloat32);
  const Tensor b = uniform({16}, 32, -1, 1, kFloat32);
  std::vector<int64_t> sizes;
  const auto expected = conv_reference(x, w, b, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, sizes);
  const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1).groups(2));
  EXPECT_EQ(y.scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(y, expected, {1e-5, 1e-5}));
}

// float32 convolutions that are not pointwise run on oneDNN's direct kernels (Note
// [Convolution on oneDNN]): the output against the direct float64 convolution and both
// gradients against the float64 path (im2col + GEMM, gradchecked below), for every shape
// class: padding, stride, dilation, asymmetric options, groups, depthwise, channel counts
// that are not multiples of the kernels' blocks, odd sizes, 1-d and 3-d, non-contiguous input.
TEST(Conv2d, Float32DirectKernelsMatchFloat64) {
  struct Case {
    std::vector<int64_t> x_sizes, w_sizes, stride, padding, dilation;
    int64_t groups;
    bool bias, channels_last;
  };
  const std::vector<Case> cases = {
      {{2, 16, 9, 11}, {24, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, false},
      {{3, 5, 13, 10}, {7, 5, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false, false},
      {{2, 8, 12, 12}, {8, 8, 3, 2}, {1, 2}, {2, 1}, {2, 3}, 1, true, false},
      {{2, 8, 7, 7}, {12, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, true, false},
      {{2, 16, 10, 9}, {16, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 16, false, false},
      {{2, 16, 9, 9}, {32, 16, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, true, false},
      {{1, 32, 8, 8}, {32, 32, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, false, false},
      {{2, 6, 8, 9}, {10, 6, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, true},
      {{2, 6, 17}, {5, 6, 3}, {2}, {1}, {1}, 1, true, false},
      {{2, 4, 5, 6, 7}, {6, 4, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, true, false},
      // Weight-gradient chunks of nine and ten images (two plans).
      {{19, 4, 5, 5}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, false},
  };
  uint32_t seed = 200;
  for (const Case& c : cases) {
    SCOPED_TRACE("input " + ::testing::PrintToString(c.x_sizes) + " weight " + ::testing::PrintToString(c.w_sizes));
    Tensor x64 = uniform(c.x_sizes, seed++);
    if (c.channels_last) x64 = uniform({c.x_sizes[0], c.x_sizes[2], c.x_sizes[3], c.x_sizes[1]}, seed++).permute({0, 3, 1, 2});
    const Tensor w64 = uniform(c.w_sizes, seed++), b64 = c.bias ? uniform({c.w_sizes[0]}, seed++) : Tensor();
    const ConvArgs args{c.stride, c.padding, c.padding, c.dilation, c.groups};
    std::vector<int64_t> sizes;
    const auto expected = conv_reference(x64, w64, b64, args, sizes);
    const Tensor r64 = uniform(sizes, seed++);
    auto run = [&](ScalarType dtype) {
      const Tensor x = x64.detach().to(dtype).requires_grad_(true), w = w64.to(dtype).requires_grad_(true);
      const Tensor b = c.bias ? b64.to(dtype).requires_grad_(true) : Tensor();
      const Tensor y = ember::convolution(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      (y * r64.to(dtype)).sum().backward();
      return std::vector<Tensor>{y, x.grad(), w.grad(), c.bias ? b.grad() : Tensor()};
    };
    const auto f32 = run(kFloat32), f64 = run(kFloat64);
    EXPECT_EQ(f32[0].sizes(), sizes);
    EXPECT_TRUE(all_close(f32[0], expected, {1e-5, 1e-5}));
    EXPECT_TRUE(all_close(f32[1], values(f64[1]), {1e-5, 1e-5})) << "grad input";
    EXPECT_TRUE(all_close(f32[2], values(f64[2]), {1e-5, 1e-5})) << "grad weight";
    if (c.bias) {
      EXPECT_TRUE(all_close(f32[3], values(f64[3]), {1e-5, 1e-5})) << "grad bias";
    }
  }
#if defined(__x86_64__)
  // On x86-64 oneDNN has a direct kernel for these shapes: the cases above ran it.
  EXPECT_TRUE(cpu::onednn_conv_fits(conv2d_shape(2, 16, 24, 9, 11, 3, 1)));
  EXPECT_FALSE(cpu::onednn_conv_fits(conv2d_shape(2, 16, 24, 9, 11, 1, 0))) << "pointwise convolutions stay a GEMM";
  // A grouped 3-d convolution (a rank-6 weight in oneDNN) runs there too.
  cpu::ConvShape grouped;
  grouped.batch = 2;
  grouped.in_channels = 32;
  grouped.out_channels = 32;
  grouped.groups = 2;
  for (int d = 0; d < 3; ++d) {
    grouped.in[d] = grouped.out[d] = 5 + d;
    grouped.kernel[d] = 3;
    grouped.pad[d] = 1;
  }
  EXPECT_TRUE(cpu::onednn_conv_fits(grouped)) << "grouped conv3d";
#endif
}

// conv_transpose runs the direct kernels' input gradient as its forward, with an output
// padding that makes oneDNN's padding after negative.
TEST(ConvTranspose2d, Float32DirectKernelsMatchFloat64) {
  const Tensor x64 = uniform({2, 16, 5, 6}, 230), w64 = uniform({16, 8, 3, 3}, 231), b64 = uniform({8}, 232);
  auto run = [&](ScalarType dtype) {
    const Tensor x = x64.to(dtype).requires_grad_(true), w = w64.to(dtype).requires_grad_(true);
    const Tensor y = ember::conv_transpose2d(x, w, b64.to(dtype), {2, 2}, {0, 1}, {1, 1}, 1, {1, 1});
    (y * y).sum().backward();
    return std::vector<Tensor>{y, x.grad(), w.grad()};
  };
  const auto f32 = run(kFloat32), f64 = run(kFloat64);
  EXPECT_EQ(f32[0].sizes(), f64[0].sizes());
  EXPECT_TRUE(all_close(f32[0], values(f64[0]), {1e-5, 1e-5}));
  EXPECT_TRUE(all_close(f32[1], values(f64[1]), {1e-4, 1e-4})) << "grad input";
  EXPECT_TRUE(all_close(f32[2], values(f64[2]), {1e-4, 1e-4})) << "grad weight";
}

TEST(Conv2d, ReducedPrecisionComputesInFloat32) {
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = uniform({2, 4, 6, 5}, 33, -1, 1, dtype).requires_grad_(true);
    const Tensor w = uniform({6, 2, 3, 3}, 34, -1, 1, dtype), b = uniform({6}, 35, -1, 1, dtype);
    std::vector<int64_t> sizes;
    const auto expected = conv_reference(x, w, b, {{1, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, sizes);
    const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride({1, 2}).padding(1).groups(2));
    EXPECT_EQ(y.scalar_type(), dtype);
    EXPECT_TRUE(all_close(y, expected));
    y.sum().backward();
    EXPECT_EQ(x.grad().scalar_type(), dtype);
  }
}

TEST(Conv2d, GradcheckOfEveryOption) {
  const Tensor x = uniform({2, 4, 5, 6}, 40), w = uniform({4, 2, 3, 2}, 41), b = uniform({4}, 42);
  auto check = [&](const Tensor& input, const Tensor& weight, F::Conv2dFuncOptions options) {
    return gradients_match(
        [options](const std::vector<Tensor>& t) {
          return F::conv2d(t[0], t[1], F::Conv2dFuncOptions(options).bias(t[2]));
        },
        {leaf(input), leaf(weight), leaf(b)}, tight_gradcheck());
  };
  EXPECT_TRUE(check(x, w, F::Conv2dFuncOptions().stride({2, 1}).padding({1, 2}).dilation({1, 2}).groups(2)));
  EXPECT_TRUE(check(x, w, F::Conv2dFuncOptions().padding(kSame).groups(2)));
  EXPECT_TRUE(check(x, uniform({4, 4, 1, 1}, 43), F::Conv2dFuncOptions()));
  EXPECT_TRUE(check(x.permute({0, 1, 3, 2}), uniform({4, 4, 2, 2}, 44), F::Conv2dFuncOptions().stride(2)));
}

TEST(Conv2d, ModulePaddingModesMatchReferenceAndGradcheck) {
  const Tensor x = uniform({2, 2, 5, 6}, 50);
  for (const std::string mode : {"zeros", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    auto options = nn::Conv2dOptions(2, 4, {3, 2}).padding({1, 2}).stride({2, 1}).dilation({1, 2});
    if (mode == "reflect") options.padding_mode(kReflect);
    if (mode == "replicate") options.padding_mode(kReplicate);
    if (mode == "circular") options.padding_mode(kCircular);
    nn::Conv2d conv(options);
    conv->to(kFloat64);
    std::vector<int64_t> sizes;
    const auto expected = conv_reference(x, conv->weight, conv->bias, {{2, 1}, {1, 2}, {1, 2}, {1, 2}, 1, mode}, sizes);
    const Tensor y = conv(x);
    EXPECT_EQ(y.sizes(), sizes);
    EXPECT_TRUE(all_close(y, expected));
    EXPECT_TRUE(
        gradients_match([&](const std::vector<Tensor>& t) { return conv(t[0]); }, {leaf(x)}, tight_gradcheck()));
  }
  // kSame with an even kernel in a padding mode pads asymmetrically too.
  nn::Conv2d same(nn::Conv2dOptions(2, 3, 4).padding(kSame).padding_mode(kReflect));
  same->to(kFloat64);
  std::vector<int64_t> sizes;
  const auto expected = conv_reference(x, same->weight, same->bias, {{1, 1}, {1, 1}, {2, 2}, {1, 1}, 1, "reflect"}, sizes);
  EXPECT_TRUE(all_close(same(x), expected));
}

TEST(Conv2d, ModuleParametersAndInitialisation) {
  manual_seed(0);
  nn::Conv2d conv(nn::Conv2dOptions(8, 16, 3).groups(2));
  EXPECT_EQ(conv->weight.sizes(), (std::vector<int64_t>{16, 4, 3, 3}));
  EXPECT_EQ(conv->bias.sizes(), (std::vector<int64_t>{16}));
  const auto names = conv->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
  // kaiming_uniform(a=sqrt(5)) and the bias both give U(+-1/sqrt(fan_in)), fan_in = 4 * 9.
  const double bound = 1 / std::sqrt(36.0);
  for (double v : values(conv->weight)) EXPECT_LE(std::abs(v), bound);
  for (double v : values(conv->bias)) EXPECT_LE(std::abs(v), bound);
  nn::Conv2d no_bias(nn::Conv2dOptions(3, 4, {1, 2}).bias(false));
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->named_parameters().size(), 1u);
  EXPECT_EQ(no_bias(uniform({1, 3, 4, 4}, 1, -1, 1, kFloat32)).sizes(), (std::vector<int64_t>{1, 4, 4, 3}));
}

TEST(Conv1dAnd3d, ShareTheImplementation) {
  const Tensor x1 = uniform({2, 4, 9}, 60), w1 = uniform({6, 2, 3}, 61), b1 = uniform({6}, 62);
  std::vector<int64_t> sizes;
  auto expected = conv_reference(x1, w1, b1, {{2}, {2}, {2}, {2}, 2}, sizes);
  Tensor y = F::conv1d(x1, w1, F::Conv1dFuncOptions().bias(b1).stride(2).padding(2).dilation(2).groups(2));
  EXPECT_EQ(y.sizes(), sizes);
  EXPECT_TRUE(all_close(y, expected));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& t) {
        return F::conv1d(t[0], t[1], F::Conv1dFuncOptions().bias(t[2]).padding(kSame).dilation(3));
      },
      {leaf(x1), leaf(uniform({3, 4, 2}, 63)), leaf(uniform({3}, 64))}, tight_gradcheck()));
  const Tensor x3 = uniform({2, 2, 4, 5, 3}, 65), w3 = uniform({3, 2, 2, 3, 2}, 66), b3 = uniform({3}, 67);
  expected = conv_reference(x3, w3, b3, {{1, 2, 1}, {1, 0, 1}, {1, 0, 1}, {2, 1, 1}}, sizes);
  y = ember::conv3d(x3, w3, b3, {1, 2, 1}, {1, 0, 1}, {2, 1, 1});
  EXPECT_EQ(y.sizes(), sizes);
  EXPECT_TRUE(all_close(y, expected));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& t) { return ember::conv3d(t[0], t[1], t[2], 2, 1); },
                              {leaf(x3), leaf(w3), leaf(b3)}, tight_gradcheck()));
  nn::Conv3d conv3(nn::Conv3dOptions(2, 4, {1, 2, 3}).padding_mode(kCircular).padding(1));
  EXPECT_EQ(conv3(x3.to(kFloat32)).sizes(), (std::vector<int64_t>{2, 4, 6, 6, 3}));
  nn::Conv1d conv1(nn::Conv1dOptions(4, 2, 3).padding_mode(kReplicate).padding(kSame));
  EXPECT_EQ(conv1(x1.to(kFloat32)).sizes(), (std::vector<int64_t>{2, 2, 9}));
}

TEST(Pad, ModesAndCropping) {
  const Tensor x = uniform({2, 3, 4}, 70);
  const auto v = values(x);
  const Tensor y = F::pad(x, F::PadFuncOptions({2, 1, -1, 1}).mode(kReflect));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 7}));
  std::vector<double> expected;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t r = 1; r < 4; ++r)  // dim 1 cropped by 1 before, padded by 1 after
      for (int64_t c = -2; c < 5; ++c)
        expected.push_back(v[(a * 3 + padded_source(r, 3, "reflect")) * 4 + padded_source(c, 4, "reflect")]);
  EXPECT_TRUE(all_close(y, expected));
  const Tensor c = F::pad(x, F::PadFuncOptions({1, 2}).value(7.5));
  EXPECT_EQ(values(c)[0], 7.5);
  EXPECT_EQ(values(c)[1], v[0]);
  EXPECT_EQ(values(c)[6], 7.5);
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& t) {
        return F::pad(t[0], F::PadFuncOptions({3, 2, 1, 3}).mode(kCircular));
      },
      {leaf(x)}, tight_gradcheck()));
  EXPECT_TRUE(throws_error([&] { F::pad(x, F::PadFuncOptions({4, 0}).mode(kReflect)); },
                           {"[pad]", "reflect padding (4, 0)", "size 4"}));
  EXPECT_TRUE(throws_error([&] { F::pad(x, F::PadFuncOptions({1})); }, {"[pad]", "even number"}));
  EXPECT_TRUE(throws_error([&] { F::pad(x, F::PadFuncOptions({1, 1}).mode(kReplicate).value(2)); },
                           {"[pad]", "value", "replicate"}));
}

TEST(Conv2d, InvalidArgumentsNameTheArgument) {
  const Tensor x = uniform({2, 4, 5, 5}, 80), w = uniform({6, 4, 3, 3}, 81);
  EXPECT_TRUE(throws_error([&] { F::conv2d(uniform({2, 3, 5, 5}, 82), w); },
                           {"[conv2d]", "4 channels", "got 3 channels"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, uniform({6, 3, 3, 3}, 83), F::Conv2dFuncOptions().groups(4)); },
                           {"[conv2d]", "groups (4)", "out_channels (6)"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, uniform({6, 4, 6, 3}, 84)); },
                           {"[conv2d]", "kernel size 6", "padded input size 5"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, w, F::Conv2dFuncOptions().dilation(3)); },
                           {"[conv2d]", "dilated: 7", "padded input size 5"}));
  EXPECT_TRUE(throws_error([&] { ember::conv2d(x, w, {}, 1, -1); }, {"[conv2d]", "negative padding", "-1"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, w, F::Conv2dFuncOptions().padding(kSame).stride(2)); },
                           {"[conv2d]", "padding='same'", "strided", "stride [2, 2]"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, w, F::Conv2dFuncOptions().stride(0)); },
                           {"[conv2d]", "stride must be positive", "[0, 0]"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, uniform({6, 4, 3}, 85)); }, {"[conv2d]", "4-d weight", "[6, 4, 3]"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x, w, F::Conv2dFuncOptions().bias(uniform({5}, 86))); },
                           {"[conv2d]", "bias of shape [6]", "[5]"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(x.to(kInt64), w.to(kInt64)); }, {"[conv2d]", "int64"}));
  EXPECT_TRUE(throws_error([&] { F::conv2d(uniform({4, 5}, 87), w); }, {"[conv2d]", "4-d input", "[4, 5]"}));
  EXPECT_TRUE(throws_error([&] { nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(3)); },
                           {"[Conv2d]", "in_channels (4)", "groups (3)"}));
  EXPECT_TRUE(throws_error([&] { nn::Conv2d(nn::Conv2dOptions(4, 6, 3).padding(kSame).stride({1, 2})); },
                           {"[Conv2d]", "padding='same'", "stride [1, 2]"}));
  EXPECT_TRUE(throws_error([&] { nn::Conv2d(nn::Conv2dOptions(4, 6, 3).padding(-1)); },
                           {"[Conv2d]", "negative padding", "[-1, -1]"}));
  EXPECT_TRUE(throws_error([&] { nn::Conv2dOptions(4, 6, {3, 3, 3}); }, {"[ExpandingArray]", "Expected 2 values, but instead got 3"}));
}

TEST(Conv2d, BitwiseIdenticalForAnyThreadCount) {
  // 18 images: the float32 weight gradient sums 4 chunks of four or five images.
  const Tensor x = uniform({18, 24, 19, 17}, 95, -1, 1, kFloat32), w = uniform({32, 12, 3, 3}, 96, -1, 1, kFloat32);
  // Output, grad input and grad weight of a grouped strided conv followed by both poolings.
  auto run = [&] {
    const Tensor xl = x.clone().requires_grad_(true), wl = w.clone().requires_grad_(true);
    const Tensor y = F::conv2d(xl, wl, F::Conv2dFuncOptions().padding(1).stride({1, 2}).groups(2));
    const Tensor z = ember::max_pool2d(y, 3, 2, 1) + ember::avg_pool2d(y, 3, 2, 1);
    (z * z).sum().backward();
    return std::vector<std::vector<double>>{values(z), values(xl.grad()), values(wl.grad())};
  };
  expect_same_for_any_thread_count(run);
}

// Shapes with at least 1024 terms per output run some passes on channels-last activations
// (Note [Channels-last passes]): forward and both gradients within float32 rounding of
// float64, with chunks of one and two images, the same bits for any thread count.
TEST(Conv2d, ChannelsLastPassesMatchFloat64) {
  struct Case {
    int64_t stride;
    std::vector<int64_t> x_sizes;
  };
  uint32_t seed = 400;
  for (const Case& c : {Case{1, {3, 128, 9, 7}}, Case{2, {3, 128, 11, 10}}}) {
    SCOPED_TRACE("stride " + std::to_string(c.stride));
    const Tensor x64 = uniform(c.x_sizes, seed++), w64 = uniform({24, 128, 3, 3}, seed++), b64 = uniform({24}, seed++);
    const auto options = F::Conv2dFuncOptions().padding(1).stride(c.stride);
    const Tensor r64 = uniform(F::conv2d(x64, w64, options).sizes(), seed++);
    auto run = [&](ScalarType dtype) {
      const Tensor x = x64.detach().to(dtype).requires_grad_(true), w = w64.detach().to(dtype).requires_grad_(true);
      const Tensor b = b64.detach().to(dtype).requires_grad_(true);
      const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions(options).bias(b));
      (y * r64.to(dtype)).sum().backward();
      return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
    };
    const auto f32 = run(kFloat32), f64 = run(kFloat64);
    const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(all_close(f32[i], values(f64[i]), {1e-5, 1e-5})) << names[i];
    expect_same_for_any_thread_count([&] {
      std::vector<std::vector<double>> out;
      for (const Tensor& t : run(kFloat32)) out.push_back(values(t));
      return out;
    });
#if defined(__x86_64__)
    // On AVX-512 oneDNN's forward runs its brgemm kernel on channels-last activations
    // (EMBER_CPU_CAPABILITY lowers oneDNN's instruction set with ember's).
    const std::string kernels =
        cpu::onednn_conv_kernels(conv2d_shape(c.x_sizes[0], 128, 24, c.x_sizes[2], c.x_sizes[3], 3, 1, c.stride));
    SCOPED_TRACE(kernels);
    if (backends::cpu_info().dispatch_isa.rfind("avx512", 0) == 0) {
      // Forward channels-last on the brgemm kernel; the weight gradient channels-last at stride
      // 1, the input gradient at stride 2, the other one on oneDNN's layout.
      const bool unit = c.stride == 1;
      EXPECT_EQ(kernels.rfind("forward brg", 0), 0u);
      auto layout_of = [&](const std::string& pass) {
        const size_t begin = kernels.find(pass), end = kernels.find(',', begin);
        const std::string part = kernels.substr(begin, end == std::string::npos ? end : end - begin);
        return part.ends_with("channels-last");
      };
      EXPECT_TRUE(layout_of("forward"));
      EXPECT_EQ(layout_of("input gradient"), !unit);
      EXPECT_EQ(layout_of("weight gradient"), unit);
    }
#endif
  }
}

// bfloat16 convolutions on oneDNN's bf16 kernels (Note [bfloat16 convolution]): output and
// gradients within one bf16 rounding of float32 computed on the same bf16 values and rounded
// once (what the float32 copies gave), for uneven chunks, bias, stride, groups and the
// transposed convolution (with a bias it keeps the float32 copies: the bias is added after the
// pass); the same bits for any thread count.
TEST(Conv2d, BFloat16MatchesFloat32RoundedOnce) {
  const std::vector<ConvCase> cases = {
      {"3x3, three images", {3, 32, 9, 8}, {48, 32, 3, 3}, 48,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding(1));
       }},
      {"strided, grouped", {2, 32, 11, 10}, {32, 16, 3, 3}, 32,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1).groups(2));
       }},
      {"transposed", {2, 32, 5, 6}, {32, 16, 3, 3}, 16,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().bias(b).stride(2));
       }},
      {"transposed without bias", {2, 32, 5, 6}, {32, 16, 3, 3}, 16,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().stride(2)) + 0 * b.view({1, -1, 1, 1});
       }},
  };
  uint32_t seed = 700;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = uniform(c.x_sizes, seed++, -1, 1, kBFloat16), w = uniform(c.w_sizes, seed++, -1, 1, kBFloat16);
    const Tensor b = uniform({c.out_channels}, seed++, -1, 1, kBFloat16);
    // bf16 values, so that both dtypes' backwards start from the same gradient.
    const Tensor r = uniform(c.conv(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32)).sizes(), seed++, -1, 1, kBFloat16)
                         .to(kFloat64);
    // Output and gradients of sum(conv(x) * r) in dtype, as float64.
    auto run = [&](ScalarType dtype) {
      // Fresh leaves (to() of the same dtype returns the tensor itself).
      const Tensor xl = x.to(dtype).clone().requires_grad_(true), wl = w.to(dtype).clone().requires_grad_(true);
      const Tensor bl = b.to(dtype).clone().requires_grad_(true);
      const Tensor y = c.conv(xl, wl, bl);
      EXPECT_EQ(y.scalar_type(), dtype);
      (y.to(kFloat64) * r).sum().backward();
      return std::vector<Tensor>{y.detach(), xl.grad(), wl.grad(), bl.grad()};
    };
    const auto bf16 = run(kBFloat16), f32 = run(kFloat32);
    const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(bf16[i].scalar_type(), kBFloat16) << names[i];
      // One rounding apart: the float32 result rounded, and 1/128 of it either way.
      const Tensor rounded = f32[i].to(kBFloat16).to(kFloat64);
      const double scale = rounded.abs().max().item<double>();
      EXPECT_TRUE(all_close(bf16[i], values(rounded), {1.0 / 128, 1e-4 * scale})) << names[i];
    }
    expect_same_for_any_thread_count([&] {
      std::vector<std::vector<double>> out;
      for (const Tensor& t : run(kBFloat16)) out.push_back(values(t));
      return out;
    });
  }
  // Where the CPU has bf16 instructions and ember's dispatch uses AVX-512, the two convolutions
  // ran on oneDNN's bf16 kernels; elsewhere on float32 copies (and the checks above held for
  // those). The transposed cases are the input-gradient pass of such kernels.
  const auto& extensions = backends::cpu_info().extensions;
  const bool bf16_kernels = std::find(extensions.begin(), extensions.end(), "avx512_bf16") != extensions.end() &&
                            backends::cpu_info().dispatch_isa.rfind("avx512", 0) == 0;
  if (!bf16_kernels) std::cout << "[ note ] no bf16 kernels here: the bf16 cases ran on float32 copies\n";
  for (const std::string& kernels :
       {backends::conv_kernels_for({3, 32, 9, 8}, {48, 32, 3, 3}, {1}, {1}, {1}, 1, kBFloat16),
        backends::conv_kernels_for({2, 32, 11, 10}, {32, 16, 3, 3}, {2}, {1}, {1}, 2, kBFloat16)}) {
    EXPECT_EQ(kernels.rfind("forward ", 0) == 0, bf16_kernels) << kernels;
    EXPECT_EQ(kernels.rfind("float32 copies: ", 0) == 0, !bf16_kernels) << kernels;
  }
}

// backends::conv_kernels_for names what a convolution of given sizes runs: the oneDNN plan's
// description, a GEMM for pointwise ones, and the convolution's errors.
TEST(Conv2d, KernelsForNamesWhatRuns) {
  const std::string kernels = backends::conv_kernels_for({8, 256, 14, 14}, {256, 256, 3, 3}, {1}, {1});
  EXPECT_EQ(kernels, cpu::onednn_conv_kernels(conv2d_shape(8, 256, 256, 14, 14, 3, 1)));
#if defined(__x86_64__)
  EXPECT_EQ(kernels.rfind("forward ", 0), 0u) << kernels;
  if (backends::cpu_info().dispatch_isa.rfind("avx512", 0) == 0) EXPECT_EQ(kernels.rfind("forward brg", 0), 0u) << kernels;
#endif
  EXPECT_EQ(backends::conv_kernels_for({2, 16, 9, 9}, {32, 16, 1, 1}).rfind("GEMM (pointwise", 0), 0u);
  // float64 never runs on oneDNN; float16 runs on float32 copies.
  EXPECT_EQ(backends::conv_kernels_for({8, 256, 14, 14}, {256, 256, 3, 3}, {1}, {1}, {1}, 1, kFloat64),
            "im2col + GEMM");
  EXPECT_EQ(backends::conv_kernels_for({8, 256, 14, 14}, {256, 256, 3, 3}, {1}, {1}, {1}, 1, kFloat16),
            "float32 copies: " + kernels);
  EXPECT_TRUE(throws_error([] { backends::conv_kernels_for({2, 16, 9}, {32, 16, 3, 3}); },
                           {"[conv_kernels_for]", "expected a 4-d input"}));
  EXPECT_TRUE(throws_error([] { backends::conv_kernels_for({2, 16, 9, 9}, {32, 8, 3, 3}, {1}, {1}, {1}, 3); },
                           {"[conv_kernels_for]", "groups (3)"}));
}

// On request, 2-d 3x3 stride-1 convolutions run on oneDNN's Winograd kernels (Note [Winograd
// convolution]): forward and both gradients within 4e-6 of the sum of their terms' magnitudes
// of float64 (8x the worst error measured, 5e-7), the same bits for any thread count.
TEST(Conv2d, WinogradOnRequest) {
  struct Restore {
    std::string algorithm = backends::conv_algorithm();
    ~Restore() { backends::set_conv_algorithm(algorithm); }
  } restore;
  EXPECT_TRUE(throws_error([] { backends::set_conv_algorithm("fft"); }, {"[conv_algorithm]", "'fft'", "winograd"}));
  const Tensor x64 = uniform({3, 32, 14, 14}, 300), w64 = uniform({48, 32, 3, 3}, 301), b64 = uniform({48}, 302);
  const Tensor r64 = uniform({3, 48, 14, 14}, 303);
  auto run = [&](ScalarType dtype) {
    const Tensor x = x64.detach().to(dtype).requires_grad_(true), w = w64.detach().to(dtype).requires_grad_(true);
    const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().padding(1).bias(b64.to(dtype)));
    (y * r64.to(dtype)).sum().backward();
    return std::vector<Tensor>{y.detach(), x.grad(), w.grad()};
  };
  backends::set_conv_algorithm("direct");
  const auto direct = run(kFloat32), exact = run(kFloat64);
  backends::set_conv_algorithm("winograd");
  EXPECT_EQ(backends::conv_algorithm(), "winograd");
  const auto winograd = run(kFloat32);
  // The sums of |terms| of each result: the same products with every factor made non-negative.
  const Tensor ax = x64.abs().requires_grad_(true), aw = w64.abs().requires_grad_(true);
  const Tensor magnitude = F::conv2d(ax, aw, F::Conv2dFuncOptions().padding(1).bias(b64.abs()));
  (magnitude * r64.abs()).sum().backward();
  const std::vector<Tensor> magnitudes = {magnitude, ax.grad(), aw.grad()};
  const char* names[] = {"output", "grad input", "grad weight"};
  for (int i = 0; i < 3; ++i) {
    const double worst = ((winograd[i].to(kFloat64) - exact[i]).abs() / magnitudes[i]).max().item<double>();
    EXPECT_LE(worst, 4e-6) << names[i];
    // Winograd kernels exist on AVX-512 only (EMBER_CPU_CAPABILITY lowers oneDNN's instruction
    // set with ember's); elsewhere the direct ones run.
    const bool ran_winograd = !(winograd[i] == direct[i]).all().item<bool>();
    EXPECT_EQ(ran_winograd, backends::cpu_info().dispatch_isa.rfind("avx512", 0) == 0) << names[i];
  }
  expect_same_for_any_thread_count([&] {
    std::vector<std::vector<double>> out;
    for (const Tensor& t : run(kFloat32)) out.push_back(values(t));
    return out;
  });
  // Other shapes keep the direct kernels: a strided 3x3 gives the same bits either way.
  auto strided = [&] {
    return values(F::conv2d(x64.to(kFloat32), w64.to(kFloat32), F::Conv2dFuncOptions().stride(2)));
  };
  const auto strided_winograd = strided();
  backends::set_conv_algorithm("direct");
  EXPECT_EQ(strided(), strided_winograd);
}

// create_graph=true (a gradient penalty, as in WGAN-GP): the convolution's gradients are
// convolution passes recorded as ops (Note [Convolution passes as ops]), so the gradients of
// its gradients match finite differences (gradgradcheck) for strided, dilated, grouped and
// biased 1-d, 2-d and 3-d convolutions and 1-d and 2-d transposed convolutions.
TEST(Conv2d, DoubleBackwardMatchesFiniteDifferences) {
  const std::vector<ConvCase> cases = {
      {"conv2d", {2, 4, 5, 4}, {6, 2, 3, 2}, 6,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride({2, 1}).padding({1, 0}).dilation({1, 2}).groups(2));
       }},
      {"conv1d", {2, 3, 7}, {2, 3, 3}, 2,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).padding(1).stride(2));
       }},
      {"conv3d", {1, 2, 3, 4, 3}, {3, 2, 2, 2, 2}, 3,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv3d(x, w, F::Conv3dFuncOptions().bias(b).padding({0, 1, 0}));
       }},
      {"conv_transpose1d", {2, 2, 4}, {2, 3, 3}, 3,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv_transpose1d(x, w, F::ConvTranspose1dFuncOptions().bias(b).stride(2).padding(1));
       }},
      {"conv_transpose2d", {2, 4, 3, 2}, {4, 3, 2, 2}, 6,
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return F::conv_transpose2d(
             x, w, F::ConvTranspose2dFuncOptions().bias(b).stride(2).output_padding(1).groups(2));
       }},
  };
  uint32_t seed = 500;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = leaf(uniform(c.x_sizes, seed++)), w = leaf(uniform(c.w_sizes, seed++));
    const Tensor b = leaf(uniform({c.out_channels}, seed++));
    const Tensor r = uniform(c.conv(x, w, b).sizes(), seed++);
    // The first-order gradients of sum(conv(x) * r), built with create_graph=true.
    auto gradients = [&](const std::vector<Tensor>& t) {
      AutoGradMode grad_mode(true);
      return autograd::grad({(c.conv(t[0], t[1], t[2]) * r).sum()}, t, {}, true, /*create_graph=*/true);
    };
    const std::vector<Tensor> first = gradients({x, w, b});
    EXPECT_TRUE(first[0].requires_grad() && first[1].requires_grad());
    EXPECT_TRUE(gradgradcheck(gradients, {x, w, b}));
  }
}

// A gradient penalty through a float32 convolution on oneDNN's kernels: d/dw of
// sum(grad_x^2) within float32 rounding of the float64 path's.
TEST(Conv2d, GradientPenaltyOnTheFloat32Kernels) {
  const Tensor x64 = uniform({3, 16, 9, 8}, 520), w64 = uniform({24, 16, 3, 3}, 521), r64 = uniform({3, 24, 9, 8}, 522);
  auto penalty_grad = [&](ScalarType dtype) {
    const Tensor x = x64.to(dtype).requires_grad_(true), w = w64.to(dtype).requires_grad_(true);
    const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().padding(1));
    const Tensor grad_x = autograd::grad({(y * r64.to(dtype)).sum()}, {x}, {}, true, /*create_graph=*/true)[0];
    (grad_x.square().sum() + (y.square() * r64.to(dtype)).sum()).backward();
    return std::vector<Tensor>{x.grad(), w.grad()};
  };
  const auto f32 = penalty_grad(kFloat32), f64 = penalty_grad(kFloat64);
#if defined(__x86_64__)
  EXPECT_TRUE(cpu::onednn_conv_fits(conv2d_shape(3, 16, 24, 9, 8, 3, 1))) << "the convolution above on oneDNN";
#endif
  EXPECT_GT(f64[1].abs().max().item<double>(), 1.0);
  EXPECT_TRUE(all_close(f32[0], values(f64[0]), {1e-4, 1e-4})) << "grad input";
  EXPECT_TRUE(all_close(f32[1], values(f64[1]), {1e-4, 1e-4})) << "grad weight";
}

}  // namespace
}  // namespace ember::nntest
