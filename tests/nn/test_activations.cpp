// The activations of issue 18 (LeakyReLU, ELU, PReLU, ReLU6, Softplus, Hardtanh, Mish, GLU,
// Softmax2d) and of libtorch's functional API (SELU, CELU, Hardshrink, Softshrink, Threshold,
// RReLU, LogSigmoid, Softsign, Tanhshrink) against PyTorch's formulas and derivatives written here per element in double:
// forward and input gradient in float64 and float32, non-contiguous and empty inputs,
// extreme values (no NaN from an untaken branch), gradcheck, modules and argument errors.
#include <cmath>
#include <functional>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

struct Pointwise {
  const char* name;
  std::function<Tensor(const Tensor&)> apply;
  std::function<double(double)> value;       // PyTorch's forward formula
  std::function<double(double)> derivative;  // PyTorch's backward formula (grad = g * derivative)
};

// SELU's constants (Klambauer et al., 2017).
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

double softplus_ref(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

std::vector<Pointwise> pointwise_cases() {
  return {
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)); },
       [](double x) { return x > 0 ? x : 0.2 * x; }, [](double x) { return x > 0 ? 1.0 : 0.2; }},
      {"leaky_relu_default", [](const Tensor& x) { return F::leaky_relu(x); },
       [](double x) { return x > 0 ? x : 0.01 * x; }, [](double x) { return x > 0 ? 1.0 : 0.01; }},
      {"elu", [](const Tensor& x) { return F::elu(x, F::ELUFuncOptions().alpha(1.5)); },
       [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); },
       [](double x) { return x > 0 ? 1.0 : 1.5 * std::exp(x); }},
      {"relu6", [](const Tensor& x) { return F::relu6(x); }, [](double x) { return std::min(std::max(x, 0.0), 6.0); },
       [](double x) { return x <= 0 || x >= 6 ? 0.0 : 1.0; }},
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x, F::HardtanhFuncOptions().min_val(-0.5).max_val(2)); },
       [](double x) { return std::min(std::max(x, -0.5), 2.0); },
       [](double x) { return x <= -0.5 || x >= 2 ? 0.0 : 1.0; }},
      {"softplus", [](const Tensor& x) { return F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(3)); },
       [](double x) { return softplus_ref(x, 2, 3); },
       [](double x) {
         const double z = std::exp(x * 2);
         return x * 2 > 3 ? 1.0 : z / (z + 1);
       }},
      {"softplus_default", [](const Tensor& x) { return F::softplus(x); },
       [](double x) { return softplus_ref(x, 1, 20); },
       [](double x) { return x > 20 ? 1.0 : std::exp(x) / (std::exp(x) + 1); }},
      {"mish", [](const Tensor& x) { return F::mish(x); },
       [](double x) { return x * std::tanh(std::log1p(std::exp(x))); },
       [](double x) {
         // PyTorch's mish_backward: tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2).
         const double tsp = std::tanh(std::log1p(std::exp(x))), sig = 1 / (1 + std::exp(-x));
         return tsp + x * sig * (1 - tsp * tsp);
       }},
      {"selu", [](const Tensor& x) { return F::selu(x); },
       [](double x) { return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x)); },
       [](double x) { return kSeluScale * (x > 0 ? 1.0 : kSeluAlpha * std::exp(x)); }},
      {"celu", [](const Tensor& x) { return F::celu(x, F::CELUFuncOptions().alpha(1.5)); },
       [](double x) { return x > 0 ? x : 1.5 * std::expm1(x / 1.5); },
       [](double x) { return x > 0 ? 1.0 : std::exp(x / 1.5); }},
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x); },
       [](double x) { return std::abs(x) > 0.5 ? x : 0.0; }, [](double x) { return std::abs(x) > 0.5 ? 1.0 : 0.0; }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, 1.5); },
       [](double x) { return x > 1.5 ? x - 1.5 : x < -1.5 ? x + 1.5 : 0.0; },
       [](double x) { return std::abs(x) > 1.5 ? 1.0 : 0.0; }},
      {"threshold", [](const Tensor& x) { return F::threshold(x, F::ThresholdFuncOptions(0.5, -2)); },
       [](double x) { return x > 0.5 ? x : -2.0; }, [](double x) { return x > 0.5 ? 1.0 : 0.0; }},
      {"rrelu_eval", [](const Tensor& x) { return F::rrelu(x, F::RReLUFuncOptions().lower(0.1).upper(0.3)); },
       [](double x) { return x > 0 ? x : 0.2 * x; }, [](double x) { return x > 0 ? 1.0 : 0.2; }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); },
       [](double x) { return x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x)); },
       [](double x) { return 1 / (1 + std::exp(x)); }},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }, [](double x) { return x / (1 + std::abs(x)); },
       [](double x) { return 1 / ((1 + std::abs(x)) * (1 + std::abs(x))); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }, [](double x) { return x - std::tanh(x); },
       [](double x) { return std::tanh(x) * std::tanh(x); }},
  };
}

