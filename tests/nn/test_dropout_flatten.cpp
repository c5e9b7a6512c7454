// Dropout1d/3d (channel masks: every value of a channel kept and scaled by 1/(1-p) or zeroed,
// the dropped fraction within a binomial bound of p), Identity, Flatten and Unflatten (shapes
// and values against the row-major layout, errors).
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace F = ember::nn::functional;
using Sizes = std::vector<int64_t>;

// Checks that `out` is `in` times one mask value per channel (0 or 1/(1-p)), where a channel
// is `channel_size` consecutive values; returns how many channels were dropped.
int64_t check_channel_mask(const Tensor& in, const Tensor& out, int64_t channel_size, double p) {
  const auto x = values(in), y = values(out);
  int64_t dropped = 0;
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(channel_size)) {
    const bool zero = y[start] == 0;
    dropped += zero;
    for (size_t i = start; i < start + static_cast<size_t>(channel_size); ++i) {
      EXPECT_DOUBLE_EQ(y[i], zero ? 0.0 : x[i] / (1 - p)) << "value " << i;
    }
  }
  return dropped;
}

// The dropped fraction of `channels` independent Bernoulli(p) draws lies within 5 standard
// deviations, sqrt(p (1 - p) / channels), of p (a false failure has probability < 1e-6).
void expect_binomial_fraction(int64_t dropped, int64_t channels, double p) {
  const double fraction = static_cast<double>(dropped) / static_cast<double>(channels);
  EXPECT_NEAR(fraction, p, 5 * std::sqrt(p * (1 - p) / static_cast<double>(channels)))
      << dropped << " of " << channels;
}

TEST(Dropout1d, ZeroesWholeChannelsAtRateP) {
  manual_seed(11);
  const double p = 0.3;
  Tensor input = leaf(uniform({64, 32, 5}, 1, 0.5, 1.5));
  Tensor out = F::dropout1d(input, F::Dropout1dFuncOptions().p(p));
  expect_binomial_fraction(check_channel_mask(input, out, 5, p), 64 * 32, p);
  // The gradient is the mask.
  out.sum().backward();
  const auto g = values(input.grad()), y = values(out);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_DOUBLE_EQ(g[i], y[i] == 0 ? 0.0 : 1 / (1 - p));

  // Unbatched [C, L]: one draw per channel.
  const Tensor unbatched = uniform({400, 3}, 2, 1, 2);
  nn::Dropout1d module(nn::Dropout1dOptions(0.6));
  expect_binomial_fraction(check_channel_mask(unbatched, module(unbatched), 3, 0.6), 400, 0.6);
  module->eval();
  EXPECT_TRUE(all_close(module(unbatched), values(unbatched)));
  std::ostringstream printed;
  module->pretty_print(printed);
  EXPECT_EQ(printed.str(), "ember::nn::Dropout1d(p=0.6, inplace=false)");
}

TEST(Dropout3d, ZeroesWholeVolumesAtRateP) {
  manual_seed(12);
  const double p = 0.5;
  const Tensor input = uniform({32, 40, 2, 3, 2}, 3, 0.5, 1.5);
  nn::Dropout3d module(p);
  expect_binomial_fraction(check_channel_mask(input, module(input), 12, p), 32 * 40, p);
  const Tensor unbatched = uniform({300, 2, 2, 2}, 4, 0.5, 1.5);
  expect_binomial_fraction(check_channel_mask(unbatched, F::dropout3d(unbatched, F::Dropout3dFuncOptions().p(0.2)),
                                              8, 0.2),
                           300, 0.2);
  module->eval();
  EXPECT_TRUE(all_close(module(input), values(input)));
  EXPECT_TRUE(all_close(F::dropout3d(input, F::Dropout3dFuncOptions().training(false)), values(input)));
  EXPECT_TRUE(all_close(F::dropout3d(input, F::Dropout3dFuncOptions().p(0)), values(input)));
  EXPECT_TRUE(all_close(F::dropout3d(input, F::Dropout3dFuncOptions().p(1)), std::vector<double>(input.numel(), 0.0)));
}

TEST(DropoutNd, OtherRanksDropPerSampleAndChannel) {
  // dropout2d of a 2-d input [N, C] drops single values, of a 5-d input [N, C, a, b, c] whole
  // [a, b, c] blocks (PyTorch's feature dropout on [N, C, ...]).
  manual_seed(21);
  const Tensor matrix = uniform({200, 30}, 7, 0.5, 1.5);
  expect_binomial_fraction(check_channel_mask(matrix, F::dropout2d(matrix, F::Dropout2dFuncOptions().p(0.4)), 1, 0.4),
                           200 * 30, 0.4);
  const Tensor volume = uniform({20, 30, 2, 2, 3}, 8, 0.5, 1.5);
  expect_binomial_fraction(check_channel_mask(volume, F::dropout2d(volume, F::Dropout2dFuncOptions().p(0.3)), 12, 0.3),
                           20 * 30, 0.3);
  // inplace writes the masked values into the input.
  Tensor x = uniform({40, 50}, 9, 0.5, 1.5);
  const auto before = values(x);
  Tensor y = F::dropout2d(x, F::Dropout2dFuncOptions().p(0.5).inplace(true));
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  const auto after = values(x);
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i] == 0 || after[i] == 2 * before[i]) << i;
}

