// GroupNorm and InstanceNorm1d/2d/3d against the normalisation written here per group or
// plane in double: groups > 1, non-contiguous and empty inputs, float32, running stats
// (instance norm: mean over instances, unbiased variance), eval mode, gradcheck, modules,
// state_dict names and argument errors.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

struct PlaneStats {
  std::vector<double> mean, var;  // per plane, biased variance
};

// x [N, C, *] read as N * C / planes_per... : `groups` groups of channels per instance.
PlaneStats group_stats(const Tensor& x, int64_t groups) {
  const auto v = values(x);
  const int64_t N = x.size(0), per_group = static_cast<int64_t>(v.size()) / (N * groups);
  PlaneStats s{std::vector<double>(N * groups, 0.0), std::vector<double>(N * groups, 0.0)};
  for (size_t i = 0; i < v.size(); ++i) s.mean[i / per_group] += v[i] / per_group;
  for (size_t i = 0; i < v.size(); ++i) {
    const double d = v[i] - s.mean[i / per_group];
    s.var[i / per_group] += d * d / per_group;
  }
  return s;
}

std::vector<double> group_norm_reference(const Tensor& x, int64_t groups, const std::vector<double>& w,
                                         const std::vector<double>& b, double eps) {
  const auto v = values(x);
  const auto s = group_stats(x, groups);
  const int64_t N = x.size(0), C = x.size(1), inner = static_cast<int64_t>(v.size()) / (N * C);
  const int64_t per_group = inner * C / groups;
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = (i / inner) % C, g = i / per_group;
    out.push_back((v[i] - s.mean[g]) / std::sqrt(s.var[g] + eps) * w[c] + b[c]);
  }
  return out;
}

TEST(GroupNorm, MatchesFormulaWithGroupsAndAffine) {
  for (ScalarType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    nn::GroupNorm norm(nn::GroupNormOptions(3, 6).eps(1e-3));
    norm->to(dtype);
    {
      NoGradGuard no_grad;
      norm->weight.copy_(uniform({6}, 1));
      norm->bias.copy_(uniform({6}, 2));
    }
    Tensor x = uniform({2, 6, 5, 3}, 3, -2, 3, dtype).transpose(2, 3);  // non-contiguous [2, 6, 3, 5]
    const testutil::Tolerance tol =
        dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-5};
    EXPECT_TRUE(all_close(norm(x), group_norm_reference(x, 3, values(norm->weight), values(norm->bias), 1e-3), tol));
  }
  Tensor x = uniform({2, 4, 3}, 4, -1, 2);
  EXPECT_TRUE(all_close(F::group_norm(x, F::GroupNormFuncOptions(1)),
                        group_norm_reference(x, 1, std::vector<double>(4, 1), std::vector<double>(4, 0), 1e-5)));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return F::group_norm(in[0], F::GroupNormFuncOptions(2).weight(in[1]).bias(in[2]).eps(1e-2));
      },
      {leaf(uniform({2, 4, 3}, 5)), leaf(uniform({4}, 6)), leaf(uniform({4}, 7))}, tight_gradcheck()));
  EXPECT_EQ(F::group_norm(empty({0, 4, 3}), F::GroupNormFuncOptions(2)).sizes(), (std::vector<int64_t>{0, 4, 3}));
  nn::GroupNorm plain(nn::GroupNormOptions(2, 4).affine(false));
  EXPECT_EQ(plain->named_parameters().size(), 0u);
  EXPECT_EQ(nn::GroupNorm(nn::GroupNormOptions(2, 4))->named_parameters().keys(),
            (std::vector<std::string>{"weight", "bias"}));
  EXPECT_TRUE(throws_error([] { nn::GroupNorm(nn::GroupNormOptions(3, 4)); },
                           {"GroupNorm", "num_channels (4)", "num_groups (3)"}));
  EXPECT_TRUE(throws_error(
      [] {
        F::group_norm(zeros({2, 6, 3}), F::GroupNormFuncOptions(4));
      },
      {"group_norm", "divisible by num_groups", "[2, 6, 3]", "num_groups=4"}));
  EXPECT_TRUE(
      throws_error([] { F::group_norm(zeros({6}), F::GroupNormFuncOptions(2)); }, {"group_norm", "[N, C, *]", "[6]"}));
  EXPECT_TRUE(throws_error(
      [] {
        F::group_norm(zeros({2, 4, 3}), F::GroupNormFuncOptions(2).weight(zeros({3})));
      },
      {"group_norm", "weight", "[4]", "[3]"}));
}

