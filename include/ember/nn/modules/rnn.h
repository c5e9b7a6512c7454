// RNN (Elman, tanh or ReLU), LSTM, GRU and their single-step cells with PyTorch's gate order,
// parameter names and initialisation (every weight and bias ~ U(+-1/sqrt(hidden_size))).
//
// Shapes (L = sequence length, N = batch, D = 2 if bidirectional else 1, H = hidden_size):
//   input   [L, N, input_size] ([N, L, input_size] with batch_first; [L, input_size] unbatched)
//   output  [L, N, D * H]       (forward and reverse directions concatenated)
//   h, c    [num_layers * D, N, H] ([num_layers * D, H] unbatched), ordered
//           layer 0 forward, layer 0 reverse, layer 1 forward, ...
// Parameters per layer k and direction suffix s ("" or "_reverse"): weight_ih_l{k}{s}
// [G * H, in], weight_hh_l{k}{s} [G * H, H], bias_ih_l{k}{s} [G * H], bias_hh_l{k}{s} [G * H],
// with G = 4 gates for LSTM (i, f, g, o), 3 for GRU (r, z, n) and 1 for RNN. An LSTM with
// proj_size P > 0 also has weight_hr_l{k}{s} [P, H]: its h (and output) has P features, so
// weight_hh is [4H, P] and h_0 is [layers * D, N, P] (c stays H).
// forward_with_packed_input runs each sequence of a PackedSequence over its own length.
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any_value.h"
#include "ember/nn/options.h"
#include "ember/nn/utils.h"

namespace ember::nn {

namespace detail {

// The parameters of one layer and direction.
struct RNNWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;  // biases undefined without bias
  Tensor w_hr;                    // LSTM with proj_size only
};

// Shared by RNN, LSTM and GRU: parameter registration, initialisation and the layer/direction
// loop.
class RNNImplBase : public Module {
 public:
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  // Parameters in PyTorch's _flat_weights order.
  std::vector<Tensor> all_weights() const;
  // libtorch's cuDNN weight compaction: nothing to do on the CPU.
  void flatten_parameters() {}

  RNNOptionsBase options_base;

 protected:
  RNNImplBase(const RNNOptionsBase& options, int64_t gates);

  // A cell step: (x-projection incl. bias_ih [N, G*H], states) -> new states; states[0] is h.
  using Step = std::vector<Tensor> (*)(const Tensor& input_projection, const std::vector<Tensor>& states,
                                      const RNNWeights& weights);
  // Runs all layers and directions. `initial` holds one [layers*D, N, H] tensor per state
  // kind (h, or h and c); returns the output and the final states in the same layout.
  std::pair<Tensor, std::vector<Tensor>> run(const Tensor& input, std::vector<Tensor> initial, Step step,
                                             const char* op);
  // run() over each sequence of `input` alone (its own length); `initial` as in run(), in the
  // batch's original order. Returns the packed output and the final states.
  std::pair<utils::rnn::PackedSequence, std::vector<Tensor>> run_packed(const utils::rnn::PackedSequence& input,
                                                                        std::vector<Tensor> initial, Step step,
                                                                        const char* op);

  std::vector<RNNWeights> weights_;  // index: layer * D + direction
};

}  // namespace detail

class RNNImpl : public detail::RNNImplBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);

  // Returns (output, h_n); hx (h_0) defaults to zeros. h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())})
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});

  RNNOptions options;
};
EMBER_MODULE(RNN);

class LSTMImpl : public detail::RNNImplBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);

  // Returns (output, (h_n, c_n)); hx = (h_0, c_0) defaults to zeros.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt);
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(std::optional<std::tuple<Tensor, Tensor>>())})
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt);

  LSTMOptions options;
};
EMBER_MODULE(LSTM);

class GRUImpl : public detail::RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);

  // Returns (output, h_n); hx (h_0) defaults to zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())})
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});

  GRUOptions options;
};
EMBER_MODULE(GRU);

// Parameters weight_ih [G*H, in], weight_hh [G*H, H], bias_ih [G*H], bias_hh [G*H].
// input [N, input_size] or unbatched [input_size].
class RNNCellImplBase : public Module {
 public:
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  RNNCellOptionsBase options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNCellImplBase(const RNNCellOptionsBase& options, int64_t gates);
  // Checks shapes; returns input, the states and whether the batch dim was added.
  std::tuple<Tensor, std::vector<Tensor>, bool> prepare(const Tensor& input, std::vector<Tensor> states,
                                                        const char* op) const;
};

class LSTMCellImpl : public RNNCellImplBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);

  // Returns (h', c'); hx = (h, c) defaults to zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt);
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(std::optional<std::tuple<Tensor, Tensor>>())})
};
EMBER_MODULE(LSTMCell);

class GRUCellImpl : public RNNCellImplBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);

  // Returns h'; hx defaults to zeros.
  Tensor forward(const Tensor& input, Tensor hx = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())})
};
EMBER_MODULE(GRUCell);

}  // namespace ember::nn
