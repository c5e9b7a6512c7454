// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d: forward and indices against
// direct float64 windows, gradients by gradcheck, and the argument errors.
#include "vision_reference.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

TEST(MaxPool2d, MatchesDirectWindowsWithIndices) {
  const Tensor x = uniform({2, 3, 7, 8}, 1);
  struct Case {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil;
  };
  for (const Case& c : {Case{2, 2, 2, 2, 0, 0, 1, 1, false}, Case{3, 2, 2, 1, 1, 1, 1, 1, false},
                        Case{3, 3, 2, 2, 1, 0, 2, 1, true}, Case{2, 3, 3, 2, 1, 1, 1, 2, true}}) {
    SCOPED_TRACE(::testing::Message() << c.kh << "x" << c.kw << " ceil " << c.ceil);
    const auto options = F::MaxPool2dFuncOptions({c.kh, c.kw}).stride({c.sh, c.sw}).padding({c.ph, c.pw})
                             .dilation({c.dh, c.dw}).ceil_mode(c.ceil);
    const auto ref = pool2d_reference(x, sliding_ref(7, c.kh, c.sh, c.ph, c.dh, c.ceil, true),
                                      sliding_ref(8, c.kw, c.sw, c.pw, c.dw, c.ceil, true), true);
    auto [y, indices] = F::max_pool2d_with_indices(x, options);
    EXPECT_EQ(y.sizes(), ref.sizes);
    EXPECT_TRUE(all_close(y, ref.out));
    EXPECT_EQ(indices.scalar_type(), kInt64);
    EXPECT_TRUE(all_equal(indices, ref.indices));
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& t) { return F::max_pool2d(t[0], options); }, {leaf(x)},
                                tight_gradcheck()));
  }
  // Default stride = kernel; a transposed input; the module; unbatched; an empty batch.
  const Tensor xt = uniform({2, 3, 8, 7}, 2).transpose(2, 3);
  const auto ref = pool2d_reference(xt, sliding_ref(7, 3, 3, 0, 1, false, true), sliding_ref(8, 3, 3, 0, 1, false, true), true);
  nn::MaxPool2d pool(nn::MaxPool2dOptions(3));
  EXPECT_TRUE(all_close(pool(xt), ref.out));
  EXPECT_EQ(pool(uniform({3, 7, 8}, 3)).sizes(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(pool(zeros({0, 3, 7, 8}, kFloat32)).sizes(), (std::vector<int64_t>{0, 3, 2, 2}));
  EXPECT_TRUE(all_close(pool(xt.to(kFloat32)), ref.out));
}

TEST(Pooling, ReducedPrecisionComputesInFloat32) {
  const Tensor x = uniform({2, 3, 7, 6}, 5, -1, 1, kBFloat16);
  const auto max = pool2d_reference(x, sliding_ref(7, 3, 2, 1, 1, false, true), sliding_ref(6, 3, 2, 1, 1, false, true), true);
  auto [y, indices] = ember::max_pool2d_with_indices(x, 3, 2, 1);
  EXPECT_EQ(y.scalar_type(), kBFloat16);
  EXPECT_TRUE(all_equal(y, max.out));
  EXPECT_TRUE(all_equal(indices, max.indices));
  const Tensor h = x.to(kFloat16);
  const Tensor avg = ember::adaptive_avg_pool2d(h, {3, 4});
  EXPECT_EQ(avg.scalar_type(), kFloat16);
  EXPECT_TRUE(all_close(avg, pool2d_reference(h, adaptive_ref(7, 3), adaptive_ref(6, 4), false).out));
}

// Ties (as after a ReLU) and windows of -inf name the window's first position inside the
// input, as PyTorch, for both dtypes; with padding, stride and dilation.
TEST(MaxPool2d, TiesAndMinusInfinityTakeTheFirstPosition) {
  Tensor x = uniform({2, 3, 9, 8}, 8, -3, 3).round().clamp_min(0);
  x = ember::cat({x, ember::full({1, 3, 9, 8}, -std::numeric_limits<double>::infinity(), kFloat64)});
  for (ScalarType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto ref = pool2d_reference(x, sliding_ref(9, 3, 2, 1, 1, false, true),
                                      sliding_ref(8, 3, 1, 1, 2, false, true), true);
    auto [y, indices] = ember::max_pool2d_with_indices(x.to(dtype), {3, 3}, {2, 1}, {1, 1}, {1, 2});
    EXPECT_TRUE(all_equal(y, ref.out));
    EXPECT_TRUE(all_equal(indices, ref.indices));
  }
}

TEST(MaxPool2d, NanWinsAsInPyTorch) {
  Tensor x = uniform({1, 1, 2, 2}, 4);
  x = ember::cat({x.flatten().slice(0, 0, 2), ember::full({1}, std::nan(""), kFloat64), x.flatten().slice(0, 3, 4)})
          .view({1, 1, 2, 2});
  auto [y, indices] = ember::max_pool2d_with_indices(x, 2);
  EXPECT_TRUE(std::isnan(values(y)[0]));
  EXPECT_EQ(values(indices)[0], 2);
}

TEST(AvgPool2d, DivisorRules) {
  const Tensor x = uniform({2, 2, 7, 6}, 10);
  for (bool include_pad : {true, false})
    for (bool ceil : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "count_include_pad " << include_pad << " ceil_mode " << ceil);
      const auto options = F::AvgPool2dFuncOptions({3, 2}).stride({2, 3}).padding(1).ceil_mode(ceil)
                               .count_include_pad(include_pad);
      const auto ref = pool2d_reference(x, sliding_ref(7, 3, 2, 1, 1, ceil, include_pad),
                                        sliding_ref(6, 2, 3, 1, 1, ceil, include_pad), false);
      const Tensor y = F::avg_pool2d(x, options);
      EXPECT_EQ(y.sizes(), ref.sizes);
      EXPECT_TRUE(all_close(y, ref.out));
      EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& t) { return F::avg_pool2d(t[0], options); }, {leaf(x)},
                                  tight_gradcheck()));
    }
  const auto options = F::AvgPool2dFuncOptions(3).stride(2).padding(1).divisor_override(5);
  const auto ref = pool2d_reference(x, sliding_ref(7, 3, 2, 1, 1, false, true), sliding_ref(6, 3, 2, 1, 1, false, true),
                                    false, 5);
  nn::AvgPool2d pool(options);
  EXPECT_TRUE(all_close(pool(x.permute({0, 1, 3, 2}).contiguous().permute({0, 1, 3, 2})), ref.out));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& t) { return pool(t[0]); }, {leaf(x)}, tight_gradcheck()));
  EXPECT_EQ(pool(zeros({0, 2, 7, 6}, kFloat64)).sizes(), (std::vector<int64_t>{0, 2, 4, 3}));
}