// An odd-shaped, non-contiguous input with the branch points hit exactly.
Tensor activation_input(ScalarType dtype) {
  std::vector<double> v = testutil::uniform_values(42, -4, 7, 11);
  v[0] = 0, v[1] = 6, v[2] = -0.5, v[3] = 2, v[4] = 1.5;  // hardtanh/relu6 bounds, softplus' threshold
  return testutil::make(v, {7, 6}, dtype).t();
}

TEST(Activations, ForwardAndGradientMatchPyTorchFormulas) {
  for (const auto& c : pointwise_cases()) {
    SCOPED_TRACE(c.name);
    for (ScalarType dtype : {kFloat64, kFloat32}) {
      Tensor x = activation_input(dtype).requires_grad_(true);
      ASSERT_FALSE(x.is_contiguous());
      Tensor g = uniform({6, 7}, 12, -1, 1, dtype);
      Tensor y = c.apply(x);
      y.backward(g);
      std::vector<double> expected, expected_grad;
      const auto xs = values(x), gs = values(g);
      for (size_t i = 0; i < xs.size(); ++i) {
        expected.push_back(c.value(xs[i]));
        expected_grad.push_back(gs[i] * c.derivative(xs[i]));
      }
      const testutil::Tolerance tol =
          dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-6};
      EXPECT_EQ(y.scalar_type(), dtype);
      EXPECT_TRUE(all_close(y, expected, tol));
      EXPECT_TRUE(all_close(x.grad(), expected_grad, tol));
      EXPECT_EQ(c.apply(empty({0, 3}, dtype)).sizes(), (std::vector<int64_t>{0, 3}));
    }
  }
}

TEST(Activations, Gradcheck) {
  // Inputs away from the kinks, where finite differences are meaningful.
  Tensor x = leaf(uniform({3, 4}, 13, 0.1, 1.9) * testutil::make({1, -1, 1, -1}, {4}, kFloat64));
  for (const auto& c : pointwise_cases()) {
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return c.apply(in[0]); }, {x}, tight_gradcheck()))
        << c.name;
  }
}

TEST(Activations, ExtremeInputsGiveNoNaNGradient) {
  Tensor x = testutil::make({-1000, -50, 50, 1000}, {4}, kFloat64).requires_grad_(true);
  for (const auto& c : pointwise_cases()) {
    SCOPED_TRACE(c.name);
    x.mutable_grad() = Tensor();
    Tensor y = c.apply(x);
    y.sum().backward();
    std::vector<double> expected_grad;
    for (double v : values(x)) expected_grad.push_back(c.derivative(v));
    std::vector<double> expected;
    for (double v : values(x)) expected.push_back(c.value(v));
    EXPECT_TRUE(all_close(y, expected));
    EXPECT_TRUE(all_close(x.grad(), expected_grad));
  }
  Tensor f32 = testutil::make({100, -100}, {2}, kFloat32).requires_grad_(true);
  F::mish(f32).sum().backward();
  EXPECT_TRUE(all_close(f32.grad(), {1, 0}, {0, 1e-30}));
}

