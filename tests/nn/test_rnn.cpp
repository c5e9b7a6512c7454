// LSTM, GRU and their cells against a step-by-step float64 reference written with plain
// loops, for every combination of layers (1-3), bidirectional, batch_first, bias and an
// initial state; gradcheck on small shapes; unbatched inputs, dropout and errors.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;

using Vec = std::vector<double>;
using Sequence = std::vector<std::vector<Vec>>;  // [time][batch][feature]

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct CellWeights {
  Matrix w_ih, w_hh;
  Vec b_ih, b_hh;  // empty without bias
};

// W x + b for one row vector.
Vec affine(const Matrix& w, const Vec& x, const Vec& b) {
  Vec y(static_cast<size_t>(w.rows), 0.0);
  for (int64_t r = 0; r < w.rows; ++r) {
    double acc = b.empty() ? 0 : b[r];
    for (int64_t c = 0; c < w.cols; ++c) acc += w(r, c) * x[c];
    y[r] = acc;
  }
  return y;
}

// PyTorch's LSTM cell, gates i, f, g, o.
void lstm_cell(const CellWeights& w, const Vec& x, Vec& h, Vec& c) {
  const size_t H = h.size();
  Vec gi = affine(w.w_ih, x, w.b_ih), gh = affine(w.w_hh, h, w.b_hh);
  for (size_t j = 0; j < H; ++j) {
    const double i = sigmoid(gi[j] + gh[j]);
    const double f = sigmoid(gi[H + j] + gh[H + j]);
    const double g = std::tanh(gi[2 * H + j] + gh[2 * H + j]);
    const double o = sigmoid(gi[3 * H + j] + gh[3 * H + j]);
    c[j] = f * c[j] + i * g;
    h[j] = o * std::tanh(c[j]);
  }
}

// PyTorch's GRU cell, gates r, z, n; the reset gate scales (W_hn h + b_hn).
void gru_cell(const CellWeights& w, const Vec& x, Vec& h) {
  const size_t H = h.size();
  Vec gi = affine(w.w_ih, x, w.b_ih), gh = affine(w.w_hh, h, w.b_hh);
  Vec next(H);
  for (size_t j = 0; j < H; ++j) {
    const double r = sigmoid(gi[j] + gh[j]);
    const double z = sigmoid(gi[H + j] + gh[H + j]);
    const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
    next[j] = (1 - z) * n + z * h[j];
  }
  h = next;
}

CellWeights weights_of(nn::Module& module, const std::string& suffix, bool bias) {
  auto params = module.named_parameters();
  CellWeights w{matrix(params["weight_ih" + suffix]), matrix(params["weight_hh" + suffix]), {}, {}};
  if (bias) {
    w.b_ih = values(params["bias_ih" + suffix]);
    w.b_hh = values(params["bias_hh" + suffix]);
  }
  return w;
}

struct Config {
  int64_t layers;
  bool bidirectional, batch_first, bias, initial_state;
  std::string describe() const {
    return "layers=" + std::to_string(layers) + " bidirectional=" + std::to_string(bidirectional) +
           " batch_first=" + std::to_string(batch_first) + " bias=" + std::to_string(bias) +
           " initial_state=" + std::to_string(initial_state);
  }
};

std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (int64_t layers : {1, 2, 3})
    for (bool bidirectional : {false, true})
      for (bool batch_first : {false, true})
        for (bool bias : {false, true})
          for (bool initial_state : {false, true}) out.push_back({layers, bidirectional, batch_first, bias, initial_state});
  return out;
}

// [L, N, F] tensor (seq-major) -> nested vectors.
Sequence to_sequence(const Tensor& x) {
  const auto v = values(x);
  Sequence s(x.size(0), std::vector<Vec>(x.size(1), Vec(x.size(2))));
  for (int64_t t = 0; t < x.size(0); ++t)
    for (int64_t n = 0; n < x.size(1); ++n)
      for (int64_t f = 0; f < x.size(2); ++f) s[t][n][f] = v[(t * x.size(1) + n) * x.size(2) + f];
  return s;
}

