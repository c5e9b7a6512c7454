// F::interpolate and nn::Upsample against PyTorch's source-index formulas written here
// directly (bilinear and trilinear as the full 2-D/3-D weighted sums, not one dim at a time):
// nearest 1-3d, nearest-exact, linear/bilinear/trilinear with align_corners true and false,
// size or scale_factor (the kernel's scale is 1 / scale_factor), area, float32, gradcheck,
// non-contiguous and empty batches, argument errors. Values spot-checked against PyTorch 2.15.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// x[i] = sin(0.37 i + 0.1): the same inputs are easy to build in Python for a spot check.
Tensor wave(IntArrayRef sizes, ScalarType dtype = kFloat64) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(0.37 * static_cast<double>(i) + 0.1));
  return testutil::make(v, sizes, dtype);
}

// PyTorch's nearest source index: floor(dst * scale) in float, scale = 1 / factor or in / out.
int64_t nearest_source(int64_t dst, int64_t in, int64_t out, double factor) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = factor > 0 ? static_cast<float>(1.0 / factor) : static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(dst) * scale)), in - 1);
}

// (index0, index1, lambda1) of PyTorch's linear interpolation along one dim (double math).
struct Tap {
  int64_t i0, i1;
  double l1;
};
Tap linear_source(int64_t dst, int64_t in, int64_t out, bool align_corners, double factor) {
  if (out == in) return {dst, dst, 0};
  double real;
  if (align_corners) {
    real = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) * static_cast<double>(dst) : 0;
  } else {
    const double scale = factor > 0 ? 1.0 / factor : static_cast<double>(in) / static_cast<double>(out);
    real = std::max(scale * (static_cast<double>(dst) + 0.5) - 0.5, 0.0);
  }
  const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), std::min(std::max(real - static_cast<double>(i0), 0.0), 1.0)};
}

TEST(Interpolate, Nearest1d2d3dWithSizeOrScaleFactor) {
  struct Case {
    std::vector<int64_t> in;
    std::optional<std::vector<int64_t>> size;
    std::optional<std::vector<double>> factor;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5}, std::vector<int64_t>{8}, std::nullopt},
      {{2, 3, 5}, std::nullopt, std::vector<double>{1.7}},
      {{1, 2, 4, 5}, std::vector<int64_t>{7, 3}, std::nullopt},
      {{1, 2, 3, 4}, std::nullopt, std::vector<double>{2.0, 2.5}},
      {{1, 1, 2, 3, 4}, std::vector<int64_t>{3, 5, 2}, std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.in));
    Tensor x = wave(c.in);
    auto options = F::InterpolateFuncOptions().mode(ember::kNearest);
    if (c.size) options.size(c.size);
    if (c.factor) options.scale_factor(c.factor);
    Tensor y = F::interpolate(x, options);
    const int64_t spatial = x.dim() - 2;
    std::vector<int64_t> out(3, 1), in(3, 1);
    std::vector<double> factor(3, 0);
    for (int64_t i = 0; i < spatial; ++i) {
      in[3 - spatial + i] = x.size(2 + i);
      out[3 - spatial + i] = y.size(2 + i);
      if (c.factor) factor[3 - spatial + i] = (*c.factor)[i];
      EXPECT_EQ(out[3 - spatial + i],
                c.size ? (*c.size)[i] : static_cast<int64_t>(std::floor(x.size(2 + i) * (*c.factor)[i])));
    }
    const auto xs = values(x);
    std::vector<double> expected;
    const int64_t planes = x.size(0) * x.size(1);
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t d = 0; d < out[2]; ++d) {
            const int64_t sa = in[0] == 1 ? 0 : nearest_source(a, in[0], out[0], factor[0]);
            const int64_t sb = in[1] == 1 && out[1] == 1 ? 0 : nearest_source(b, in[1], out[1], factor[1]);
            const int64_t sd = nearest_source(d, in[2], out[2], factor[2]);
            expected.push_back(xs[((p * in[0] + sa) * in[1] + sb) * in[2] + sd]);
          }
    EXPECT_TRUE(testutil::all_equal(y, expected));
  }
}

