// LSTM, GRU and their single-step cells with PyTorch's gate order, parameter names and
// initialisation (every weight and bias ~ U(+-1/sqrt(hidden_size))).
//
// Shapes (L = sequence length, N = batch, D = 2 if bidirectional else 1, H = hidden_size):
//   input   [L, N, input_size] ([N, L, input_size] with batch_first; [L, input_size] unbatched)
//   output  [L, N, D * H]       (forward and reverse directions concatenated)
//   h, c    [num_layers * D, N, H] ([num_layers * D, H] unbatched), ordered
//           layer 0 forward, layer 0 reverse, layer 1 forward, ...
// Parameters per layer k and direction suffix s ("" or "_reverse"): weight_ih_l{k}{s}
// [G * H, in], weight_hh_l{k}{s} [G * H, H], bias_ih_l{k}{s} [G * H], bias_hh_l{k}{s} [G * H],
// with G = 4 gates for LSTM (i, f, g, o) and 3 for GRU (r, z, n).
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any_value.h"
#include "ember/nn/options.h"

namespace ember::nn {

namespace detail {

// The parameters of one layer and direction.
struct RNNWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;  // biases undefined without bias
};

// Shared by LSTM and GRU: parameter registration, initialisation and the layer/direction loop.
class RNNImplBase : public Module {
 public:
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  // Parameters in PyTorch's _flat_weights order.
  std::vector<Tensor> all_weights() const;

  RNNOptionsBase options;

 protected:
  RNNImplBase(const RNNOptionsBase& options, int64_t gates);

  // A cell step: (x-projection incl. bias_ih [N, G*H], states) -> new states; states[0] is h.
  using Step = std::vector<Tensor> (*)(const Tensor& input_projection, const std::vector<Tensor>& states,
                                      const RNNWeights& weights);
  // Runs all layers and directions. `initial` holds one [layers*D, N, H] tensor per state
  // kind (h, or h and c); returns the output and the final states in the same layout.
  std::pair<Tensor, std::vector<Tensor>> run(const Tensor& input, std::vector<Tensor> initial, Step step,
                                             const char* op);

  std::vector<RNNWeights> weights_;  // index: layer * D + direction
};

}  // namespace detail

class LSTMImpl : public detail::RNNImplBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);

  // Returns (output, (h_n, c_n)); hx = (h_0, c_0) defaults to zeros.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx = std::nullopt);
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(std::optional<std::tuple<Tensor, Tensor>>())})
};
EMBER_MODULE(LSTM);

class GRUImpl : public detail::RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);

  // Returns (output, h_n); hx (h_0) defaults to zeros.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())})
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
