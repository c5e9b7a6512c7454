// Linear, Embedding, LayerNorm, RMSNorm, Dropout and activations: forward against float64
// references written here, gradients by gradcheck, PyTorch's default initialisation.
#include <cfloat>
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// y[r, o] = sum_k x[r, k] * w[o, k] + b[o] for x viewed as rows of in_features.
std::vector<double> linear_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::vector<double> xv = values(x), wv = values(w);
  const std::vector<double> bv = b.defined() ? values(b) : std::vector<double>(w.size(0), 0.0);
  const int64_t in = w.size(1), out = w.size(0), rows = x.numel() / in;
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = bv[o];
      for (int64_t k = 0; k < in; ++k) acc += xv[r * in + k] * wv[o * in + k];
      y.push_back(acc);
    }
  }
  return y;
}

// Mean, standard deviation and max |value| of a tensor's elements.
struct Stats {
  double mean, std, max_abs;
};
Stats stats(const Tensor& t) {
  const auto v = values(t);
  double sum = 0, max_abs = 0;
  for (double x : v) {
    sum += x;
    max_abs = std::max(max_abs, std::abs(x));
  }
  const double mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size())), max_abs};
}

// ---- Linear -------------------------------------------------------------------------------

TEST(Linear, ForwardMatchesReference) {
  manual_seed(0);
  nn::Linear lin(nn::LinearOptions(4, 3));
  lin->to(kFloat64);
  Tensor x = uniform({2, 5, 4}, 1);
  Tensor y = lin->forward(x);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_TRUE(all_close(y, linear_reference(x, lin->weight, lin->bias)));
  // Non-contiguous input: a transposed view.
  Tensor xt = uniform({4, 6}, 2).t();
  EXPECT_TRUE(all_close(lin(xt), linear_reference(xt.contiguous(), lin->weight, lin->bias)));
  // Empty batch.
  EXPECT_EQ(lin->forward(zeros({0, 4}, kFloat64)).sizes(), (std::vector<int64_t>{0, 3}));
}

TEST(Linear, WithoutBias) {
  nn::Linear lin(nn::LinearOptions(3, 2).bias(false));
  EXPECT_FALSE(lin->bias.defined());
  EXPECT_EQ(lin->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  Tensor x = uniform({5, 3}, 3, -1, 1, kFloat32);
  EXPECT_TRUE(all_close(lin->forward(x), linear_reference(x, lin->weight, {}), {1e-5, 1e-5}));
}

TEST(Linear, Float32AndBFloat16CloseToFloat64) {
  nn::Linear lin(8, 5);
  Tensor x = uniform({3, 8}, 4, -1, 1, kFloat32);
  const auto expected = linear_reference(x, lin->weight, lin->bias);
  EXPECT_TRUE(all_close(lin->forward(x), expected, {1e-5, 1e-5}));
  lin->to(kBFloat16);
  EXPECT_EQ(lin->forward(x.to(kBFloat16)).scalar_type(), kBFloat16);
  EXPECT_TRUE(all_close(lin->forward(x.to(kBFloat16)), expected, {3e-2, 3e-2}));
}

TEST(Linear, Gradcheck) {
  nn::Linear lin(3, 2);
  lin->to(kFloat64);
  Tensor x = leaf(uniform({4, 3}, 5));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::linear(in[0], in[1], in[2]); },
                              {x, lin->weight, lin->bias}, tight_gradcheck()));
}

TEST(Linear, DefaultInitIsKaimingUniformWithSqrt5) {
  manual_seed(7);
  nn::Linear lin(64, 256);
  const double bound = 1 / std::sqrt(64.0);  // gain sqrt(1/3) * sqrt(3 / fan_in)
  Stats w = stats(lin->weight), b = stats(lin->bias);
  EXPECT_LE(w.max_abs, bound);
  EXPECT_GT(w.max_abs, 0.99 * bound);
  EXPECT_NEAR(w.std, bound / std::sqrt(3.0), 0.02 * bound);
  EXPECT_NEAR(w.mean, 0, 0.02 * bound);
  EXPECT_LE(b.max_abs, bound);
  EXPECT_GT(b.max_abs, 0.9 * bound);
}