TEST(Activations, PReLUPerChannelAndShared) {
  // x [N, C, L] with one slope per channel: gradients for input and weight.
  Tensor x = leaf(uniform({2, 3, 4}, 21, -2, 2).permute({0, 2, 1}).contiguous().permute({0, 2, 1}));
  Tensor w = leaf(uniform({3}, 22, 0, 1));
  Tensor g = uniform({2, 3, 4}, 23);
  Tensor y = F::prelu(x, w);
  y.backward(g);
  const auto xs = values(x), gs = values(g), ws = values(w);
  std::vector<double> expected, grad_x, grad_w(3, 0.0);
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t c = (i / 4) % 3;
    expected.push_back(xs[i] > 0 ? xs[i] : ws[c] * xs[i]);
    grad_x.push_back(xs[i] > 0 ? gs[i] : ws[c] * gs[i]);
    if (xs[i] <= 0) grad_w[c] += xs[i] * gs[i];
  }
  EXPECT_TRUE(all_close(y, expected));
  EXPECT_TRUE(all_close(x.grad(), grad_x));
  EXPECT_TRUE(all_close(w.grad(), grad_w));
  EXPECT_TRUE(
      gradients_match([](const std::vector<Tensor>& in) { return F::prelu(in[0], in[1]); }, {x, w}, tight_gradcheck()));

  nn::PReLU shared;  // num_parameters 1, init 0.25
  EXPECT_TRUE(all_close(shared->weight, {0.25}, {0, 0}));
  EXPECT_EQ(shared->named_parameters().size(), 1u);
  EXPECT_TRUE(all_close(shared(testutil::make({-2, 3}, {2}, kFloat32)), {-0.5, 3}, {0, 0}));
  nn::PReLU per_channel(nn::PReLUOptions().num_parameters(3).init(0.1));
  EXPECT_EQ(per_channel->weight.sizes(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(throws_error([&] { per_channel(zeros({2, 4, 5})); }, {"prelu", "num_parameters", "4"}));
  EXPECT_TRUE(throws_error([] { nn::PReLU(nn::PReLUOptions().num_parameters(0)); }, {"PReLU", "num_parameters", "0"}));
}

TEST(Activations, GLUHalvesTheChosenDim) {
  Tensor x = leaf(uniform({3, 4, 2}, 31).transpose(0, 2));  // [2, 4, 3], non-contiguous
  for (int64_t dim : {0, 1, -2}) {
    SCOPED_TRACE(dim);
    Tensor y = F::glu(x, F::GLUFuncOptions(dim));
    const int64_t d = dim < 0 ? dim + 3 : dim;
    const int64_t half = x.size(d) / 2;
    Tensor a = x.narrow(d, 0, half).contiguous(), b = x.narrow(d, half, half).contiguous();
    const auto av = values(a), bv = values(b);
    std::vector<double> expected;
    for (size_t i = 0; i < av.size(); ++i) expected.push_back(av[i] / (1 + std::exp(-bv[i])));
    EXPECT_TRUE(all_close(y, expected));
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::glu(in[0], F::GLUFuncOptions(dim)); },
                                {x}, tight_gradcheck()));
  }
  nn::GLU glu;  // dim -1
  EXPECT_EQ(glu(zeros({3, 6})).sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(throws_error([] { F::glu(zeros({3, 5})); }, {"glu", "even", "dim 1", "size 5"}));
  EXPECT_TRUE(throws_error([] { F::glu(zeros({2, 4}), F::GLUFuncOptions(2)); }, {"glu", "dim 2", "out of range"}));
  EXPECT_TRUE(throws_error([] { F::glu(zeros({})); }, {"glu", "0-dim"}));
}

