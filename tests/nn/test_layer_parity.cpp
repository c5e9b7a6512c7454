// libtorch's layers and layer forms checked against values derived by hand: the padding
// layers, pooling layers built from a size, the `inplace` option of ReLU and Dropout,
// Hardtanh::reset, Embedding::from_pretrained, CrossMapLRN2d, AdaptiveLogSoftmaxWithLoss, the
// activation, loss and distance layers over their F:: forms, and the at:: forms layer_norm,
// group_norm, elu, pairwise_distance, cosine_similarity, max(x), min(x).
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
  EXPECT_TRUE(
      throws_error([&] { nn::Embedding(nn::EmbeddingOptions(3, 3)._weight(weight)); }, {"Embedding", "_weight"}));
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
    expected.insert(expected.end(),
                    {h0 - head_norm, h1 - head_norm + c0 - cluster_norm, h1 - head_norm + c1 - cluster_norm});
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
  EXPECT_TRUE(
      throws_error([&] { asm_layer(x, ember::tensor({0, 3}, kInt64)); }, {"AdaptiveLogSoftmaxWithLoss", "[0, 2]"}));
  using Options = nn::AdaptiveLogSoftmaxWithLossOptions;
  EXPECT_TRUE(throws_error([] { nn::AdaptiveLogSoftmaxWithLoss(Options(4, 5, {3, 2})); }, {"cutoffs"}));
  EXPECT_TRUE(throws_error([] { nn::AdaptiveLogSoftmaxWithLoss(Options(4, 5, {5})); }, {"cutoffs"}));
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

TEST(LayerParity, ActivationLayersMatchTheirFormulas) {
  const std::vector<double> xs{-2, -0.25, 0.25, 2};
  const Tensor x = row(xs, {4});
  auto map = [&](auto f) {
    std::vector<double> out;
    for (double v : xs) out.push_back(f(v));
    return out;
  };
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  EXPECT_TRUE(all_close(nn::SELU()(x), map([&](double v) { return scale * (v > 0 ? v : alpha * std::expm1(v)); })));
  EXPECT_TRUE(all_close(nn::CELU(nn::CELUOptions().alpha(2))(x),
                        map([](double v) { return v > 0 ? v : 2 * std::expm1(v / 2); })));
  EXPECT_TRUE(all_close(nn::Hardshrink()(x), {-2, 0, 0, 2}));
  EXPECT_TRUE(all_close(nn::Softshrink(nn::SoftshrinkOptions(0.2))(x), {-1.8, -0.05, 0.05, 1.8}));
  EXPECT_TRUE(all_close(nn::LogSigmoid()(x), map([](double v) { return -std::log1p(std::exp(-v)); })));
  EXPECT_TRUE(all_close(nn::Softsign()(x), map([](double v) { return v / (1 + std::abs(v)); })));
  EXPECT_TRUE(all_close(nn::Tanhshrink()(x), map([](double v) { return v - std::tanh(v); })));
  EXPECT_TRUE(all_close(nn::Softmin(0)(row({1, 2}, {2})),
                        {1 / (1 + std::exp(-1.0)), std::exp(-1.0) / (1 + std::exp(-1.0))}));
  const Tensor y = row(xs, {4});
  nn::Threshold threshold(nn::ThresholdOptions(0.1, 20).inplace(true));
  threshold(y);
  EXPECT_TRUE(all_close(y, {20, 20, 0.25, 2}));
  // RReLU: the mean slope in eval mode, a slope drawn from [lower, upper] in training.
  nn::RReLU rrelu(nn::RReLUOptions().lower(0.1).upper(0.3));
  rrelu->eval();
  EXPECT_TRUE(all_close(rrelu(x), {-0.4, -0.05, 0.25, 2}));
  rrelu->train();
  const std::vector<double> drawn = values(rrelu(x));
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(drawn[i] >= 0.3 * xs[i] && drawn[i] <= 0.1 * xs[i]) << drawn[i];
  EXPECT_EQ(drawn[3], 2);
}

