// ConvTranspose1d/2d/3d and F::/ember::conv_transpose* against the definition written here as
// a direct scatter in double (each input position adds x * w to output p * stride - padding
// + k * dilation), with the input, weight and bias gradients from the same loops: strides,
// padding, output_padding, dilation, groups > 1, non-contiguous and empty batches, unbatched
// inputs, output_size, float32, gradcheck and argument errors.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

struct TransposeArgs {
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups = 1;
};

struct TransposeReference {
  std::vector<int64_t> out_sizes;
  std::vector<double> y, grad_x, grad_w, grad_b;
};

// x [N, Cin, *s], w [Cin, Cout / groups, *k], bias [Cout] or undefined, g: the output's
// gradient (read only when defined; it must have the output's shape).
TransposeReference transpose_reference(const Tensor& x, const Tensor& w, const Tensor& bias, const TransposeArgs& a,
                                       const Tensor& g = {}) {
  const int64_t rank = x.dim() - 2, N = x.size(0), Cin = x.size(1), G = a.groups;
  const int64_t cout_g = w.size(1), Cout = cout_g * G, cin_g = Cin / G;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  TransposeReference r;
  r.out_sizes = {N, Cout};
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t j = 3 - rank + i;
    in[j] = x.size(2 + i);
    k[j] = w.size(2 + i);
    s[j] = a.stride[i];
    d[j] = a.dilation[i];
    p[j] = a.padding[i];
    out[j] = (in[j] - 1) * s[j] - 2 * p[j] + d[j] * (k[j] - 1) + a.output_padding[i] + 1;
    r.out_sizes.push_back(out[j]);
  }
  const auto xv = values(x), wv = values(w);
  const std::vector<double> gv = g.defined() ? values(g) : std::vector<double>{};
  const int64_t out_plane = out[0] * out[1] * out[2];
  r.y.assign(static_cast<size_t>(N * Cout * out_plane), 0.0);
  r.grad_x.assign(xv.size(), 0.0);
  r.grad_w.assign(wv.size(), 0.0);
  r.grad_b.assign(static_cast<size_t>(Cout), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < Cin; ++c)
      for (int64_t i0 = 0; i0 < in[0]; ++i0)
        for (int64_t i1 = 0; i1 < in[1]; ++i1)
          for (int64_t i2 = 0; i2 < in[2]; ++i2) {
            const int64_t xi = (((n * Cin + c) * in[0] + i0) * in[1] + i1) * in[2] + i2;
            for (int64_t co = 0; co < cout_g; ++co)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t q0 = i0 * s[0] - p[0] + k0 * d[0], q1 = i1 * s[1] - p[1] + k1 * d[1],
                                  q2 = i2 * s[2] - p[2] + k2 * d[2];
                    if (q0 < 0 || q0 >= out[0] || q1 < 0 || q1 >= out[1] || q2 < 0 || q2 >= out[2]) continue;
                    const int64_t o = c / cin_g * cout_g + co;
                    const int64_t yi = (((n * Cout + o) * out[0] + q0) * out[1] + q1) * out[2] + q2;
                    const int64_t wi = (((c * cout_g + co) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    r.y[yi] += xv[xi] * wv[wi];
                    if (!gv.empty()) {
                      r.grad_x[xi] += gv[yi] * wv[wi];
                      r.grad_w[wi] += gv[yi] * xv[xi];
                    }
                  }
          }
  if (bias.defined()) {
    const auto bv = values(bias);
    for (size_t i = 0; i < r.y.size(); ++i) r.y[i] += bv[(i / out_plane) % Cout];
  }
  for (size_t i = 0; i < gv.size(); ++i) r.grad_b[(i / out_plane) % Cout] += gv[i];
  return r;
}

Tensor transpose_call(const Tensor& x, const Tensor& w, const Tensor& b, const TransposeArgs& a) {
  switch (x.dim() - 2) {
    case 1:
      return ember::conv_transpose1d(x, w, b, a.stride, a.padding, a.output_padding, a.groups, a.dilation);
    case 2:
      return ember::conv_transpose2d(x, w, b, a.stride, a.padding, a.output_padding, a.groups, a.dilation);
    default:
      return ember::conv_transpose3d(x, w, b, a.stride, a.padding, a.output_padding, a.groups, a.dilation);
  }
}