// [S, N, H] tensor -> states[s][n].
std::vector<std::vector<Vec>> to_states(const Tensor& x) { return to_sequence(x); }

Vec flatten(const Sequence& s) {
  Vec out;
  for (const auto& a : s)
    for (const auto& b : a) out.insert(out.end(), b.begin(), b.end());
  return out;
}

struct ReferenceResult {
  Sequence output;                    // [L][N][D*H]
  std::vector<std::vector<Vec>> h, c;  // [layers*D][N][H]
};

// The multi-layer, optionally bidirectional recurrence, step by step.
ReferenceResult reference_rnn(nn::Module& module, bool is_lstm, const Config& cfg, const Sequence& input,
                              std::vector<std::vector<Vec>> h0, std::vector<std::vector<Vec>> c0) {
  const int64_t D = cfg.bidirectional ? 2 : 1;
  const size_t L = input.size(), N = input[0].size();
  ReferenceResult result;
  Sequence layer_input = input;
  for (int64_t layer = 0; layer < cfg.layers; ++layer) {
    Sequence layer_output(L, std::vector<Vec>(N));
    for (int64_t d = 0; d < D; ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      CellWeights w = weights_of(module, suffix, cfg.bias);
      const size_t state = static_cast<size_t>(layer * D + d);
      for (size_t n = 0; n < N; ++n) {
        Vec h = h0[state][n];
        Vec c = is_lstm ? c0[state][n] : Vec();
        for (size_t s = 0; s < L; ++s) {
          const size_t t = d == 0 ? s : L - 1 - s;
          if (is_lstm) {
            lstm_cell(w, layer_input[t][n], h, c);
          } else {
            gru_cell(w, layer_input[t][n], h);
          }
          layer_output[t][n].insert(layer_output[t][n].end(), h.begin(), h.end());
        }
        h0[state][n] = h;
        if (is_lstm) c0[state][n] = c;
      }
    }
    layer_input = layer_output;
  }
  result.output = layer_input;
  result.h = h0;
  result.c = c0;
  return result;
}

constexpr int64_t kSteps = 3, kBatch = 2, kInput = 3, kHidden = 4;

// Runs the module and the reference for one configuration and compares everything.
void check_against_reference(bool is_lstm, const Config& cfg, uint32_t seed) {
  SCOPED_TRACE((is_lstm ? "LSTM " : "GRU ") + cfg.describe());
  manual_seed(seed);
  auto options = nn::RNNOptionsBase(kInput, kHidden)
                     .num_layers(cfg.layers)
                     .bidirectional(cfg.bidirectional)
                     .batch_first(cfg.batch_first)
                     .bias(cfg.bias);
  nn::LSTM lstm{nullptr};
  nn::GRU gru{nullptr};
  std::shared_ptr<nn::Module> module;
  if (is_lstm) {
    lstm = nn::LSTM(options);
    module = lstm.ptr();
  } else {
    gru = nn::GRU(options);
    module = gru.ptr();
  }
  module->to(kFloat64);
  const int64_t D = cfg.bidirectional ? 2 : 1, S = cfg.layers * D;
  Tensor x = uniform({kSteps, kBatch, kInput}, seed + 1);  // seq-major
  Tensor h0 = cfg.initial_state ? uniform({S, kBatch, kHidden}, seed + 2) : zeros({S, kBatch, kHidden}, kFloat64);
  Tensor c0 = cfg.initial_state ? uniform({S, kBatch, kHidden}, seed + 3) : zeros({S, kBatch, kHidden}, kFloat64);
  Tensor module_input = cfg.batch_first ? x.transpose(0, 1).contiguous() : x;

  Tensor output, h_n, c_n;
  if (is_lstm) {
    auto [out, state] = cfg.initial_state ? lstm->forward(module_input, std::make_tuple(h0, c0))
                                          : lstm->forward(module_input);
    output = out;
    std::tie(h_n, c_n) = state;
  } else {
    std::tie(output, h_n) = cfg.initial_state ? gru->forward(module_input, h0) : gru->forward(module_input);
  }
  ReferenceResult ref = reference_rnn(*module, is_lstm, cfg, to_sequence(x), to_states(h0), to_states(c0));

  ASSERT_EQ(output.sizes(), cfg.batch_first ? (std::vector<int64_t>{kBatch, kSteps, D * kHidden})
                                            : (std::vector<int64_t>{kSteps, kBatch, D * kHidden}));
  Tensor seq_major = cfg.batch_first ? output.transpose(0, 1) : output;
  EXPECT_TRUE(all_close(seq_major, flatten(ref.output), {1e-12, 1e-12}));
  ASSERT_EQ(h_n.sizes(), (std::vector<int64_t>{S, kBatch, kHidden}));
  EXPECT_TRUE(all_close(h_n, flatten(ref.h), {1e-12, 1e-12}));
  if (is_lstm) EXPECT_TRUE(all_close(c_n, flatten(ref.c), {1e-12, 1e-12}));
}

