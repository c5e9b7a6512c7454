// RNN, LSTM, GRU, LSTMCell and GRUCell, composed from ember ops (autograd records each step).
#include "ember/nn/modules/rnn.h"

#include <cmath>
#include <string>

#include "core/trace.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember::nn {
namespace {

constexpr int64_t kLSTMGates = 4;
constexpr int64_t kGRUGates = 3;
constexpr int64_t kRNNGates = 1;

// "LSTM" of ember::nn::LSTMImpl: the one printing serves every layer of the base class.
std::string class_name(const Module& module) {
  std::string name = module.name();
  name = name.substr(name.rfind("::") == std::string::npos ? 0 : name.rfind("::") + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

// One LSTM step. input_projection = x W_ih^T + b_ih [N, 4H]; states = {h, c}.
//   i, f, g, o = split(input_projection + h W_hh^T + b_hh)
//   c' = sigmoid(f) * c + sigmoid(i) * tanh(g);  h' = sigmoid(o) * tanh(c')
std::vector<Tensor> lstm_step(const Tensor& input_projection, const std::vector<Tensor>& states,
                              const detail::RNNWeights& w) {
  auto gates = (input_projection + linear(states[0], w.w_hh, w.b_hh)).chunk(kLSTMGates, 1);
  Tensor c = gates[1].sigmoid() * states[1] + gates[0].sigmoid() * gates[2].tanh();
  Tensor h = gates[3].sigmoid() * c.tanh();
  if (w.w_hr.defined()) h = linear(h, w.w_hr);  // proj_size: h' = h W_hr^T
  return {h, c};
}

// One Elman step: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh).
std::vector<Tensor> rnn_tanh_step(const Tensor& input_projection, const std::vector<Tensor>& states,
                                  const detail::RNNWeights& w) {
  return {(input_projection + linear(states[0], w.w_hh, w.b_hh)).tanh()};
}
std::vector<Tensor> rnn_relu_step(const Tensor& input_projection, const std::vector<Tensor>& states,
                                  const detail::RNNWeights& w) {
  return {(input_projection + linear(states[0], w.w_hh, w.b_hh)).relu()};
}

RNNOptionsBase base_options(const RNNOptions& o) {
  return RNNOptionsBase(o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional());
}

// One GRU step. input_projection = x W_ih^T + b_ih [N, 3H]; states = {h}.
//   r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r * h_n)
//   h' = (1 - z) * n + z * h, where h_* include b_hh (the reset gate scales h_n + b_hn).
std::vector<Tensor> gru_step(const Tensor& input_projection, const std::vector<Tensor>& states,
                             const detail::RNNWeights& w) {
  auto x = input_projection.chunk(kGRUGates, 1);
  auto h = linear(states[0], w.w_hh, w.b_hh).chunk(kGRUGates, 1);
  Tensor r = (x[0] + h[0]).sigmoid();
  Tensor z = (x[1] + h[1]).sigmoid();
  Tensor n = (x[2] + r * h[2]).tanh();
  return {(1 - z) * n + z * states[0]};
}

void init_uniform_by_hidden(const std::vector<Tensor>& parameters, int64_t hidden_size) {
  const double bound = hidden_size > 0 ? 1 / std::sqrt(static_cast<double>(hidden_size)) : 0;
  for (const Tensor& p : parameters) init::uniform_(p, -bound, bound);
}

void check_state_shape(const Tensor& state, IntArrayRef expected, const char* what, const char* op) {
  EMBER_CHECK(state.sizes() == expected.vec(), op, "expected ", what, " of shape ", expected, ", got ",
              state.sizes());
}

}  // namespace

// ---- LSTM / GRU -----------------------------------------------------------------------------

namespace detail {

RNNImplBase::RNNImplBase(const RNNOptionsBase& options_, int64_t gates) : options_base(options_) {
  const auto& o = options_base;
  EMBER_CHECK(o.input_size() > 0 && o.hidden_size() > 0 && o.num_layers() > 0, "RNN", "input_size (",
              o.input_size(), "), hidden_size (", o.hidden_size(), ") and num_layers (", o.num_layers(),
              ") must be positive");
  EMBER_CHECK(o.dropout() >= 0 && o.dropout() <= 1, "RNN", "dropout must be within [0, 1], got ", o.dropout());
  EMBER_CHECK(o.proj_size() >= 0 && o.proj_size() < o.hidden_size(), "RNN",
              "proj_size has to be a non-negative integer smaller than hidden_size (", o.hidden_size(), "), got ",
              o.proj_size());
  EMBER_CHECK(o.proj_size() == 0 || gates == kLSTMGates, "RNN",
              "proj_size argument is only supported for LSTM, not RNN or GRU");
  const int64_t directions = o.bidirectional() ? 2 : 1;
  const int64_t rows = gates * o.hidden_size();
  const int64_t real_hidden = o.proj_size() > 0 ? o.proj_size() : o.hidden_size();
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    const int64_t layer_input = layer == 0 ? o.input_size() : real_hidden * directions;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const std::string suffix = "_l" + std::to_string(layer) + (direction == 1 ? "_reverse" : "");
      RNNWeights w;
      w.w_ih = register_parameter("weight_ih" + suffix, empty({rows, layer_input}));
      w.w_hh = register_parameter("weight_hh" + suffix, empty({rows, real_hidden}));
      if (o.bias()) {
        w.b_ih = register_parameter("bias_ih" + suffix, empty({rows}));
        w.b_hh = register_parameter("bias_hh" + suffix, empty({rows}));
      }
      if (o.proj_size() > 0) w.w_hr = register_parameter("weight_hr" + suffix, empty({o.proj_size(), o.hidden_size()}));
      weights_.push_back(w);
    }
  }
  reset_parameters();
}

std::vector<Tensor> RNNImplBase::all_weights() const {
  std::vector<Tensor> out;
  for (const auto& w : weights_) {
    for (const Tensor& t : {w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.w_hr}) {
      if (t.defined()) out.push_back(t);
    }
  }
  return out;
}

void RNNImplBase::reset_parameters() { init_uniform_by_hidden(all_weights(), options_base.hidden_size()); }

void RNNImplBase::pretty_print(std::ostream& stream) const {
  const auto& o = options_base;
  stream << "ember::nn::" << class_name(*this) << "(input_size=" << o.input_size() << ", hidden_size=" << o.hidden_size()
         << ", num_layers=" << o.num_layers() << ", bias=" << (o.bias() ? "true" : "false")
         << ", batch_first=" << (o.batch_first() ? "true" : "false") << ", dropout=" << o.dropout()
         << ", bidirectional=" << (o.bidirectional() ? "true" : "false");
  if (o.proj_size() > 0) stream << ", proj_size=" << o.proj_size();
  stream << ")";
}

std::pair<Tensor, std::vector<Tensor>> RNNImplBase::run(const Tensor& input, std::vector<Tensor> initial, Step step,
                                                        const char* op) {
  const auto& o = options_base;
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, op, "expected a 2-D (unbatched) or 3-D input, got shape ",
              input.sizes());
  EMBER_CHECK(input.size(-1) == o.input_size(), op, "input has ", input.size(-1), " features (shape ", input.sizes(),
              ") but input_size is ", o.input_size());
  const bool batched = input.dim() == 3;
  Tensor x = !batched ? input.unsqueeze(1) : o.batch_first() ? input.transpose(0, 1) : input;  // [L, N, in]
  const int64_t steps = x.size(0), batch = x.size(1), hidden = o.hidden_size();
  EMBER_CHECK(steps > 0, op, "the input sequence is empty (shape ", input.sizes(), ")");
  const int64_t directions = o.bidirectional() ? 2 : 1;
  for (size_t k = 0; k < initial.size(); ++k) {
    Tensor& state = initial[k];
    // h has proj_size features with a projection; c always hidden_size.
    const int64_t size = k == 0 && o.proj_size() > 0 ? o.proj_size() : hidden;
    const std::vector<int64_t> state_shape = batched ? std::vector<int64_t>{o.num_layers() * directions, batch, size}
                                                     : std::vector<int64_t>{o.num_layers() * directions, size};
    if (!state.defined()) {
      state = zeros(state_shape, input.scalar_type());
    } else {
      check_state_shape(state, state_shape, "initial state", op);
    }
    if (!batched) state = state.unsqueeze(1);
  }

