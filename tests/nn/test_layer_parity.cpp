// libtorch's layers and layer forms checked against values derived by hand: the padding
// layers, pooling layers built from a size, the `inplace` option of ReLU and Dropout,
// Hardtanh::reset, Embedding::from_pretrained, CrossMapLRN2d, AdaptiveLogSoftmaxWithLoss and
// the at:: forms layer_norm, group_norm, elu, max(x), min(x).
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;

Tensor row(std::vector<double> v, std::vector<int64_t> shape, ScalarType dtype = kFloat64) {
  return testutil::make(v, shape, dtype);
}

TEST(LayerParity, PaddingLayersPadLikeTheirModes) {
  const Tensor x = row({0, 1, 2, 3}, {1, 1, 4});
  EXPECT_TRUE(all_close(nn::ReflectionPad1d(2)(x), {2, 1, 0, 1, 2, 3, 2, 1}));
  EXPECT_TRUE(all_close(nn::ReplicationPad1d(nn::ReplicationPad1dOptions({1, 2}))(x), {0, 0, 1, 2, 3, 3, 3}));
  EXPECT_TRUE(all_close(nn::ConstantPad1d(nn::ConstantPad1dOptions({1, 0}, 3.5))(x), {3.5, 0, 1, 2, 3}));
  const Tensor square = row({0, 1, 2, 3}, {1, 1, 2, 2});
  // (left, right, top, bottom) = (1, 0, 0, 1)
  const Tensor zero_padded = nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 0, 0, 1}))(square);
  EXPECT_EQ(zero_padded.sizes(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_TRUE(all_close(zero_padded, {0, 0, 1, 0, 2, 3, 0, 0, 0}));
  const Tensor cube = nn::ReplicationPad3d(1)(row({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 2, 2}));
  EXPECT_EQ(cube.sizes(), (std::vector<int64_t>{1, 1, 4, 4, 4}));
  EXPECT_EQ(cube[0][0][0][0][0].item<double>(), 0);
  EXPECT_EQ(cube[0][0][3][3][3].item<double>(), 7);
  EXPECT_TRUE(all_close(nn::ConstantPad2d(nn::ConstantPad2dOptions(1, -1))(row({5}, {1, 1, 1})),
                        {-1, -1, -1, -1, 5, -1, -1, -1, -1}));
}

TEST(LayerParity, ReflectionPadGradientCountsEachSourceElement) {
  // Output reads sources [2, 1, 0, 1, 2, 3, 2, 1]: each source's gradient is its count.
  const Tensor x = leaf(row({0, 1, 2, 3}, {1, 1, 4}));
  nn::ReflectionPad1d(2)(x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {1, 3, 3, 1}));
  EXPECT_TRUE(throws_error([&] { nn::ReflectionPad1d(4)(x); }, {"pad", "reflect"}));
}