TEST(LSTM, MatchesStepByStepReferenceForAllOptions) {
  uint32_t seed = 100;
  for (const Config& cfg : all_configs()) check_against_reference(/*is_lstm=*/true, cfg, seed += 10);
}

TEST(GRU, MatchesStepByStepReferenceForAllOptions) {
  uint32_t seed = 500;
  for (const Config& cfg : all_configs()) check_against_reference(/*is_lstm=*/false, cfg, seed += 10);
}

TEST(LSTM, Gradcheck) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(3, 2).num_layers(2).bidirectional(true).batch_first(true));
  lstm->to(kFloat64);
  std::vector<Tensor> inputs = {leaf(uniform({2, 3, 3}, 1)), leaf(uniform({4, 2, 2}, 2)), leaf(uniform({4, 2, 2}, 3))};
  const size_t first_param = inputs.size();
  for (const Tensor& p : lstm->parameters()) inputs.push_back(p);
  // Sum the three outputs so one scalar covers every gradient path.
  auto fn = [&](const std::vector<Tensor>& in) {
    auto [out, state] = lstm->forward(in[0], std::make_tuple(in[1], in[2]));
    return out.sum() + std::get<0>(state).square().sum() + std::get<1>(state).sum();
  };
  EXPECT_TRUE(gradients_match(fn, inputs, tight_gradcheck()));
  EXPECT_GT(inputs.size(), first_param);
}

TEST(GRU, Gradcheck) {
  manual_seed(4);
  nn::GRU gru(nn::GRUOptions(2, 3).num_layers(2).bidirectional(true));
  gru->to(kFloat64);
  std::vector<Tensor> inputs = {leaf(uniform({3, 2, 2}, 4)), leaf(uniform({4, 2, 3}, 5))};
  for (const Tensor& p : gru->parameters()) inputs.push_back(p);
  auto fn = [&](const std::vector<Tensor>& in) {
    auto [out, h] = gru->forward(in[0], in[1]);
    return out.sum() + h.square().sum();
  };
  EXPECT_TRUE(gradients_match(fn, inputs, tight_gradcheck()));
}

TEST(LSTM, UnbatchedInput) {
  manual_seed(5);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  lstm->to(kFloat64);
  Tensor x = uniform({5, 3}, 6);
  Tensor h0 = uniform({4, 4}, 7), c0 = uniform({4, 4}, 8);
  auto [out, state] = lstm->forward(x, std::make_tuple(h0, c0));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(std::get<0>(state).sizes(), (std::vector<int64_t>{4, 4}));
  auto [batched_out, batched_state] = lstm->forward(x.unsqueeze(1), std::make_tuple(h0.unsqueeze(1), c0.unsqueeze(1)));
  EXPECT_TRUE(all_close(out, values(batched_out), {0, 0}));
  EXPECT_TRUE(all_close(std::get<1>(state), values(std::get<1>(batched_state)), {0, 0}));
}