TEST(DropoutNd, SameSeedSameMask) {
  const Tensor input = uniform({4, 16, 6}, 5);
  manual_seed(3);
  const auto first = values(F::dropout1d(input));
  manual_seed(3);
  EXPECT_TRUE(all_close(F::dropout1d(input), first));
}

TEST(DropoutNd, Errors) {
  EXPECT_TRUE(throws_error([] { nn::Dropout1d(nn::Dropout1dOptions(-0.1)); }, {"[Dropout1d]", "-0.1"}));
  EXPECT_TRUE(throws_error([] { nn::Dropout3d(nn::Dropout3dOptions(1.5)); }, {"[Dropout3d]", "1.5"}));
  EXPECT_TRUE(throws_error([] { F::dropout1d(zeros({2, 3, 4, 5})); }, {"[dropout1d]", "4 dimensions", "[2, 3, 4, 5]"}));
  EXPECT_TRUE(throws_error([] { F::dropout3d(zeros({6})); }, {"[dropout3d]", "at least 2 dimensions", "[6]"}));
  EXPECT_TRUE(throws_error([] { F::dropout3d(zeros({2, 3, 4, 5}), F::Dropout3dFuncOptions().p(2)); },
                           {"[dropout3d]", "between 0 and 1", "2"}));
}

TEST(Identity, ReturnsItsInput) {
  nn::Identity identity;
  const Tensor x = uniform({2, 3}, 6);
  EXPECT_TRUE(identity(x).is_same(x));
  std::ostringstream printed;
  identity->pretty_print(printed);
  EXPECT_EQ(printed.str(), "ember::nn::Identity()");
}

TEST(Flatten, ShapesAndValues) {
  const Tensor x = uniform({2, 3, 4, 5}, 7);
  nn::Flatten flatten;
  const Tensor y = flatten(x);
  EXPECT_EQ(y.sizes(), (Sizes{2, 60}));
  EXPECT_TRUE(all_close(y, values(x)));  // row-major order is kept
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(-2))(x).sizes(), (Sizes{24, 5}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(2))(x).sizes(), (Sizes{2, 3, 20}));
  EXPECT_EQ(flatten(zeros({0, 3, 2})).sizes(), (Sizes{0, 6}));
  // Gradients flow back in the input's shape.
  Tensor leaf_x = leaf(x);
  flatten(leaf_x).mul(2).sum().backward();
  EXPECT_EQ(leaf_x.grad().sizes(), x.sizes());
  EXPECT_TRUE(all_close(leaf_x.grad(), std::vector<double>(x.numel(), 2.0)));
  EXPECT_TRUE(throws_error([&] { nn::Flatten(nn::FlattenOptions().start_dim(3).end_dim(1))(x); },
                           {"[flatten]", "start_dim 3", "end_dim 1"}));
  EXPECT_TRUE(throws_error([&] { nn::Flatten(nn::FlattenOptions().start_dim(4))(x); }, {"[flatten]", "4"}));
}

TEST(Unflatten, ShapesAndValues) {
  const Tensor x = uniform({2, 12}, 8);
  nn::Unflatten unflatten(nn::UnflattenOptions(1, {3, 4}));
  const Tensor y = unflatten(x);
  EXPECT_EQ(y.sizes(), (Sizes{2, 3, 4}));
  EXPECT_TRUE(all_close(y, values(x)));
  EXPECT_EQ(nn::Unflatten(nn::UnflattenOptions(-1, {2, -1, 3}))(x).sizes(), (Sizes{2, 2, 2, 3}));
  EXPECT_EQ(nn::Unflatten(0, Sizes{1, 2})(x).sizes(), (Sizes{1, 2, 12}));
  // Flatten undoes Unflatten.
  EXPECT_TRUE(all_close(nn::Flatten()(y), values(x)));
  std::ostringstream printed;
  unflatten->pretty_print(printed);
  EXPECT_EQ(printed.str(), "ember::nn::Unflatten(dim=1, unflattened_size={3, 4})");
  EXPECT_TRUE(throws_error([&] { nn::Unflatten(1, Sizes{5, -1})(x); }, {"[unflatten]", "12"}));
  EXPECT_TRUE(throws_error([&] { nn::Unflatten(2, Sizes{3, 4})(x); }, {"[unflatten]", "2"}));
  EXPECT_TRUE(throws_error([] { nn::Unflatten(1, Sizes{}); }, {"[Unflatten]", "sizes must be non-empty"}));
}

}  // namespace
}  // namespace ember::nntest