TEST(Interpolate, BilinearMatchesTheTwoDimensionalFormula) {
  for (bool align_corners : {false, true}) {
    for (bool by_factor : {false, true}) {
      SCOPED_TRACE(std::string(align_corners ? "align_corners" : "half-pixel") + (by_factor ? " factor" : " size"));
      Tensor x = wave({2, 3, 5, 4}).transpose(2, 3);  // non-contiguous [2, 3, 4, 5]
      auto options = F::InterpolateFuncOptions().mode(ember::kBilinear).align_corners(align_corners);
      const double fh = by_factor ? 1.6 : 0, fw = by_factor ? 0.7 : 0;
      if (by_factor)
        options.scale_factor(std::vector<double>{fh, fw});
      else
        options.size(std::vector<int64_t>{7, 3});
      for (ScalarType dtype : {kFloat64, kFloat32}) {
        Tensor y = F::interpolate(x.to(dtype), options);
        const int64_t H = 4, W = 5, OH = y.size(2), OW = y.size(3);
        EXPECT_EQ(OH, by_factor ? 6 : 7);
        EXPECT_EQ(OW, by_factor ? 3 : 3);
        const auto xs = values(x.contiguous());
        std::vector<double> expected;
        for (int64_t p = 0; p < 6; ++p)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              const Tap h = linear_source(oh, H, OH, align_corners, fh),
                        w = linear_source(ow, W, OW, align_corners, fw);
              auto at = [&](int64_t r, int64_t c) { return xs[(p * H + r) * W + c]; };
              expected.push_back((1 - h.l1) * ((1 - w.l1) * at(h.i0, w.i0) + w.l1 * at(h.i0, w.i1)) +
                                 h.l1 * ((1 - w.l1) * at(h.i1, w.i0) + w.l1 * at(h.i1, w.i1)));
            }
        EXPECT_TRUE(all_close(y, expected,
                              dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-6}));
      }
      EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::interpolate(in[0], options); }, {leaf(x)}, tight_gradcheck()));
    }
  }
}

TEST(Interpolate, LinearAndTrilinear) {
  Tensor x = wave({2, 2, 4});
  Tensor y = F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{7}).mode(ember::kLinear));
  const auto xs = values(x);
  std::vector<double> expected;
  for (int64_t p = 0; p < 4; ++p)
    for (int64_t o = 0; o < 7; ++o) {
      const Tap t = linear_source(o, 4, 7, false, 0);
      expected.push_back((1 - t.l1) * xs[p * 4 + t.i0] + t.l1 * xs[p * 4 + t.i1]);
    }
  EXPECT_TRUE(all_close(y, expected));

  Tensor v = wave({1, 2, 3, 2, 4});
  auto options =
      F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 3, 3}).mode(ember::kTrilinear).align_corners(true);
  Tensor z = F::interpolate(v, options);
  const auto vs = values(v);
  std::vector<double> expected3;
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t c = 0; c < 3; ++c) {
          const Tap ta = linear_source(a, 3, 4, true, 0), tb = linear_source(b, 2, 3, true, 0),
                    tc = linear_source(c, 4, 3, true, 0);
          auto at = [&](int64_t i, int64_t j, int64_t k) { return vs[((p * 3 + i) * 2 + j) * 4 + k]; };
          auto plane = [&](int64_t i) {
            return (1 - tb.l1) * ((1 - tc.l1) * at(i, tb.i0, tc.i0) + tc.l1 * at(i, tb.i0, tc.i1)) +
                   tb.l1 * ((1 - tc.l1) * at(i, tb.i1, tc.i0) + tc.l1 * at(i, tb.i1, tc.i1));
          };
          expected3.push_back((1 - ta.l1) * plane(ta.i0) + ta.l1 * plane(ta.i1));
        }
  EXPECT_TRUE(all_close(z, expected3));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::interpolate(in[0], options); }, {leaf(v)}, tight_gradcheck()));
}