TEST(LSTM, DropoutBetweenLayersOnlyInTraining) {
  manual_seed(6);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).dropout(0.5));
  lstm->to(kFloat64);
  Tensor x = uniform({4, 2, 3}, 9);
  lstm->eval();
  Tensor eval_out = std::get<0>(lstm->forward(x));
  Config cfg{2, false, false, true, false};
  ReferenceResult ref = reference_rnn(*lstm, true, cfg, to_sequence(x), std::vector<std::vector<Vec>>(2, std::vector<Vec>(2, Vec(4, 0.0))),
                                      std::vector<std::vector<Vec>>(2, std::vector<Vec>(2, Vec(4, 0.0))));
  EXPECT_TRUE(all_close(eval_out, flatten(ref.output), {1e-12, 1e-12}));
  lstm->train();
  Tensor train_out = std::get<0>(lstm->forward(x));
  EXPECT_FALSE(allclose(train_out, eval_out));
}

TEST(RNN, ShapeErrorsNameTheShapes) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  EXPECT_TRUE(throws_error([&] { lstm->forward(zeros({5, 2, 7})); }, {"LSTM", "7 features", "input_size is 3"}));
  EXPECT_TRUE(throws_error([&] { lstm->forward(zeros({5, 2, 3}), std::make_tuple(zeros({1, 2, 4}), zeros({2, 2, 4}))); },
                           {"LSTM", "[2, 2, 4]", "[1, 2, 4]"}));
  nn::GRU gru(nn::GRUOptions(3, 4));
  EXPECT_TRUE(throws_error([&] { gru->forward(zeros({5, 3})[0]); }, {"GRU", "2-D", "3-D"}));
  EXPECT_TRUE(throws_error([] { nn::LSTM(nn::LSTMOptions(3, 0)); }, {"hidden_size (0)"}));
}

TEST(RNN, DefaultInitIsUniformByHiddenSize) {
  manual_seed(8);
  nn::GRU gru(nn::GRUOptions(20, 25).num_layers(2));
  const double bound = 1 / std::sqrt(25.0);
  for (const auto& item : gru->named_parameters()) {
    double max_abs = 0;
    for (double v : values(item.value())) max_abs = std::max(max_abs, std::abs(v));
    EXPECT_LE(max_abs, bound) << item.key();
    EXPECT_GT(max_abs, 0.9 * bound) << item.key();
  }
}

// ---- cells --------------------------------------------------------------------------------

TEST(LSTMCell, MatchesReference) {
  manual_seed(9);
  for (bool bias : {true, false}) {
    nn::LSTMCell cell(nn::LSTMCellOptions(3, 4).bias(bias));
    cell->to(kFloat64);
    EXPECT_EQ(cell->named_parameters().size(), bias ? 4u : 2u);
    Tensor x = uniform({2, 3}, 10), h = uniform({2, 4}, 11), c = uniform({2, 4}, 12);
    auto [h1, c1] = cell->forward(x, std::make_tuple(h, c));
    CellWeights w = weights_of(*cell, "", bias);
    Vec ref_h, ref_c;
    const Vec hs = values(h), cs = values(c), xs = values(x);
    for (int64_t n = 0; n < 2; ++n) {
      Vec hv(hs.begin() + n * 4, hs.begin() + n * 4 + 4);
      Vec cv(cs.begin() + n * 4, cs.begin() + n * 4 + 4);
      Vec xv(xs.begin() + n * 3, xs.begin() + n * 3 + 3);
      lstm_cell(w, xv, hv, cv);
      ref_h.insert(ref_h.end(), hv.begin(), hv.end());
      ref_c.insert(ref_c.end(), cv.begin(), cv.end());
    }
    EXPECT_TRUE(all_close(h1, ref_h, {1e-12, 1e-12}));
    EXPECT_TRUE(all_close(c1, ref_c, {1e-12, 1e-12}));
    // Unbatched, and the zero default state.
    auto [hu, cu] = cell->forward(x[0]);
    auto [hz, cz] = cell->forward(x, std::make_tuple(zeros({2, 4}, kFloat64), zeros({2, 4}, kFloat64)));
    // One row runs as a matrix-vector product (gemv), two rows as gemm: the same sums, rounded
    // in another order.
    EXPECT_TRUE(all_close(hu, values(hz[0]), {1e-15, 1e-15}));
    EXPECT_TRUE(all_close(cu, values(cz[0]), {1e-15, 1e-15}));
    std::vector<Tensor> inputs = {leaf(x), leaf(h), leaf(c)};
    for (const Tensor& p : cell->parameters()) inputs.push_back(p);
    EXPECT_TRUE(gradients_match(
        [&](const std::vector<Tensor>& in) {
          auto [h2, c2] = cell->forward(in[0], std::make_tuple(in[1], in[2]));
          return h2 + c2.square();
        },
        inputs, tight_gradcheck()));
  }
}