TEST(AdaptivePool2d, UnevenWindows) {
  const Tensor x = uniform({2, 3, 7, 5}, 20).slice(3, 0, 5);
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{3, 2}, {7, 5}, {1, 1}, {4, 4}, {9, 6}}) {
    SCOPED_TRACE(::testing::Message() << oh << "x" << ow);
    const auto avg = pool2d_reference(x, adaptive_ref(7, oh), adaptive_ref(5, ow), false);
    const auto max = pool2d_reference(x, adaptive_ref(7, oh), adaptive_ref(5, ow), true);
    nn::AdaptiveAvgPool2d avg_pool(nn::AdaptiveAvgPool2dOptions({oh, ow}));
    nn::AdaptiveMaxPool2d max_pool(nn::AdaptiveMaxPool2dOptions({oh, ow}));
    EXPECT_EQ(avg_pool(x).sizes(), avg.sizes);
    EXPECT_TRUE(all_close(avg_pool(x), avg.out));
    auto [y, indices] = max_pool->forward_with_indices(x);
    EXPECT_TRUE(all_close(y, max.out));
    EXPECT_TRUE(all_equal(indices, max.indices));
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& t) { return avg_pool(t[0]) + max_pool(t[0]); },
                                {leaf(x)}, tight_gradcheck()));
  }
  EXPECT_EQ(F::adaptive_avg_pool2d(uniform({3, 7, 5}, 21), F::AdaptiveAvgPool2dFuncOptions(2)).sizes(),
            (std::vector<int64_t>{3, 2, 2}));
}