// ---- Embedding ---------------------------------------------------------------------------

TEST(Embedding, ForwardAndBackwardWithPadding) {
  manual_seed(1);
  nn::Embedding embed(nn::EmbeddingOptions(5, 3).padding_idx(-1));  // row 4
  EXPECT_EQ(*embed->options.padding_idx(), 4);
  EXPECT_TRUE(all_close(embed->weight[4], {0, 0, 0}, {0, 0}));
  embed->to(kFloat64);
  Tensor indices = tensor({1, 4, 1, 0, 2, 4}).view({2, 3});
  Tensor out = embed->forward(indices);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 3, 3}));
  const auto w = values(embed->weight);
  const auto idx = values(indices);
  std::vector<double> expected;
  for (double i : idx) {
    for (int d = 0; d < 3; ++d) expected.push_back(w[static_cast<size_t>(i) * 3 + d]);
  }
  EXPECT_TRUE(all_close(out, expected, {0, 0}));

  Tensor upstream = uniform({2, 3, 3}, 9);
  (out * upstream).sum().backward();
  // Row r's gradient sums the upstream rows that looked it up; the padding row gets none.
  const auto g = values(upstream);
  std::vector<double> expected_grad(15, 0.0);
  for (size_t n = 0; n < idx.size(); ++n) {
    if (idx[n] == 4) continue;
    for (int d = 0; d < 3; ++d) expected_grad[static_cast<size_t>(idx[n]) * 3 + d] += g[n * 3 + d];
  }
  EXPECT_TRUE(all_close(embed->weight.grad(), expected_grad));
}

TEST(Embedding, DefaultInitIsStandardNormal) {
  manual_seed(2);
  nn::Embedding embed(200, 64);
  Stats s = stats(embed->weight);
  EXPECT_NEAR(s.mean, 0, 0.02);
  EXPECT_NEAR(s.std, 1, 0.02);
  EXPECT_TRUE(throws_error([] { nn::Embedding(nn::EmbeddingOptions(3, 2).padding_idx(3)); }, {"padding_idx", "3"}));
}

// ---- normalisation ------------------------------------------------------------------------

// (x - mean) / sqrt(var + eps) * w + b over rows of `width` elements (biased variance).
std::vector<double> layer_norm_reference(const std::vector<double>& x, int64_t width, const std::vector<double>& w,
                                         const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / width; ++r) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < width; ++k) mean += x[r * width + k];
    mean /= static_cast<double>(width);
    for (int64_t k = 0; k < width; ++k) var += (x[r * width + k] - mean) * (x[r * width + k] - mean);
    var /= static_cast<double>(width);
    for (int64_t k = 0; k < width; ++k)
      y[r * width + k] = (x[r * width + k] - mean) / std::sqrt(var + eps) * (w.empty() ? 1 : w[k]) + (b.empty() ? 0 : b[k]);
  }
  return y;
}

std::vector<double> rms_norm_reference(const std::vector<double>& x, int64_t width, const std::vector<double>& w,
                                       double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / width; ++r) {
    double ms = 0;
    for (int64_t k = 0; k < width; ++k) ms += x[r * width + k] * x[r * width + k];
    ms /= static_cast<double>(width);
    for (int64_t k = 0; k < width; ++k) y[r * width + k] = x[r * width + k] / std::sqrt(ms + eps) * (w.empty() ? 1 : w[k]);
  }
  return y;
}