TEST(GRUCell, MatchesReferenceAndGradcheck) {
  manual_seed(10);
  nn::GRUCell cell(3, 4);
  cell->to(kFloat64);
  Tensor x = uniform({2, 3}, 13), h = uniform({2, 4}, 14);
  CellWeights w = weights_of(*cell, "", true);
  Vec ref;
  const Vec hs = values(h), xs = values(x);
  for (int64_t n = 0; n < 2; ++n) {
    Vec hv(hs.begin() + n * 4, hs.begin() + n * 4 + 4);
    Vec xv(xs.begin() + n * 3, xs.begin() + n * 3 + 3);
    gru_cell(w, xv, hv);
    ref.insert(ref.end(), hv.begin(), hv.end());
  }
  EXPECT_TRUE(all_close(cell->forward(x, h), ref, {1e-12, 1e-12}));
  std::vector<Tensor> inputs = {leaf(x), leaf(h)};
  for (const Tensor& p : cell->parameters()) inputs.push_back(p);
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return cell->forward(in[0], in[1]); }, inputs,
                              tight_gradcheck()));
  EXPECT_TRUE(throws_error([&] { cell->forward(x, zeros({3, 4}, kFloat64)); }, {"GRUCell", "[2, 4]", "[3, 4]"}));
}

// The Elman RNN, one layer: h' = act(W_ih x + b_ih + W_hh h + b_hh), against plain loops.
TEST(RNN, TanhAndReluMatchTheRecurrenceInFloat64) {
  for (Nonlinearity act : {Nonlinearity::Tanh, Nonlinearity::ReLU}) {
    manual_seed(3);
    nn::RNN rnn(nn::RNNOptions(kInput, kHidden).nonlinearity(act));
    rnn->to(kFloat64);
    const Tensor x = uniform({kSteps, kBatch, kInput}, 11);
    auto [output, h_n] = rnn->forward(x);
    CellWeights w = weights_of(*rnn, "_l0", /*bias=*/true);
    const Sequence input = to_sequence(x);
    Sequence expected(kSteps, std::vector<Vec>(kBatch));
    for (int64_t n = 0; n < kBatch; ++n) {
      Vec h(kHidden, 0.0);
      for (int64_t t = 0; t < kSteps; ++t) {
        Vec gi = affine(w.w_ih, input[t][n], w.b_ih), gh = affine(w.w_hh, h, w.b_hh);
        for (int64_t j = 0; j < kHidden; ++j)
          h[j] = act == Nonlinearity::Tanh ? std::tanh(gi[j] + gh[j]) : std::max(0.0, gi[j] + gh[j]);
        expected[t][n] = h;
      }
    }
    EXPECT_TRUE(all_close(output, flatten(expected), {1e-12, 1e-12}));
    EXPECT_TRUE(all_close(h_n, flatten({expected.back()}), {1e-12, 1e-12}));
    EXPECT_EQ(rnn->options_base.hidden_size(), kHidden);
  }
  EXPECT_TRUE(throws_error([] { nn::RNN(nn::RNNOptions(2, 3).nonlinearity(Nonlinearity::Sigmoid)); }, {"RNN", "kTanh"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(nn::GRUOptions(2, 3).proj_size(1)); }, {"proj_size", "only supported for LSTM"}));
}