TEST(LayerParity, LossLayersMatchHandValues) {
  EXPECT_NEAR(nn::HingeEmbeddingLoss()(row({0.3, 2}, {2}), row({1, -1}, {2})).item<double>(), 0.15, 1e-12);
  const double soft = (std::log1p(std::exp(-0.5)) + std::log1p(std::exp(-2.0))) / 2;
  EXPECT_NEAR(nn::SoftMarginLoss()(row({0.5, -2}, {2}), row({1, -1}, {2})).item<double>(), soft, 1e-12);
  // sum over j != 3 of max(0, 1 - x_3 + x_j) / C = (0.3 + 0.4 + 0.6) / 4, times weight[3] = 2.
  const Tensor scores = row({0.1, 0.2, 0.4, 0.8}, {1, 4});
  nn::MultiMarginLoss multi_margin(nn::MultiMarginLossOptions().weight(row({1, 1, 1, 2}, {4})));
  EXPECT_NEAR(multi_margin(scores, ember::tensor({3}, kInt64)).item<double>(), 0.65, 1e-12);
  EXPECT_TRUE(multi_margin->named_buffers().contains("weight"));
  // Targets 3 and 0 (up to the first -1) against classes 1 and 2:
  // (0.4 + 0.6 + 1.1 + 1.3) / 4 = 0.85.
  EXPECT_NEAR(nn::MultiLabelMarginLoss()(scores, ember::tensor({3, 0, -1, 1}, kInt64).reshape({1, 4})).item<double>(),
              0.85, 1e-12);
  const double multilabel_soft = (std::log(2.0) + std::log1p(std::exp(1.0))) / 2;
  EXPECT_NEAR(nn::MultiLabelSoftMarginLoss()(row({0, 1}, {1, 2}), row({1, 0}, {1, 2})).item<double>(),
              multilabel_soft, 1e-12);
  const double poisson = ((std::exp(0.5) - 1 * 0.5) + (std::exp(1.5) - 2 * 1.5)) / 2;
  EXPECT_NEAR(nn::PoissonNLLLoss()(row({0.5, 1.5}, {2}), row({1, 2}, {2})).item<double>(), poisson, 1e-12);
  // Pairwise distances add eps = 1e-6 to the difference.
  const double eps = 1e-6, to_positive = std::hypot(-3 + eps, -4 + eps), to_negative = std::hypot(eps, -1 + eps);
  EXPECT_NEAR(nn::TripletMarginWithDistanceLoss()(row({0, 0}, {1, 2}), row({3, 4}, {1, 2}), row({0, 1}, {1, 2}))
                  .item<double>(),
              to_positive - to_negative + 1, 1e-12);
}

TEST(LayerParity, DistanceLayers) {
  EXPECT_TRUE(all_close(nn::CosineSimilarity()(row({1, 0}, {1, 2}), row({1, 1}, {1, 2})), {1 / std::sqrt(2.0)}));
  nn::PairwiseDistance l1_distance(nn::PairwiseDistanceOptions().p(1));
  EXPECT_TRUE(all_close(l1_distance(row({1, 2}, {1, 2}), row({4, 0}, {1, 2})), {5}));
  EXPECT_TRUE(all_close(ember::pairwise_distance(row({1, 2}, {1, 2}), row({4, 0}, {1, 2}), 1), {5}));
  EXPECT_TRUE(all_close(ember::cosine_similarity(row({1, 0}, {1, 2}), row({0, 1}, {1, 2})), {0}));
}

TEST(LayerParity, UnpoolingAndLpPoolingLayers) {
  const Tensor x = row({1, 3, 2, 4}, {1, 1, 4});
  auto [pooled, indices] = nn::MaxPool1d(2)->forward_with_indices(x);
  nn::MaxUnpool1d unpool(2);
  EXPECT_TRUE(all_close(unpool(pooled, indices), {0, 3, 0, 4}));
  EXPECT_EQ(unpool(pooled, indices, std::vector<int64_t>{1, 1, 5}).sizes(), (std::vector<int64_t>{1, 1, 5}));
  // sqrt(3^2 + 4^2), sqrt(6^2 + 8^2)
  EXPECT_TRUE(all_close(nn::LPPool1d(2, 2)(row({3, 4, 6, 8}, {1, 1, 4})), {5, 10}));
  EXPECT_TRUE(all_close(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_size(2))(ones({1, 1, 5, 5})),
                        {1, 1, 1, 1}));
  EXPECT_TRUE(throws_error([] { nn::FractionalMaxPool2d(2); }, {"FractionalMaxPool2d", "output size"}));
  EXPECT_TRUE(throws_error([] { nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_ratio(1.5)); },
                           {"FractionalMaxPool2d", "between 0 and 1"}));
}