TEST(Interpolate, SpotValuesFromPyTorch) {
  // torch.nn.functional.interpolate on x[i] = sin(0.37 i + 0.1) (PyTorch 2.15, float64).
  Tensor x = wave({1, 1, 3, 4});
  Tensor bilinear = F::interpolate(x, F::InterpolateFuncOptions()
                                          .scale_factor(std::vector<double>{1.5, 1.5})
                                          .mode(ember::kBilinear)
                                          .align_corners(false));
  EXPECT_EQ(bilinear.sizes(), (std::vector<int64_t>{1, 1, 4, 6}));
  EXPECT_NEAR(bilinear[0][0][1][2].item<double>(), 0.6988420471596498, 1e-12);
  EXPECT_NEAR(bilinear[0][0][3][5].item<double>(), -0.6409984647774799, 1e-12);
  Tensor nearest_exact =
      F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 7}).mode(ember::kNearestExact));
  EXPECT_NEAR(nearest_exact[0][0][1][3].item<double>(), -0.6118578909427193, 1e-12);
}

TEST(Interpolate, NearestGradientSumsTheCopies) {
  // Each input position receives the gradients of the outputs that copied it.
  Tensor x = leaf(wave({1, 2, 3}));
  Tensor y = F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{7}));
  Tensor g = uniform({1, 2, 7}, 60);
  y.backward(g);
  const auto gs = values(g);
  std::vector<double> expected(6, 0.0);
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t o = 0; o < 7; ++o) expected[p * 3 + nearest_source(o, 3, 7, 0)] += gs[p * 7 + o];
  EXPECT_TRUE(all_close(x.grad(), expected));
  EXPECT_TRUE(gradients_match(
                [](const std::vector<Tensor>& in) {
                  return F::interpolate(in[0], F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 0.7}));
                },
                {leaf(wave({1, 2, 4, 5}))}, tight_gradcheck()));
}

TEST(Interpolate, AreaEmptyBatchModuleAndErrors) {
  Tensor x = wave({1, 2, 4, 6});
  EXPECT_TRUE(
      all_close(F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 3}).mode(ember::kArea)),
                values(ember::adaptive_avg_pool2d(x, {2, 3}))));
  EXPECT_EQ(F::interpolate(empty({0, 3, 4}), F::InterpolateFuncOptions().scale_factor(std::vector<double>{2})).sizes(),
            (std::vector<int64_t>{0, 3, 8}));
  nn::Upsample up(
      nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(ember::kBilinear).align_corners(true));
  EXPECT_TRUE(all_close(up(x), values(F::interpolate(x, F::InterpolateFuncOptions()
                                                            .scale_factor(std::vector<double>{2, 2})
                                                            .mode(ember::kBilinear)
                                                            .align_corners(true)))));
  EXPECT_EQ(nn::Upsample(nn::UpsampleOptions().size(std::vector<int64_t>{3}))(wave({1, 1, 2})).sizes(),
            (std::vector<int64_t>{1, 1, 3}));

  auto bad = [&](const F::InterpolateFuncOptions& options, std::vector<std::string> fragments) {
    EXPECT_TRUE(throws_error([&] { F::interpolate(x, options); }, fragments));
  };
  bad(F::InterpolateFuncOptions(), {"interpolate", "either size or scale_factor"});
  bad(F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).scale_factor(std::vector<double>{2, 2}),
      {"interpolate", "only one of size or scale_factor"});
  bad(F::InterpolateFuncOptions().size(std::vector<int64_t>{2}), {"interpolate", "size [2]", "2"});
  bad(F::InterpolateFuncOptions().scale_factor(std::vector<double>{2}), {"interpolate", "scale_factor", "1 values"});
  bad(F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).mode(ember::kLinear),
      {"interpolate", "'linear'", "3-d"});
  bad(F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).align_corners(true),
      {"interpolate", "align_corners", "'nearest'"});
  bad(F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 0}), {"interpolate", "greater than 0"});
  bad(F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 0.1}),
      {"interpolate", "greater than 0", "scale_factor"});
  bad(F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 2}).mode(ember::kBicubic), {"interpolate", "bicubic"});
  EXPECT_TRUE(throws_error([] { F::InterpolateFuncOptions().mode(ember::kReLU); }, {"interpolate", "mode"}));
  EXPECT_TRUE(throws_error(
      [] {
        F::interpolate(zeros({2, 3}), F::InterpolateFuncOptions().size(std::vector<int64_t>{2}));
      },
      {"interpolate", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { nn::Upsample(nn::UpsampleOptions().mode(ember::kArea)); }, {"Upsample", "'area'"}));
}

}  // namespace
}  // namespace ember::nntest
