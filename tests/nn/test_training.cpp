// End-to-end training with fixed seeds: an MLP learns XOR-like data, an LSTM learns a
// delayed copy task, and a model written exactly as a libtorch user writes one trains.
#include "nn_testing.h"

// ---- a libtorch-style model, written as in libtorch code but for the namespace ------------

struct NetImpl : ember::nn::Module {
  NetImpl(int64_t in, int64_t hidden, int64_t out) {
    fc1 = register_module("fc1", ember::nn::Linear(in, hidden));
    norm = register_module("norm", ember::nn::LayerNorm(ember::nn::LayerNormOptions({hidden})));
    fc2 = register_module("fc2", ember::nn::Linear(ember::nn::LinearOptions(hidden, out).bias(false)));
  }

  ember::Tensor forward(ember::Tensor x) {
    x = ember::relu(norm->forward(fc1->forward(x)));
    x = ember::nn::functional::dropout(x, ember::nn::functional::DropoutFuncOptions().p(0.1).training(is_training()));
    return fc2->forward(x);
  }

  ember::nn::Linear fc1{nullptr}, fc2{nullptr};
  ember::nn::LayerNorm norm{nullptr};
};
EMBER_MODULE(Net);

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

TEST(Training, LibtorchStyleModelCompilesAndTrains) {
  ember::manual_seed(0);
  Net net(1, 32, 1);
  ember::optim::AdamW opt(net->parameters(), ember::optim::AdamWOptions(1e-2));
  ember::Tensor x = ember::linspace(-3, 3, 64).unsqueeze(1);
  ember::Tensor y = x.sin();
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    ember::Tensor loss = ember::nn::functional::mse_loss(net->forward(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  net->eval();
  const double eval_loss = F::mse_loss(net(x), y).item<double>();
  EXPECT_LT(last_loss, first_loss / 10);
  EXPECT_LT(eval_loss, 0.02);
  EXPECT_EQ(net->state_dict().keys(),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "norm.weight", "norm.bias", "fc2.weight"}));
}

TEST(Training, MlpLearnsXorLikeData) {
  manual_seed(1);
  // Points in [-1, 1]^2 labelled by the sign of x * y (XOR of the two signs).
  Tensor points = rand({256, 2}) * 2 - 1;
  Tensor labels = (points.select(1, 0) * points.select(1, 1) > 0).to(kFloat32).unsqueeze(1);
  nn::Sequential mlp(nn::Linear(2, 32), nn::Tanh(), nn::Linear(32, 32), nn::Tanh(), nn::Linear(32, 1));
  optim::Adam opt(mlp->parameters(), optim::AdamOptions(0.02));
  nn::BCEWithLogitsLoss criterion;
  Tensor loss;
  for (int step = 0; step < 400; ++step) {
    opt.zero_grad();
    loss = criterion(mlp(points), labels);
    loss.backward();
    opt.step();
  }
  EXPECT_LT(loss.item<double>(), 0.1);
  Tensor predictions = (mlp(points) > 0).to(kFloat32);
  const double accuracy = (predictions == labels).to(kFloat64).mean().item<double>();
  EXPECT_GT(accuracy, 0.97);
}

struct DelayModelImpl : nn::Module {
  DelayModelImpl(int64_t symbols, int64_t hidden) {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(symbols, hidden).batch_first(true)));
    head = register_module("head", nn::Linear(hidden, symbols));
  }
  // one_hot [N, T, symbols] -> logits [N, T, symbols]
  Tensor forward(const Tensor& one_hot) { return head(std::get<0>(lstm(one_hot))); }
  nn::LSTM lstm{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(DelayModel);

TEST(Training, LstmLearnsDelayedCopy) {
  // Output at step t is the input symbol at step t - delay; earlier steps are ignored.
  constexpr int64_t kSymbols = 4, kSteps = 10, kBatch = 32, kDelay = 2;
  manual_seed(2);
  DelayModel model(kSymbols, 24);
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.03));
  optim::CosineAnnealingLR schedule(opt, 300, 0.003);
  Tensor identity = eye(kSymbols);
  auto batch = [&] {
    Tensor tokens = randint(kSymbols, {kBatch, kSteps});
    Tensor one_hot = identity.index_select(0, tokens.reshape({-1})).view({kBatch, kSteps, kSymbols});
    Tensor targets = full({kBatch, kSteps}, -100, kInt64);
    {
      NoGradGuard no_grad;
      targets.narrow(1, kDelay, kSteps - kDelay).copy_(tokens.narrow(1, 0, kSteps - kDelay));
    }
    return std::make_pair(one_hot, targets);
  };
  auto loss_of = [&](const Tensor& one_hot, const Tensor& targets) {
    return F::cross_entropy(model(one_hot).reshape({-1, kSymbols}), targets.reshape({-1}));
  };
  for (int step = 0; step < 300; ++step) {
    auto [one_hot, targets] = batch();
    opt.zero_grad();
    Tensor loss = loss_of(one_hot, targets);
    loss.backward();
    nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    schedule.step();
  }
  auto [one_hot, targets] = batch();
  NoGradGuard no_grad;
  EXPECT_LT(loss_of(one_hot, targets).item<double>(), 0.05);
  Tensor predicted = model(one_hot).argmax(-1).narrow(1, kDelay, kSteps - kDelay);
  const double accuracy =
      (predicted == targets.narrow(1, kDelay, kSteps - kDelay)).to(kFloat64).mean().item<double>();
  EXPECT_GT(accuracy, 0.99);
}

}  // namespace
}  // namespace ember::nntest