// proj_size P: h = W_hr (o * tanh(c)); h, the output and weight_hh's columns have P features.
TEST(LSTM, ProjectionMatchesTheRecurrenceInFloat64) {
  constexpr int64_t kProj = 2;
  manual_seed(5);
  nn::LSTM lstm(nn::LSTMOptions(kInput, kHidden).proj_size(kProj));
  lstm->to(kFloat64);
  auto params = lstm->named_parameters();
  EXPECT_EQ(params["weight_hh_l0"].sizes().vec(), (std::vector<int64_t>{4 * kHidden, kProj}));
  EXPECT_EQ(params["weight_hr_l0"].sizes().vec(), (std::vector<int64_t>{kProj, kHidden}));
  const Tensor x = uniform({kSteps, kBatch, kInput}, 12);
  auto [output, state] = lstm->forward(x);
  CellWeights w = weights_of(*lstm, "_l0", /*bias=*/true);
  const Matrix w_hr = matrix(params["weight_hr_l0"]);
  const Sequence input = to_sequence(x);
  Sequence expected(kSteps, std::vector<Vec>(kBatch));
  Sequence cells(1, std::vector<Vec>(kBatch));
  for (int64_t n = 0; n < kBatch; ++n) {
    Vec h(kProj, 0.0), c(kHidden, 0.0);
    for (int64_t t = 0; t < kSteps; ++t) {
      Vec gi = affine(w.w_ih, input[t][n], w.b_ih), gh = affine(w.w_hh, h, w.b_hh);
      Vec full(kHidden);
      for (int64_t j = 0; j < kHidden; ++j) {
        const double i = sigmoid(gi[j] + gh[j]), f = sigmoid(gi[kHidden + j] + gh[kHidden + j]);
        const double g = std::tanh(gi[2 * kHidden + j] + gh[2 * kHidden + j]);
        const double o = sigmoid(gi[3 * kHidden + j] + gh[3 * kHidden + j]);
        c[j] = f * c[j] + i * g;
        full[j] = o * std::tanh(c[j]);
      }
      h = affine(w_hr, full, {});
      expected[t][n] = h;
    }
    cells[0][n] = c;
  }
  EXPECT_TRUE(all_close(output, flatten(expected), {1e-12, 1e-12}));
  EXPECT_TRUE(all_close(std::get<0>(state), flatten({expected.back()}), {1e-12, 1e-12}));
  EXPECT_TRUE(all_close(std::get<1>(state), flatten(cells), {1e-12, 1e-12}));
  lstm->flatten_parameters();  // nothing to do on the CPU
}

// A packed batch runs each sequence over its own length: the same as running it alone.
TEST(RNN, PackedInputRunsEachSequenceOverItsLength) {
  manual_seed(7);
  nn::GRU gru(nn::GRUOptions(kInput, kHidden).bidirectional(true));
  gru->to(kFloat64);
  const Tensor a = uniform({2, kInput}, 21), b = uniform({4, kInput}, 22), c = uniform({3, kInput}, 23);
  auto packed = nn::utils::rnn::pack_sequence({a, b, c}, /*enforce_sorted=*/false);
  auto [output, h_n] = gru->forward_with_packed_input(packed);
  auto [padded, lengths] = nn::utils::rnn::pad_packed_sequence(output);
  const std::vector<Tensor> sequences = {a, b, c};
  for (int64_t i = 0; i < 3; ++i) {
    auto [alone, alone_h] = gru->forward(sequences[i].unsqueeze(1));
    EXPECT_TRUE(all_close(padded.narrow(0, 0, sequences[i].size(0)).narrow(1, i, 1), values(alone), {1e-12, 1e-12}));
    EXPECT_TRUE(all_close(h_n.narrow(1, i, 1), values(alone_h), {1e-12, 1e-12}));
  }
  EXPECT_EQ(values(lengths), (Vec{2, 4, 3}));
}

}  // namespace
}  // namespace ember::nntest