TEST(InstanceNorm, NormalisesEachPlaneAndTracksRunningStats) {
  for (ScalarType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    nn::InstanceNorm2d norm(nn::InstanceNormOptions(3).affine(true).track_running_stats(true).momentum(0.3));
    norm->to(dtype);
    {
      NoGradGuard no_grad;
      norm->weight.copy_(uniform({3}, 8));
      norm->bias.copy_(uniform({3}, 9));
    }
    Tensor x = uniform({2, 3, 4, 5}, 10, -1, 3, dtype).permute({0, 1, 3, 2});  // [2, 3, 5, 4]
    const testutil::Tolerance tol =
        dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-5};
    // Instance norm is group norm with one group per channel.
    EXPECT_TRUE(all_close(norm(x), group_norm_reference(x, 3, values(norm->weight), values(norm->bias), 1e-5), tol));
    const auto s = group_stats(x, 3);
    std::vector<double> mean(3, 0.0), var(3, 1.0 - 0.3);
    for (int n = 0; n < 2; ++n) {
      for (int c = 0; c < 3; ++c) {
        mean[c] += 0.3 * s.mean[n * 3 + c] / 2;
        var[c] += 0.3 * s.var[n * 3 + c] * 20.0 / 19.0 / 2;  // unbiased over the 20 positions
      }
    }
    EXPECT_TRUE(all_close(norm->running_mean, mean, tol));
    EXPECT_TRUE(all_close(norm->running_var, var, tol));
    // Eval mode normalises with the running stats.
    norm->eval();
    const auto xs = values(x), w = values(norm->weight), b = values(norm->bias);
    std::vector<double> expected;
    for (size_t i = 0; i < xs.size(); ++i) {
      const size_t c = (i / 20) % 3;
      expected.push_back((xs[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * w[c] + b[c]);
    }
    EXPECT_TRUE(all_close(norm(x), expected, tol));
    EXPECT_TRUE(all_close(norm->running_mean, mean, tol));
  }
  // Without running stats eval still uses the instance statistics; unbatched input.
  nn::InstanceNorm1d plain(3);
  plain->eval();
  Tensor x = uniform({3, 6}, 11);
  EXPECT_TRUE(all_close(plain(x), group_norm_reference(x.unsqueeze(0), 3, {1, 1, 1}, {0, 0, 0}, 1e-5)));
  EXPECT_EQ(plain->named_buffers().size(), 0u);
  nn::InstanceNorm3d tracked(nn::InstanceNormOptions(2).track_running_stats(true));
  EXPECT_EQ(tracked->named_buffers().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(tracked(empty({0, 2, 2, 2, 2})).sizes(), (std::vector<int64_t>{0, 2, 2, 2, 2}));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return F::instance_norm(in[0], F::InstanceNormFuncOptions().weight(in[1]).bias(in[2]).eps(1e-2));
      },
      {leaf(uniform({2, 3, 4}, 12)), leaf(uniform({3}, 13)), leaf(uniform({3}, 14))}, tight_gradcheck()));
  EXPECT_TRUE(throws_error(
      [&] {
        plain(zeros({2, 3, 4, 4}));
      },
      {"InstanceNorm1d", "2-d (unbatched) or 3-d", "[2, 3, 4, 4]"}));
  EXPECT_TRUE(throws_error(
      [] {
        F::instance_norm(zeros({2, 3, 1}));
      },
      {"instance_norm", "more than 1 position", "[2, 3, 1]"}));
  EXPECT_TRUE(throws_error(
      [] {
        F::instance_norm(zeros({2, 3, 4}), F::InstanceNormFuncOptions().use_input_stats(false));
      },
      {"instance_norm", "running_mean", "use_input_stats"}));
  EXPECT_TRUE(
      throws_error([] { nn::InstanceNorm2d(nn::InstanceNormOptions(0)); }, {"InstanceNorm2d", "num_features", "0"}));
}

}  // namespace
}  // namespace ember::nntest