TEST(LayerParity, FoldAndShuffleLayersRearrange) {
  const Tensor image = row({0, 1, 2, 3}, {1, 1, 2, 2});
  const Tensor columns = nn::Unfold(2)(image);
  EXPECT_EQ(columns.sizes(), (std::vector<int64_t>{1, 4, 1}));
  EXPECT_TRUE(all_close(columns, {0, 1, 2, 3}));
  EXPECT_TRUE(all_close(nn::Fold(nn::FoldOptions({2, 2}, {2, 2}))(columns), {0, 1, 2, 3}));
  const std::vector<int64_t> kernel{1, 2};  // sizes also come as an IntArrayRef, as in libtorch
  EXPECT_EQ(nn::Unfold(IntArrayRef(kernel))(image).sizes(), (std::vector<int64_t>{1, 2, 2}));
  const Tensor channels = row({0, 1, 2, 3}, {1, 4, 1, 1});
  const Tensor shuffled = nn::PixelShuffle(2)(channels);
  EXPECT_EQ(shuffled.sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_TRUE(all_close(shuffled, {0, 1, 2, 3}));
  EXPECT_EQ(nn::PixelUnshuffle(2)(shuffled).sizes(), (std::vector<int64_t>{1, 4, 1, 1}));
}

TEST(LayerParity, LocalResponseNormAveragesTheWindowBeforeEachChannel) {
  // size 2: channel 0 sees (0 + 1) / 2, channel 1 sees (1 + 4) / 2; alpha = beta = k = 1.
  nn::LocalResponseNorm lrn(nn::LocalResponseNormOptions(2).alpha(1).beta(1).k(1));
  EXPECT_TRUE(all_close(lrn(row({1, 2}, {1, 2, 1, 1})), {1 / 1.5, 2 / 3.5}));
}

TEST(LayerParity, BilinearAndEmbeddingBagLayers) {
  nn::Bilinear bilinear(2, 2, 1);
  EXPECT_EQ(bilinear->weight.sizes(), (std::vector<int64_t>{1, 2, 2}));
  bilinear->to(kFloat64);
  {
    NoGradGuard no_grad;
    bilinear->weight.copy_(row({1, 2, 3, 4}, {1, 2, 2}));
    bilinear->bias.fill_(0.5);
  }
  // x1^T W x2 + b = [1, 1] [[1, 2], [3, 4]] [1, 0]^T + 0.5
  EXPECT_TRUE(all_close(bilinear(row({1, 1}, {1, 2}), row({1, 0}, {1, 2})), {4.5}));
  EXPECT_FALSE(nn::Bilinear(nn::BilinearOptions(2, 3, 4).bias(false))->bias.defined());

  const Tensor table = row({1, 2, 3, 4, 5, 6}, {3, 2});
  nn::EmbeddingBag mean_bag = nn::EmbeddingBag::from_pretrained(table);
  EXPECT_FALSE(mean_bag->weight.requires_grad());
  EXPECT_TRUE(all_close(mean_bag(ember::tensor({0, 2}, kInt64).reshape({1, 2})), {3, 4}));
  nn::EmbeddingBag sum_bag = nn::EmbeddingBag::from_pretrained(
      table, nn::EmbeddingBagFromPretrainedOptions().mode(kSum).freeze(false));
  EXPECT_TRUE(sum_bag->weight.requires_grad());
  EXPECT_TRUE(all_close(sum_bag(ember::tensor({0, 2, 1}, kInt64), ember::tensor({0, 2}, kInt64)), {6, 8, 3, 4}));
  EXPECT_EQ(nn::EmbeddingBag(10, 3)->weight.sizes(), (std::vector<int64_t>{10, 3}));
}

TEST(LayerParity, AlphaDropoutLayersAreTheIdentityInEval) {
  const Tensor x = row({-1, 0.5, 2}, {1, 3});
  nn::AlphaDropout alpha(0.5);
  alpha->eval();
  EXPECT_TRUE(all_close(alpha(x), {-1, 0.5, 2}));
  nn::FeatureAlphaDropout feature(0.5);
  feature->eval();
  EXPECT_TRUE(all_close(feature(x), {-1, 0.5, 2}));
  alpha->train();
  EXPECT_EQ(alpha(ones({100})).sizes(), (std::vector<int64_t>{100}));
  EXPECT_TRUE(throws_error([] { nn::AlphaDropout(1.5); }, {"AlphaDropout", "between 0 and 1"}));
}

}  // namespace
}  // namespace ember::nntest