  std::vector<std::vector<Tensor>> finals(initial.size());
  Tensor layer_input = x;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    std::vector<Tensor> direction_outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const RNNWeights& w = weights_[layer * directions + direction];
      // One matmul for the input projections of all steps: L x [N, G*H].
      std::vector<Tensor> projections = linear(layer_input, w.w_ih, w.b_ih).unbind(0);
      std::vector<Tensor> states;
      for (const Tensor& state : initial) states.push_back(state[layer * directions + direction]);
      std::vector<Tensor> outputs(static_cast<size_t>(steps));
      // An export records the steps once, as a loop over the sequence length.
      core::TraceLoop loop(steps);
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t t = direction == 0 ? s : steps - 1 - s;
        loop.iteration(states);
        states = step(projections[t], states, w);
        outputs[t] = states[0];
      }
      loop.finish(states, {outputs});
      direction_outputs.push_back(stack(outputs, 0));
      for (size_t k = 0; k < states.size(); ++k) finals[k].push_back(states[k]);
    }
    layer_input = directions == 1 ? direction_outputs[0] : cat(direction_outputs, 2);
    if (layer + 1 < o.num_layers() && o.dropout() > 0 && is_training())
      layer_input = dropout(layer_input, o.dropout(), true);
  }

  Tensor output = !batched ? layer_input.squeeze(1) : o.batch_first() ? layer_input.transpose(0, 1) : layer_input;
  std::vector<Tensor> final_states;
  for (const auto& per_layer : finals) {
    Tensor state = stack(per_layer, 0);
    final_states.push_back(batched ? state : state.squeeze(1));
  }
  return {output, final_states};
}