TEST(LayerNorm, ForwardOverTrailingDims) {
  nn::LayerNorm norm(nn::LayerNormOptions({2, 3}).eps(1e-3));
  norm->to(kFloat64);
  EXPECT_TRUE(all_close(norm->weight, std::vector<double>(6, 1.0), {0, 0}));
  EXPECT_TRUE(all_close(norm->bias, std::vector<double>(6, 0.0), {0, 0}));
  {
    NoGradGuard no_grad;
    norm->weight.copy_(uniform({2, 3}, 1));
    norm->bias.copy_(uniform({2, 3}, 2));
  }
  Tensor x = uniform({4, 2, 3}, 3, -2, 3);
  EXPECT_TRUE(all_close(norm->forward(x), layer_norm_reference(values(x), 6, values(norm->weight), values(norm->bias), 1e-3)));
  // A permuted (non-contiguous) input.
  Tensor xp = uniform({2, 3, 4}, 4).permute({2, 0, 1});
  EXPECT_TRUE(all_close(norm(xp), layer_norm_reference(values(xp), 6, values(norm->weight), values(norm->bias), 1e-3)));
  EXPECT_TRUE(throws_error([&] { norm->forward(zeros({4, 3, 2}, kFloat64)); }, {"layer_norm", "[2, 3]", "[4, 3, 2]"}));
}

TEST(LayerNorm, OptionsWithoutAffineOrBias) {
  nn::LayerNorm plain(nn::LayerNormOptions({4}).elementwise_affine(false));
  EXPECT_TRUE(plain->parameters().empty());
  nn::LayerNorm no_bias(nn::LayerNormOptions({4}).bias(false));
  EXPECT_EQ(no_bias->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  Tensor x = uniform({3, 4}, 5, -1, 1, kFloat32);
  EXPECT_TRUE(all_close(plain->forward(x), layer_norm_reference(values(x), 4, {}, {}, 1e-5), {1e-5, 1e-5}));
}

TEST(LayerNorm, BFloat16ComputesInFloat32) {
  nn::LayerNorm norm(nn::LayerNormOptions({16}));
  norm->to(kBFloat16);
  Tensor x = uniform({3, 16}, 6, -4, 4, kBFloat16);
  Tensor y = norm->forward(x);
  EXPECT_EQ(y.scalar_type(), kBFloat16);
  EXPECT_TRUE(all_close(y, layer_norm_reference(values(x), 16, {}, {}, 1e-5), {1e-2, 1e-2}));
}

TEST(LayerNorm, Gradcheck) {
  Tensor x = leaf(uniform({3, 5}, 7));
  Tensor w = leaf(uniform({5}, 8));
  Tensor b = leaf(uniform({5}, 9));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return F::layer_norm(in[0], F::LayerNormFuncOptions({5}).weight(in[1]).bias(in[2]));
      },
      {x, w, b}, tight_gradcheck()));
}

TEST(RMSNorm, ForwardWithDefaultAndExplicitEps) {
  nn::RMSNorm norm(nn::RMSNormOptions({4}));
  Tensor tiny = uniform({3, 4}, 10, -1e-4, 1e-4, kFloat32);  // eps dominates mean(x^2)
  EXPECT_TRUE(all_close(norm->forward(tiny), rms_norm_reference(values(tiny), 4, {}, FLT_EPSILON), {1e-5, 1e-7}));
  norm->to(kFloat64);
  {
    NoGradGuard no_grad;
    norm->weight.copy_(uniform({4}, 11));
  }
  Tensor x = uniform({2, 3, 4}, 12);
  EXPECT_TRUE(all_close(norm->forward(x), rms_norm_reference(values(x), 4, values(norm->weight), DBL_EPSILON)));
  nn::RMSNorm explicit_eps(nn::RMSNormOptions({4}).eps(0.5).elementwise_affine(false));
  EXPECT_TRUE(explicit_eps->parameters().empty());
  EXPECT_TRUE(all_close(explicit_eps->forward(x), rms_norm_reference(values(x), 4, {}, 0.5)));
}

TEST(RMSNorm, Gradcheck) {
  Tensor x = leaf(uniform({3, 4}, 13));
  Tensor w = leaf(uniform({4}, 14));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return F::rms_norm(in[0], F::RMSNormFuncOptions({4}).weight(in[1]).eps(1e-3));
      },
      {x, w}, tight_gradcheck()));
}

// ---- dropout -------------------------------------------------------------------------------