TEST(Activations, Softmax2dNormalisesChannels) {
  Tensor x = leaf(uniform({2, 3, 2, 2}, 41, -3, 3));
  nn::Softmax2d softmax2d;
  Tensor y = softmax2d(x);
  const auto xs = values(x);
  std::vector<double> expected(xs.size());
  for (int n = 0; n < 2; ++n) {
    for (int p = 0; p < 4; ++p) {
      double sum = 0;
      for (int c = 0; c < 3; ++c) sum += std::exp(xs[(n * 3 + c) * 4 + p]);
      for (int c = 0; c < 3; ++c) expected[(n * 3 + c) * 4 + p] = std::exp(xs[(n * 3 + c) * 4 + p]) / sum;
    }
  }
  EXPECT_TRUE(all_close(y, expected));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return softmax2d(in[0]); }, {x}, tight_gradcheck()));
  EXPECT_EQ(softmax2d(zeros({3, 2, 2})).sizes(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_TRUE(throws_error([&] { softmax2d(zeros({3, 2})); }, {"Softmax2d", "3-D or 4-D", "[3, 2]"}));
}

TEST(Activations, ModulesUseTheirOptions) {
  Tensor x = testutil::make({-2, -0.5, 0.5, 3, 7}, {5}, kFloat64);
  EXPECT_TRUE(all_close(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.5))(x), {-1, -0.25, 0.5, 3, 7}));
  EXPECT_TRUE(all_close(nn::ELU()(x), {std::expm1(-2), std::expm1(-0.5), 0.5, 3, 7}));
  EXPECT_TRUE(all_close(nn::ReLU6()(x), {0, 0, 0.5, 3, 6}));
  EXPECT_TRUE(all_close(nn::Hardtanh()(x), {-1, -0.5, 0.5, 1, 1}));
  EXPECT_TRUE(all_close(
      nn::Softplus(nn::SoftplusOptions().threshold(5))(x),
      {std::log1p(std::exp(-2)), std::log1p(std::exp(-0.5)), std::log1p(std::exp(0.5)), std::log1p(std::exp(3)), 7}));
  EXPECT_TRUE(
      all_close(nn::Mish()(x), {-2 * std::tanh(std::log1p(std::exp(-2))), -0.5 * std::tanh(std::log1p(std::exp(-0.5))),
                                0.5 * std::tanh(std::log1p(std::exp(0.5))), 3 * std::tanh(std::log1p(std::exp(3))),
                                7 * std::tanh(std::log1p(std::exp(7)))}));
  std::ostringstream printed;
  printed << *nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.5));
  EXPECT_EQ(printed.str(), "ember::nn::LeakyReLU(negative_slope=0.5)");
}

TEST(Activations, InplaceWritesIntoTheInput) {
  Tensor x = testutil::make({-2, 1, 8}, {3}, kFloat64);
  Tensor y = F::leaky_relu(x, F::LeakyReLUFuncOptions().inplace(true));
  EXPECT_TRUE(all_close(x, {-0.02, 1, 8}));
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  F::relu6(x, F::ReLU6FuncOptions(true));
  EXPECT_TRUE(all_close(x, {0, 1, 6}));
  F::elu(x.narrow(0, 0, 1).fill_(-1), F::ELUFuncOptions().inplace(true));
  EXPECT_TRUE(all_close(x, {std::expm1(-1), 1, 6}));
}

TEST(Activations, ArgumentErrors) {
  // The functional form takes any bounds, as libtorch's: min(max(x, min_val), max_val).
  EXPECT_TRUE(all_close(F::hardtanh(testutil::make({-2, 0.5, 3}, {3}, kFloat64),
                                    F::HardtanhFuncOptions().min_val(1).max_val(1)),
                        {1, 1, 1}));
  EXPECT_TRUE(all_close(F::hardtanh(testutil::make({-2, 0.5, 3}, {3}, kFloat64),
                                    F::HardtanhFuncOptions().min_val(2).max_val(0)),
                        {0, 0, 0}));
  EXPECT_TRUE(
      throws_error([] { nn::Hardtanh(nn::HardtanhOptions().min_val(2)); }, {"Hardtanh", "max_val", "min_val (2)"}));
  EXPECT_TRUE(throws_error([] { F::leaky_relu(zeros({2}, kInt64)); }, {"leaky_relu", "floating", "int64"}));
  EXPECT_TRUE(throws_error([] { F::prelu(zeros({2, 3}), zeros({3, 1})); }, {"prelu", "weight", "[3, 1]"}));
}

}  // namespace
}  // namespace ember::nntest