std::pair<utils::rnn::PackedSequence, std::vector<Tensor>> RNNImplBase::run_packed(
    const utils::rnn::PackedSequence& input, std::vector<Tensor> initial, Step step, const char* op) {
  EMBER_CHECK(input.data().defined() && input.data().dim() == 2, op,
              "expected packed data of shape [steps, input_size]");
  // [T, B, in] in the batch's original order, and each sequence's length.
  auto [padded, lengths] = utils::rnn::pad_packed_sequence(input, /*batch_first=*/false);
  const int64_t batch = padded.size(1);
  const int64_t* length = lengths.data_ptr<int64_t>();
  const RNNOptionsBase saved = options_base;
  options_base.batch_first(false);  // the padded batch is [T, B, in]
  std::vector<Tensor> outputs;
  std::vector<std::vector<Tensor>> finals(initial.size());
  try {
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> states;
      for (const Tensor& state : initial) states.push_back(state.defined() ? state.narrow(1, b, 1) : Tensor());
      auto [output, final_states] = run(padded.narrow(0, 0, length[b]).narrow(1, b, 1), states, step, op);
      outputs.push_back(output.squeeze(1));
      for (size_t k = 0; k < final_states.size(); ++k) finals[k].push_back(final_states[k]);
    }
  } catch (...) {
    options_base = saved;
    throw;
  }
  options_base = saved;
  // Pack the outputs in the input's order of decreasing length, with its indices.
  std::vector<Tensor> ordered = outputs;
  if (input.sorted_indices().defined()) {
    const Tensor sorted = input.sorted_indices().to(kInt64).contiguous();
    for (int64_t b = 0; b < batch; ++b) ordered[b] = outputs[sorted.data_ptr<int64_t>()[b]];
  }
  utils::rnn::PackedSequence packed = utils::rnn::pack_sequence(ordered, /*enforce_sorted=*/true);
  std::vector<Tensor> final_states;
  for (const auto& per_sequence : finals) final_states.push_back(cat(per_sequence, 1));
  return {utils::rnn::PackedSequence(packed.data(), input.batch_sizes(), input.sorted_indices(),
                                     input.unsorted_indices()),
          final_states};
}

}  // namespace detail