TEST(Dropout, TrainDropsAndScalesEvalIsIdentity) {
  manual_seed(5);
  nn::Dropout drop(nn::DropoutOptions(0.3));
  Tensor x = ones({20000}, kFloat64);
  const auto y = values(drop->forward(x));
  int64_t dropped = 0;
  for (double v : y) {
    if (v == 0) {
      ++dropped;
    } else {
      EXPECT_DOUBLE_EQ(v, 1 / 0.7);
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / 20000, 0.3, 0.015);
  drop->eval();
  EXPECT_TRUE(all_close(drop->forward(x), values(x), {0, 0}));
  EXPECT_TRUE(all_close(F::dropout(x, F::DropoutFuncOptions().p(1.0)), std::vector<double>(20000, 0.0), {0, 0}));
  EXPECT_TRUE(all_close(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false)), values(x), {0, 0}));
  EXPECT_TRUE(throws_error([] { nn::Dropout(1.5); }, {"Dropout", "1.5"}));
}

// ---- activations --------------------------------------------------------------------------

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct ActivationCase {
  const char* name;
  std::function<Tensor(const Tensor&)> module_forward;
  std::function<double(double)> reference;
};

TEST(Activations, MatchReferencesAndGradcheck) {
  const double k = std::sqrt(2 / M_PI);
  std::vector<ActivationCase> cases = {
      {"relu", [](const Tensor& x) { return nn::ReLU()(x); }, [](double x) { return x > 0 ? x : 0; }},
      {"gelu", [](const Tensor& x) { return nn::GELU()(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_tanh", [](const Tensor& x) { return nn::GELU(nn::GELUOptions().approximate("tanh"))(x); },
       [k](double x) { return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x))); }},
      {"silu", [](const Tensor& x) { return nn::SiLU()(x); }, [](double x) { return x * sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return nn::Tanh()(x); }, [](double x) { return std::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return nn::Sigmoid()(x); }, sigmoid},
  };
  Tensor x = uniform({3, 7}, 21, -4, 4);
  for (const auto& c : cases) {
    std::vector<double> expected;
    for (double v : values(x)) expected.push_back(c.reference(v));
    EXPECT_TRUE(all_close(c.module_forward(x), expected, {1e-12, 1e-12})) << c.name;
    EXPECT_TRUE(all_close(c.module_forward(x.t()), values(c.module_forward(x).t()), {0, 0})) << c.name;
    // Avoid relu's kink at 0 (no sample lands there).
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return c.module_forward(in[0]); }, {leaf(x)},
                                tight_gradcheck()))
        << c.name;
  }
  EXPECT_TRUE(throws_error([] { nn::GELU(nn::GELUOptions().approximate("fast")); }, {"GELU", "fast"}));
}

TEST(Activations, SoftmaxAndLogSoftmaxModules) {
  Tensor x = uniform({2, 3, 4}, 22, -3, 3);
  const auto v = values(x);
  std::vector<double> expected(v.size()), expected_log(v.size());
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t c = 0; c < 4; ++c) {
      double sum = 0;
      for (int64_t b = 0; b < 3; ++b) sum += std::exp(v[(a * 3 + b) * 4 + c]);
      for (int64_t b = 0; b < 3; ++b) {
        const size_t i = static_cast<size_t>((a * 3 + b) * 4 + c);
        expected[i] = std::exp(v[i]) / sum;
        expected_log[i] = v[i] - std::log(sum);
      }
    }
  }
  EXPECT_TRUE(all_close(nn::Softmax(1)(x), expected));
  EXPECT_TRUE(all_close(nn::LogSoftmax(nn::LogSoftmaxOptions(-2))(x), expected_log));
  EXPECT_TRUE(all_close(F::softmax(x.to(kFloat32), F::SoftmaxFuncOptions(1).dtype(kFloat64)), expected, {1e-6, 1e-7}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return nn::Softmax(1)(in[0]); }, {leaf(x)},
                              tight_gradcheck()));
}

}  // namespace
}  // namespace ember::nntest

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

TEST(Embedding, Gradcheck) {
  Tensor weight = leaf(uniform({5, 3}, 30));
  Tensor indices = tensor({4, 0, 4, 2}).view({2, 2});
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return F::embedding(indices, in[0], F::EmbeddingFuncOptions().padding_idx(1));  // 1 is not looked up
      },
      {weight}, tight_gradcheck()));
}