TEST(Pooling, OneAndThreeSpatialDims) {
  const Tensor x1 = uniform({2, 3, 11}, 40);
  auto ref = pool_reference(x1, {sliding_ref(11, 3, 2, 1, 2, true, true)}, true);
  nn::MaxPool1d max1(nn::MaxPool1dOptions(3).stride(2).padding(1).dilation(2).ceil_mode(true));
  auto [y1, i1] = max1->forward_with_indices(x1);
  EXPECT_EQ(y1.sizes(), ref.sizes);
  EXPECT_TRUE(all_close(y1, ref.out));
  EXPECT_TRUE(all_equal(i1, ref.indices));
  ref = pool_reference(x1, {sliding_ref(11, 4, 3, 2, 1, true, false)}, false);
  nn::AvgPool1d avg1(nn::AvgPool1dOptions(4).stride(3).padding(2).ceil_mode(true).count_include_pad(false));
  EXPECT_TRUE(all_close(avg1(x1), ref.out));
  EXPECT_TRUE(all_close(F::adaptive_avg_pool1d(x1, F::AdaptiveAvgPool1dFuncOptions(4)),
                        pool_reference(x1, {adaptive_ref(11, 4)}, false).out));
  EXPECT_TRUE(all_equal(std::get<1>(F::adaptive_max_pool1d_with_indices(x1, F::AdaptiveMaxPool1dFuncOptions(4))),
                        pool_reference(x1, {adaptive_ref(11, 4)}, true).indices));

  const Tensor x3 = uniform({2, 2, 5, 6, 4}, 41).transpose(3, 4);
  ref = pool_reference(x3, {sliding_ref(5, 2, 2, 1, 1, false, true), sliding_ref(4, 3, 1, 1, 1, false, true),
                            sliding_ref(6, 2, 3, 0, 2, false, true)},
                       true);
  const auto max3 = F::MaxPool3dFuncOptions({2, 3, 2}).stride({2, 1, 3}).padding({1, 1, 0}).dilation({1, 1, 2});
  auto [y3, i3] = F::max_pool3d_with_indices(x3, max3);
  EXPECT_EQ(y3.sizes(), ref.sizes);
  EXPECT_TRUE(all_close(y3, ref.out));
  EXPECT_TRUE(all_equal(i3, ref.indices));
  const auto avg3 = F::AvgPool3dFuncOptions(2).stride({1, 2, 2}).padding(1).divisor_override(3);
  ref = pool_reference(x3, {sliding_ref(5, 2, 1, 1, 1, false, true), sliding_ref(4, 2, 2, 1, 1, false, true),
                            sliding_ref(6, 2, 2, 1, 1, false, true)},
                       false, 3);
  nn::AvgPool3d avg_module(avg3);
  EXPECT_TRUE(all_close(avg_module(x3), ref.out));
  nn::AdaptiveAvgPool3d adaptive_avg(nn::AdaptiveAvgPool3dOptions({2, 3, 4}));
  nn::AdaptiveMaxPool3d adaptive_max(nn::AdaptiveMaxPool3dOptions({3, 3, 5}));
  EXPECT_TRUE(all_close(adaptive_avg(x3),
                        pool_reference(x3, {adaptive_ref(5, 2), adaptive_ref(4, 3), adaptive_ref(6, 4)}, false).out));
  EXPECT_TRUE(all_close(adaptive_max(x3),
                        pool_reference(x3, {adaptive_ref(5, 3), adaptive_ref(4, 3), adaptive_ref(6, 5)}, true).out));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& t) {
        return ember::cat({F::max_pool3d(t[0], max3).flatten(), avg_module(t[0]).flatten(),
                           adaptive_avg(t[0]).flatten(), adaptive_max(t[0]).flatten(), max1(t[1]).flatten(),
                           avg1(t[1]).flatten()});
      },
      {leaf(x3), leaf(x1)}, tight_gradcheck()));
  EXPECT_TRUE(throws_error([&] { F::max_pool3d(x1, F::MaxPool3dFuncOptions(2)); }, {"[max_pool3d]", "4-d or 5-d"}));

  // An output of one per dim (computed as a mean over the spatial dims) equals the window walk's
  // reference, unbatched inputs included.
  EXPECT_TRUE(all_close(F::adaptive_avg_pool1d(x1, F::AdaptiveAvgPool1dFuncOptions(1)),
                        pool_reference(x1, {adaptive_ref(11, 1)}, false).out));
  EXPECT_TRUE(all_close(F::adaptive_avg_pool3d(x3, F::AdaptiveAvgPool3dFuncOptions(1)),
                        pool_reference(x3, {adaptive_ref(5, 1), adaptive_ref(4, 1), adaptive_ref(6, 1)}, false).out));
  EXPECT_EQ(F::adaptive_avg_pool3d(x3[0], F::AdaptiveAvgPool3dFuncOptions(1)).sizes(),
            (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& t) { return F::adaptive_avg_pool3d(t[0], F::AdaptiveAvgPool3dFuncOptions(1)); },
      {leaf(x3)}, tight_gradcheck()));
}