struct Case {
  std::vector<int64_t> x, w;
  TransposeArgs args;
};

std::vector<Case> cases() {
  return {
      {{2, 4, 5}, {4, 3, 3}, {{2}, {1}, {1}, {1}, 1}},
      {{1, 4, 6}, {4, 1, 2}, {{3}, {0}, {2}, {2}, 2}},  // groups, dilation, output_padding
      {{2, 3, 4, 3}, {3, 2, 3, 2}, {{2, 1}, {1, 0}, {1, 0}, {1, 2}, 1}},
      {{1, 6, 3, 4}, {6, 2, 2, 3}, {{1, 2}, {0, 1}, {0, 1}, {2, 1}, 3}},  // groups 3
      {{1, 2, 2, 3, 2}, {2, 2, 2, 2, 3}, {{2, 1, 2}, {0, 1, 1}, {1, 0, 0}, {1, 1, 1}, 2}},
  };
}

TEST(ConvTranspose, MatchesTheDirectScatterForwardAndBackward) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " " + ::testing::PrintToString(c.w));
    for (ScalarType dtype : {kFloat64, kFloat32}) {
      // A transposed view for the input: non-contiguous.
      std::vector<int64_t> swapped = c.x;
      std::swap(swapped[0], swapped[1]);
      Tensor x = uniform(swapped, 1, -1, 1, dtype).transpose(0, 1).requires_grad_(true);
      Tensor w = uniform(c.w, 2, -1, 1, dtype).requires_grad_(true);
      Tensor b = uniform({c.w[1] * c.args.groups}, 3, -1, 1, dtype).requires_grad_(true);
      Tensor y = transpose_call(x, w, b, c.args);
      Tensor g = uniform(y.sizes(), 4, -1, 1, dtype);
      y.backward(g);
      const TransposeReference r = transpose_reference(x, w, b, c.args, g);
      const testutil::Tolerance tol =
          dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-5};
      EXPECT_EQ(y.sizes(), r.out_sizes);
      EXPECT_TRUE(all_close(y, r.y, tol));
      EXPECT_TRUE(all_close(x.grad(), r.grad_x, tol));
      EXPECT_TRUE(all_close(w.grad(), r.grad_w, tol));
      EXPECT_TRUE(all_close(b.grad(), r.grad_b, tol));
    }
    Tensor x = leaf(uniform(c.x, 5)), w = leaf(uniform(c.w, 6)), b = leaf(uniform({c.w[1] * c.args.groups}, 7));
    EXPECT_TRUE(
        gradients_match([&](const std::vector<Tensor>& in) { return transpose_call(in[0], in[1], in[2], c.args); },
                        {x, w, b}, tight_gradcheck()));
  }
}