TEST(Dropout, BackwardScalesLikeTheForwardMask) {
  manual_seed(31);
  Tensor x = uniform({50}, 32, 0.5, 1.5).requires_grad_();
  Tensor y = nn::Dropout(0.4)(x);
  y.backward(ones_like(y));
  const auto xv = values(x), yv = values(y), g = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(g[i], yv[i] / xv[i], 1e-12);
}

// Runs `make` twice from the same seed, in float64 and in `dtype`, and compares the output
// and every parameter gradient of forward(input).sum() within `tolerance`.
template <typename Make, typename Forward>
void expect_dtype_matches_float64(Make make, Forward forward, const Tensor& input, ScalarType dtype,
                                  testutil::Tolerance tolerance) {
  manual_seed(40);
  auto reference = make();
  manual_seed(40);
  auto low = make();
  reference->to(kFloat64);
  low->to(dtype);
  Tensor input_low = is_floating_point(input.scalar_type()) ? input.to(dtype) : input;
  Tensor out_ref = forward(*reference, input), out_low = forward(*low, input_low);
  EXPECT_EQ(out_low.scalar_type(), dtype);
  EXPECT_TRUE(all_close(out_low, values(out_ref), tolerance)) << low->name() << " " << dtype_name(dtype);
  out_ref.sum().backward();
  out_low.sum().backward();
  auto ref_params = reference->named_parameters(), low_params = low->named_parameters();
  for (const auto& item : ref_params) {
    Tensor grad = low_params[item.key()].grad();
    ASSERT_TRUE(grad.defined()) << item.key();
    EXPECT_EQ(grad.scalar_type(), dtype);
    EXPECT_TRUE(all_close(grad, values(item.value().grad()), tolerance))
        << low->name() << " " << item.key() << " " << dtype_name(dtype);
  }
}

TEST(Modules, Float32AndBFloat16ForwardAndBackwardTrackFloat64) {
  Tensor x = uniform({4, 6}, 41);
  Tensor sequence = uniform({3, 2, 6}, 42);
  Tensor indices = tensor({1, 3, 3, 0});
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    const testutil::Tolerance tol = dtype == kFloat32 ? testutil::Tolerance{1e-5, 1e-5} : testutil::Tolerance{5e-2, 5e-2};
    expect_dtype_matches_float64([] { return nn::Linear(6, 5).ptr(); },
                                 [](nn::LinearImpl& m, const Tensor& in) { return m.forward(in); }, x, dtype, tol);
    expect_dtype_matches_float64([] { return nn::LayerNorm(nn::LayerNormOptions({6})).ptr(); },
                                 [](nn::LayerNormImpl& m, const Tensor& in) { return m.forward(in) * in; }, x, dtype,
                                 tol);
    expect_dtype_matches_float64([] { return nn::RMSNorm(nn::RMSNormOptions({6})).ptr(); },
                                 [](nn::RMSNormImpl& m, const Tensor& in) { return m.forward(in) * in; }, x, dtype,
                                 tol);
    expect_dtype_matches_float64([] { return nn::Embedding(4, 6).ptr(); },
                                 [](nn::EmbeddingImpl& m, const Tensor& in) { return m.forward(in).square(); }, indices,
                                 dtype, tol);
    expect_dtype_matches_float64([] { return nn::LSTM(nn::LSTMOptions(6, 4).bidirectional(true)).ptr(); },
                                 [](nn::LSTMImpl& m, const Tensor& in) { return std::get<0>(m.forward(in)); }, sequence,
                                 dtype, tol);
    expect_dtype_matches_float64([] { return nn::GRU(nn::GRUOptions(6, 4).num_layers(2)).ptr(); },
                                 [](nn::GRUImpl& m, const Tensor& in) { return std::get<0>(m.forward(in)); }, sequence,
                                 dtype, tol);
  }
}

}  // namespace
}  // namespace ember::nntest