// create_graph=true (a gradient penalty): the gradients of the poolings' gradients match
// finite differences (gradgradcheck) in the input and in the gradient flowing in, r: max
// pooling's gradient scatters r to the indices (a gather of what flows back to it), average
// pooling's is its adjoint (and that one's gradient the pooling again).
TEST(Pooling, DoubleBackwardMatchesFiniteDifferences) {
  using Pool = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, Pool>> pools = {
      {"max_pool2d",
       [](const Tensor& x) {
         return F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1).dilation({1, 2}));
       }},
      {"avg_pool2d",
       [](const Tensor& x) {
         return F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride({2, 1}).padding(1).ceil_mode(true)
                                     .count_include_pad(false));
       }},
      {"avg_pool3d divisor_override",
       [](const Tensor& x) {
         return F::avg_pool3d(x.unsqueeze(2), F::AvgPool3dFuncOptions({1, 2, 2}).divisor_override(3));
       }},
      {"adaptive_max_pool1d",
       [](const Tensor& x) { return F::adaptive_max_pool1d(x.flatten(2), F::AdaptiveMaxPool1dFuncOptions(5)); }},
      {"adaptive_avg_pool2d", [](const Tensor& x) { return F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({3, 2})); }},
  };
  uint32_t seed = 600;
  for (const auto& [name, pool] : pools) {
    SCOPED_TRACE(name);
    const Tensor x = leaf(uniform({2, 3, 5, 6}, seed++).transpose(2, 3));  // non-contiguous
    const Tensor r = leaf(uniform(pool(x).sizes(), seed++));
    auto gradients = [&](const std::vector<Tensor>& t) {
      AutoGradMode grad_mode(true);
      return autograd::grad({(pool(t[0]) * t[1]).sum()}, {t[0]}, {}, true, /*create_graph=*/true);
    };
    // The differentiable first-order gradient is the kernels' one.
    const Tensor first = gradients({x, r})[0];
    EXPECT_TRUE(first.requires_grad());
    EXPECT_TRUE(all_close(first, values(autograd::grad({(pool(x) * r).sum()}, {x})[0]), {1e-12, 1e-12}));
    EXPECT_TRUE(gradgradcheck(gradients, {x, r}));
    // An empty batch: empty gradients of the right shape.
    const Tensor empty = leaf(zeros({0, 3, 5, 6}, TensorOptions().dtype(kFloat64)));
    const Tensor empty_r = zeros(pool(empty).sizes(), TensorOptions().dtype(kFloat64));
    EXPECT_EQ(gradients({empty, empty_r})[0].sizes(), empty.sizes());
  }
}

TEST(Pooling, InvalidArgumentsNameTheArgument) {
  const Tensor x = uniform({2, 3, 5, 5}, 30);
  EXPECT_TRUE(throws_error([&] { F::max_pool2d(x, F::MaxPool2dFuncOptions(3).padding(2)); },
                           {"[max_pool2d]", "padding", "half", "[2, 2]", "[3, 3]"}));
  EXPECT_TRUE(throws_error([&] { F::max_pool2d(x, F::MaxPool2dFuncOptions(6)); },
                           {"[max_pool2d]", "output size is too small", "[6, 6]"}));
  EXPECT_TRUE(throws_error([&] { F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).stride(0)); },
                           {"[avg_pool2d]", "stride must be positive"}));
  EXPECT_TRUE(throws_error([&] { F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).divisor_override(0)); },
                           {"[avg_pool2d]", "divisor_override"}));
  EXPECT_TRUE(throws_error([&] { F::max_pool2d(uniform({5, 5}, 31), F::MaxPool2dFuncOptions(2)); },
                           {"[max_pool2d]", "3-d or 4-d", "[5, 5]"}));
  EXPECT_TRUE(throws_error([&] { F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({0, 2})); },
                           {"[adaptive_avg_pool2d]", "output_size", "[0, 2]"}));
  EXPECT_TRUE(throws_error([&] { F::adaptive_max_pool2d(zeros({2, 0, 5, 5}), F::AdaptiveMaxPool2dFuncOptions(2)); },
                           {"[adaptive_max_pool2d]", "non-zero", "[2, 0, 5, 5]"}));
  EXPECT_TRUE(throws_error([&] { ember::max_pool2d(x, {2, 2, 2}); }, {"[max_pool2d]", "kernel_size", "[2, 2, 2]"}));
}

}  // namespace
}  // namespace ember::nntest