TEST(ConvTranspose, FunctionalModulesOutputSizeAndUnbatched) {
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(4, 6, {3, 2}).stride(2).padding(1).groups(2));
  up->to(kFloat64);
  EXPECT_EQ(up->weight.sizes(), (std::vector<int64_t>{4, 3, 3, 2}));
  EXPECT_EQ(up->bias.sizes(), (std::vector<int64_t>{6}));
  Tensor x = uniform({2, 4, 3, 5}, 8);
  const TransposeArgs args{{2, 2}, {1, 1}, {0, 0}, {1, 1}, 2};
  EXPECT_TRUE(all_close(up(x), transpose_reference(x, up->weight, up->bias, args).y));
  // output_size: [5, 8] is the minimum; [6, 9] needs output_padding 1 in both dims.
  const TransposeArgs padded{{2, 2}, {1, 1}, {1, 1}, {1, 1}, 2};
  Tensor sized = up->forward(x, std::vector<int64_t>{6, 9});
  EXPECT_EQ(sized.sizes(), (std::vector<int64_t>{2, 6, 6, 9}));
  EXPECT_TRUE(all_close(sized, transpose_reference(x, up->weight, up->bias, padded).y));
  EXPECT_EQ(up->forward(x, std::vector<int64_t>{2, 6, 5, 8}).sizes(), (std::vector<int64_t>{2, 6, 5, 8}));
  EXPECT_TRUE(throws_error(
      [&] {
        up->forward(x, std::vector<int64_t>{7, 8});
      },
      {"ConvTranspose2d", "output_size", "[7, 8]", "[5, 8]", "[6, 9]"}));
  // F:: form, unbatched input and an empty batch.
  Tensor w = uniform({3, 2, 3}, 9), v = uniform({3, 7}, 10);
  auto options = F::ConvTranspose1dFuncOptions().stride(2).output_padding(1);
  EXPECT_TRUE(all_close(F::conv_transpose1d(v, w, options),
                        transpose_reference(v.unsqueeze(0), w, {}, {{2}, {0}, {1}, {1}, 1}).y));
  EXPECT_EQ(F::conv_transpose1d(v, w, options).sizes(), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(F::conv_transpose1d(empty({0, 3, 7}, kFloat64), w, options).sizes(), (std::vector<int64_t>{0, 2, 16}));
  // A channels-last layout (channels innermost in memory) reads the same values.
  Tensor channels_last = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  ASSERT_FALSE(channels_last.is_contiguous());
  EXPECT_TRUE(all_close(up(channels_last), transpose_reference(x, up->weight, up->bias, args).y));
  nn::ConvTranspose3d cube(nn::ConvTranspose3dOptions(2, 2, 2).bias(false));
  EXPECT_EQ(cube->named_parameters().size(), 1u);
  EXPECT_EQ(cube(zeros({1, 2, 2, 2, 2})).sizes(), (std::vector<int64_t>{1, 2, 3, 3, 3}));
}

TEST(ConvTranspose, ArgumentErrors) {
  Tensor x = zeros({1, 4, 5, 5}), w = zeros({4, 2, 3, 3});
  EXPECT_TRUE(throws_error([&] { ember::conv_transpose2d(x, w, {}, 2, 0, 2); },
                           {"conv_transpose2d", "output_padding", "smaller than either stride or dilation"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ember::conv_transpose2d(zeros({1, 3, 5, 5}), w);
      },
      {"conv_transpose2d", "4 channels", "got 3"}));
  EXPECT_TRUE(throws_error([&] { ember::conv_transpose2d(x, w, {}, 1, 0, 0, 3); },
                           {"conv_transpose2d", "groups (3)", "in_channels (4)"}));
  EXPECT_TRUE(throws_error([&] { ember::conv_transpose2d(x, w, zeros({3})); }, {"conv_transpose2d", "bias", "[2]"}));
  EXPECT_TRUE(
      throws_error([&] { ember::conv_transpose2d(x, w, {}, 1, 4); }, {"conv_transpose2d", "output size", "too small"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ember::conv_transpose2d(x, w, {}, {1, 1, 1});
      },
      {"conv_transpose2d", "stride", "1 or 2"}));
  EXPECT_TRUE(throws_error([&] { ember::conv_transpose1d(x, w); }, {"conv_transpose1d", "3-d weight"}));
  EXPECT_TRUE(
      throws_error([&] { ember::conv_transpose2d(x, w, {}, 0); }, {"conv_transpose2d", "stride must be positive"}));
  EXPECT_TRUE(throws_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 3, 3).groups(2)); },
                           {"ConvTranspose2d", "out_channels (3)", "groups (2)"}));
  // A padding_mode other than kZeros builds (and prints) but cannot run, as in libtorch.
  nn::ConvTranspose1d reflected(nn::ConvTranspose1dOptions(2, 2, 3).padding_mode(ember::kReflect));
  EXPECT_TRUE(throws_error([&] { reflected(ember::ones({1, 2, 5})); }, {"ConvTranspose1d", "padding_mode"}));
}

}  // namespace
}  // namespace ember::nntest