RNNImpl::RNNImpl(const RNNOptions& options_) : RNNImplBase(base_options(options_), kRNNGates), options(options_) {
  EMBER_CHECK(options.nonlinearity() == Nonlinearity::Tanh || options.nonlinearity() == Nonlinearity::ReLU, "RNN",
              "nonlinearity must be ember::kTanh or ember::kReLU");
}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [output, states] =
      run(input, {hx}, options.nonlinearity() == Nonlinearity::ReLU ? rnn_relu_step : rnn_tanh_step, "RNN");
  return {output, states[0]};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  auto [output, states] = run_packed(packed_input, {hx},
                                     options.nonlinearity() == Nonlinearity::ReLU ? rnn_relu_step : rnn_tanh_step,
                                     "RNN");
  return {output, states[0]};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_) : RNNImplBase(options_, kLSTMGates), options(options_) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx) {
  std::vector<Tensor> initial(2);
  if (hx) initial = {std::get<0>(*hx), std::get<1>(*hx)};
  auto [output, states] = run(input, initial, lstm_step, "LSTM");
  return {output, {states[0], states[1]}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx) {
  std::vector<Tensor> initial(2);
  if (hx) initial = {std::get<0>(*hx), std::get<1>(*hx)};
  auto [output, states] = run_packed(packed_input, initial, lstm_step, "LSTM");
  return {output, {states[0], states[1]}};
}

GRUImpl::GRUImpl(const GRUOptions& options_) : RNNImplBase(options_, kGRUGates), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [output, states] = run(input, {hx}, gru_step, "GRU");
  return {output, states[0]};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  auto [output, states] = run_packed(packed_input, {hx}, gru_step, "GRU");
  return {output, states[0]};
}

// ---- cells -----------------------------------------------------------------------------------

RNNCellImplBase::RNNCellImplBase(const RNNCellOptionsBase& options_, int64_t gates) : options(options_) {
  const auto& o = options;
  EMBER_CHECK(o.input_size() > 0 && o.hidden_size() > 0, "RNNCell", "input_size (", o.input_size(),
              ") and hidden_size (", o.hidden_size(), ") must be positive");
  const int64_t rows = gates * o.hidden_size();
  weight_ih = register_parameter("weight_ih", empty({rows, o.input_size()}));
  weight_hh = register_parameter("weight_hh", empty({rows, o.hidden_size()}));
  if (o.bias()) {
    bias_ih = register_parameter("bias_ih", empty({rows}));
    bias_hh = register_parameter("bias_hh", empty({rows}));
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() {
  std::vector<Tensor> all;
  for (const Tensor& t : {weight_ih, weight_hh, bias_ih, bias_hh}) {
    if (t.defined()) all.push_back(t);
  }
  init_uniform_by_hidden(all, options.hidden_size());
}

void RNNCellImplBase::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << class_name(*this) << "(" << options.input_size() << ", " << options.hidden_size();
  if (!options.bias()) stream << ", bias=false";
  stream << ")";
}

std::tuple<Tensor, std::vector<Tensor>, bool> RNNCellImplBase::prepare(const Tensor& input, std::vector<Tensor> states,
                                                                       const char* op) const {
  const auto& o = options;
  EMBER_CHECK((input.dim() == 1 || input.dim() == 2) && input.size(-1) == o.input_size(), op,
              "expected input of shape [batch, ", o.input_size(), "] or [", o.input_size(), "], got ",
              input.sizes());
  const bool batched = input.dim() == 2;
  const std::vector<int64_t> state_shape =
      batched ? std::vector<int64_t>{input.size(0), o.hidden_size()} : std::vector<int64_t>{o.hidden_size()};
  for (Tensor& state : states) {
    if (!state.defined()) {
      state = zeros(state_shape, input.scalar_type());
    } else {
      check_state_shape(state, state_shape, "hidden state", op);
    }
    if (!batched) state = state.unsqueeze(0);
  }
  return {batched ? input : input.unsqueeze(0), states, !batched};
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_) : RNNCellImplBase(options_, kLSTMGates) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx) {
  std::vector<Tensor> initial(2);
  if (hx) initial = {std::get<0>(*hx), std::get<1>(*hx)};
  auto [x, states, added_batch] = prepare(input, initial, "LSTMCell");
  auto next = lstm_step(linear(x, weight_ih, bias_ih), states, {weight_ih, weight_hh, bias_ih, bias_hh});
  if (added_batch) return {next[0].squeeze(0), next[1].squeeze(0)};
  return {next[0], next[1]};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_) : RNNCellImplBase(options_, kGRUGates) {}

Tensor GRUCellImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, states, added_batch] = prepare(input, {hx}, "GRUCell");
  Tensor next = gru_step(linear(x, weight_ih, bias_ih), states, {weight_ih, weight_hh, bias_ih, bias_hh})[0];
  return added_batch ? next.squeeze(0) : next;
}

}  // namespace ember::nn