TEST(LayerParity, PoolingLayersTakeTheirSizeDirectly) {
  const Tensor x = row({1, 3, 2, 4}, {1, 1, 4});
  EXPECT_TRUE(all_close(nn::MaxPool1d(2)(x), {3, 4}));
  EXPECT_TRUE(all_close(nn::AvgPool1d(2)(x), {2, 3}));
  EXPECT_TRUE(all_close(nn::AdaptiveAvgPool1d(1)(x), {2.5}));
  EXPECT_TRUE(all_close(nn::AdaptiveMaxPool1d(1)(x), {4}));
  EXPECT_EQ(nn::MaxPool2d(2)(zeros({1, 1, 4, 6})).sizes(), (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(LayerParity, InplaceOptionWritesIntoTheInput) {
  const Tensor x = row({-1, 2}, {2});
  const Tensor y = nn::ReLU(true)(x);
  EXPECT_TRUE(all_close(x, {0, 2}));
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  const Tensor kept = row({-1, 2}, {2});
  EXPECT_TRUE(all_close(nn::ReLU()(kept), {0, 2}));
  EXPECT_TRUE(all_close(kept, {-1, 2}));

  const Tensor ones_in = ones({1000});
  const Tensor dropped = nn::Dropout(nn::DropoutOptions(0.5).inplace(true))(ones_in);
  EXPECT_EQ(dropped.data_ptr(), ones_in.data_ptr());
  for (double v : values(ones_in)) EXPECT_TRUE(v == 0 || v == 2) << v;
  const Tensor planes = ones({2, 3, 4, 4});
  nn::Dropout2d(nn::Dropout2dOptions(1.0).inplace(true))(planes);
  EXPECT_EQ(planes.abs().sum().item<double>(), 0);
}

TEST(LayerParity, HardtanhResetChecksChangedOptions) {
  nn::Hardtanh hardtanh(nn::HardtanhOptions().min_val(-0.5).max_val(0.5));
  hardtanh->options.min_val(0.5);
  EXPECT_TRUE(throws_error([&] { hardtanh->reset(); }, {"Hardtanh", "max_val", "min_val"}));
  hardtanh->options.min_val(-2);
  hardtanh->reset();
  EXPECT_TRUE(all_close(hardtanh(row({-3, 0.25, 3}, {3})), {-2, 0.25, 0.5}));
}

TEST(LayerParity, EmbeddingFromPretrainedUsesTheGivenWeight) {
  const Tensor weight = row({1, 2.5, 3, 4, 5, 6.5}, {2, 3});
  nn::Embedding frozen = nn::Embedding::from_pretrained(weight);
  EXPECT_FALSE(frozen->weight.requires_grad());
  EXPECT_EQ(frozen->options.num_embeddings(), 2);
  EXPECT_EQ(frozen->options.embedding_dim(), 3);
  EXPECT_TRUE(all_close(frozen(ember::tensor({1, 0}, kInt64)), {4, 5, 6.5, 1, 2.5, 3}));
  nn::Embedding trained =
      nn::Embedding::from_pretrained(weight, nn::EmbeddingFromPretrainedOptions().freeze(false).padding_idx(1));
  EXPECT_TRUE(trained->weight.requires_grad());
  trained(ember::tensor({0, 1, 1}, kInt64)).sum().backward();
  EXPECT_TRUE(all_close(trained->weight.grad(), {1, 1, 1, 0, 0, 0}));  // the padding row gets none
  EXPECT_TRUE(throws_error([] { nn::Embedding::from_pretrained(zeros({4})); }, {"from_pretrained", "2-D"}));
  EXPECT_TRUE(throws_error([&] { nn::Embedding(nn::EmbeddingOptions(3, 3)._weight(weight)); }, {"Embedding", "_weight"}));
}

TEST(LayerParity, AtenNormalisationForms) {
  // Rows [1, 2] and [3, 4] normalise to [-1, 1] (eps 0); weight [2, 3], bias [1, 1].
  const Tensor x = row({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(all_close(ember::layer_norm(x, {2}, row({2, 3}, {2}), row({1, 1}, {2}), 0), {-1, 4, -1, 4}));
  EXPECT_TRUE(all_close(ember::layer_norm(x, {2, 2}, {}, {}, 0),
                        {-3 / std::sqrt(5.0), -1 / std::sqrt(5.0), 1 / std::sqrt(5.0), 3 / std::sqrt(5.0)}));
  // Groups [1, 3] and [5, 9] of one sample normalise to [-1, 1] each.
  EXPECT_TRUE(all_close(ember::group_norm(row({1, 3, 5, 9}, {1, 4}), 2, {}, {}, 0), {-1, 1, -1, 1}));
}

TEST(LayerParity, AtenEluScalesBothSides) {
  const Tensor x = row({-2, 1}, {2});
  // scale * alpha * (exp(input_scale * x) - 1) for x <= 0, scale * x above.
  EXPECT_TRUE(all_close(ember::elu(x, 2, 3, 0.5), {6 * (std::exp(-1.0) - 1), 3}));
  EXPECT_TRUE(all_close(ember::elu(x), {std::exp(-2.0) - 1, 1}));
  EXPECT_TRUE(all_close(nn::Functional(ember::elu, 1, 0, 1)(ones({})), {0}));
}

TEST(LayerParity, MaxAndMinOfAllElements) {
  const Tensor x = row({3, -7, 5, 1}, {2, 2});
  EXPECT_EQ(ember::max(x).item<double>(), 5);
  EXPECT_EQ(ember::min(x).item<double>(), -7);
}

TEST(LayerParity, CrossMapLRN2dNormalisesAcrossNeighbouringChannels) {
  // Channels 1, 2, 3; size 3 windows hold squares {1, 4}, {1, 4, 9}, {4, 9}; with
  // alpha / size = 1, k = 1, beta = 1 the scales are 6, 15, 14.
  const Tensor x = row({1, 2, 3}, {1, 3, 1, 1});
  nn::CrossMapLRN2d lrn(nn::CrossMapLRN2dOptions(3).alpha(3).beta(1).k(1));
  EXPECT_TRUE(all_close(lrn(x), {1.0 / 6, 2.0 / 15, 3.0 / 14}));
  // size 4 looks one channel either side as size 3 does, and divides alpha by 4.
  nn::CrossMapLRN2d even(nn::CrossMapLRN2dOptions(4).alpha(4).beta(0.5).k(2));
  EXPECT_TRUE(all_close(even(x), {1 / std::sqrt(7.0), 2 / std::sqrt(16.0), 3 / std::sqrt(15.0)}));
  EXPECT_TRUE(gradients_match([&](const Tensor& t) { return lrn(t); }, leaf(uniform({2, 4, 2, 3}, 7))));
  EXPECT_TRUE(throws_error([&] { lrn(zeros({3, 2})); }, {"CrossMapLRN2d", "4-D"}));
}

TEST(LayerParity, AdaptiveLogSoftmaxMatchesAHandComputedTwoLevelSoftmax) {
  // 3 classes, shortlist {0}, one cluster {1, 2}; div_value 1 keeps the cluster's hidden size 2.
  nn::AdaptiveLogSoftmaxWithLoss asm_layer(nn::AdaptiveLogSoftmaxWithLossOptions(2, 3, {1}).div_value(1));
  asm_layer->to(kFloat64);
  EXPECT_EQ(asm_layer->head->weight.sizes(), (std::vector<int64_t>{2, 2}));
  {
    NoGradGuard no_grad;
    asm_layer->head->weight.copy_(row({1, 0, 0, 2}, {2, 2}));
    asm_layer->tail->ptr<nn::SequentialImpl>(0)->ptr<nn::LinearImpl>(0)->weight.copy_(row({1, 1, 0, 1}, {2, 2}));
    asm_layer->tail->ptr<nn::SequentialImpl>(0)->ptr<nn::LinearImpl>(1)->weight.copy_(row({1, 0, 0, -1}, {2, 2}));
  }
  const Tensor x = row({0.5, -0.25, 1, 1}, {2, 2});
  std::vector<double> expected;
  for (auto [a, b] : {std::pair{0.5, -0.25}, std::pair{1.0, 1.0}}) {
    const double h0 = a, h1 = 2 * b, head_norm = std::log(std::exp(h0) + std::exp(h1));
    const double c0 = a + b, c1 = -b, cluster_norm = std::log(std::exp(c0) + std::exp(c1));
    expected.insert(expected.end(), {h0 - head_norm, h1 - head_norm + c0 - cluster_norm, h1 - head_norm + c1 - cluster_norm});
  }
  const Tensor log_prob = asm_layer->log_prob(x);
  EXPECT_TRUE(all_close(log_prob, expected));
  const nn::ASMoutput out = asm_layer(x, ember::tensor({2, 0}, kInt64));
  EXPECT_TRUE(all_close(out.output, {expected[2], expected[3]}));
  EXPECT_NEAR(out.loss, -(expected[2] + expected[3]) / 2, 1e-12);
  const double first = expected[0] > std::max(expected[1], expected[2]) ? 0 : expected[1] > expected[2] ? 1 : 2;
  const double second = expected[3] > std::max(expected[4], expected[5]) ? 0 : expected[4] > expected[5] ? 1 : 2;
  EXPECT_TRUE(all_close(asm_layer->predict(x), {first, second}));
  EXPECT_TRUE(all_close(asm_layer(x[1], ember::tensor(1, kInt64)).output, {expected[4]}));
  EXPECT_TRUE(throws_error([&] { asm_layer(x, ember::tensor({0, 3}, kInt64)); }, {"AdaptiveLogSoftmaxWithLoss", "[0, 2]"}));
  EXPECT_TRUE(throws_error([] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(4, 5, {3, 2})); }, {"cutoffs"}));
  EXPECT_TRUE(throws_error([] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(4, 5, {5})); }, {"cutoffs"}));
}

TEST(LayerParity, AdaptiveLogSoftmaxNamesAndSizesItsClusters) {
  nn::AdaptiveLogSoftmaxWithLoss asm_layer(nn::AdaptiveLogSoftmaxWithLossOptions(16, 20, {4, 10, 15}).div_value(2));
  const auto params = asm_layer->named_parameters();
  EXPECT_EQ(params["head.weight"].sizes(), (std::vector<int64_t>{7, 16}));  // 4 classes + 3 clusters
  EXPECT_EQ(params["tail.0.0.weight"].sizes(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(params["tail.0.1.weight"].sizes(), (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(params["tail.2.0.weight"].sizes(), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(params["tail.2.1.weight"].sizes(), (std::vector<int64_t>{5, 2}));
  const Tensor probabilities = asm_layer->log_prob(uniform({5, 16}, 3, -1, 1, kFloat32)).exp().sum(1);
  EXPECT_TRUE(all_close(probabilities, {1, 1, 1, 1, 1}, {1e-5, 1e-5}));
}

}  // namespace
}  // namespace ember::nntest
