// MultiheadAttention and the Transformer modules (encoder and decoder layers, their stacks,
// the full Transformer), as libtorch's, with PyTorch's parameter names (in_proj_weight,
// out_proj.weight, self_attn.*, linear1, norm1, layers.0.*, ...).
#pragma once
#include <optional>
#include <tuple>

#include "ember/nn/module.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/any_value.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/normalization.h"
#include "ember/nn/options.h"

namespace ember::nn {

// Parameters: in_proj_weight [3E, E] (or q_proj_weight [E, E], k_proj_weight [E, kdim],
// v_proj_weight [E, vdim] when kdim or vdim differ from E), xavier_uniform; in_proj_bias
// [3E] zeros; out_proj (Linear E -> E, bias zeros); bias_k, bias_v [1, 1, E] xavier_normal
// with add_bias_kv. forward returns (output, weights) as F::multi_head_attention_forward;
// masks as there.
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);

  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true);
  EMBER_FORWARD_HAS_DEFAULT_ARGS({3, AnyValue(Tensor())}, {4, AnyValue(true)}, {5, AnyValue(Tensor())},
                                 {6, AnyValue(true)})
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  MultiheadAttentionOptions options;
  bool qkv_same_embed_dim;
  Tensor in_proj_weight, in_proj_bias, bias_k, bias_v;
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;
  Linear out_proj = nullptr;
  int64_t head_dim;
};
EMBER_MODULE(MultiheadAttention);

// self_attn -> dropout1 -> add -> norm1 -> linear1 -> activation -> dropout -> linear2 ->
// dropout2 -> add -> norm2 (norm_first: each norm before its block instead).
class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);

  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())}, {2, AnyValue(Tensor())})

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;
};
EMBER_MODULE(TransformerEncoderLayer);

// Self-attention, cross-attention over memory (multihead_attn), feed-forward; each with its
// dropout, residual add and norm (norm1..norm3, dropout1..dropout3).
class TransformerDecoderLayerImpl : public Module {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);

  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({2, AnyValue(Tensor())}, {3, AnyValue(Tensor())}, {4, AnyValue(Tensor())},
                                 {5, AnyValue(Tensor())})

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn = nullptr, multihead_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr, dropout3 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr, norm3 = nullptr;
};
EMBER_MODULE(TransformerDecoderLayer);

// num_layers copies of encoder_layer (same initial parameters, then independent, as
// libtorch's clone()), under "layers.<i>", then the optional final norm ("norm").
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  // A new layer built from its options.
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& encoder_layer_options, int64_t num_layers)
      : encoder_layer_(TransformerEncoderLayer(encoder_layer_options)), num_layers_(num_layers) {}
  EMBER_ARG(TransformerEncoderLayer, encoder_layer);
  EMBER_ARG(int64_t, num_layers);
  EMBER_ARG(AnyModule, norm) = {};
};

struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  // A new layer built from its options.
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& decoder_layer_options, int64_t num_layers)
      : decoder_layer_(TransformerDecoderLayer(decoder_layer_options)), num_layers_(num_layers) {}
  EMBER_ARG(TransformerDecoderLayer, decoder_layer);
  EMBER_ARG(int64_t, num_layers);
  EMBER_ARG(AnyModule, norm) = {};
};

class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(encoder_layer), num_layers)) {}
  explicit TransformerEncoderImpl(TransformerEncoderOptions options);

  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())}, {2, AnyValue(Tensor())})

  TransformerEncoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
EMBER_MODULE(TransformerEncoder);

class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : TransformerDecoderImpl(TransformerDecoderOptions(std::move(decoder_layer), num_layers)) {}
  explicit TransformerDecoderImpl(TransformerDecoderOptions options);

  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({2, AnyValue(Tensor())}, {3, AnyValue(Tensor())}, {4, AnyValue(Tensor())},
                                 {5, AnyValue(Tensor())})

  TransformerDecoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
EMBER_MODULE(TransformerDecoder);

struct TransformerOptions {
  TransformerOptions() = default;
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers)
      : d_model_(d_model),
        nhead_(nhead),
        num_encoder_layers_(num_encoder_layers),
        num_decoder_layers_(num_decoder_layers) {}
  EMBER_ARG(int64_t, d_model) = 512;
  EMBER_ARG(int64_t, nhead) = 8;
  EMBER_ARG(int64_t, num_encoder_layers) = 6;
  EMBER_ARG(int64_t, num_decoder_layers) = 6;
  EMBER_ARG(int64_t, dim_feedforward) = 2048;
  EMBER_ARG(double, dropout) = 0.1;
  EMBER_ARG(TransformerActivation, activation) = Nonlinearity::ReLU;
  EMBER_ARG(double, layer_norm_eps) = 1e-5;
  EMBER_ARG(bool, batch_first) = false;
  EMBER_ARG(bool, norm_first) = false;
  // Modules used as the encoder (forward(src, src_mask, src_key_padding_mask)) and the decoder
  // (forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
  // memory_key_padding_mask)) instead of the built ones.
  EMBER_ARG(AnyModule, custom_encoder) = {};
  EMBER_ARG(AnyModule, custom_decoder) = {};
};

// encoder (TransformerEncoder with a final LayerNorm, or options.custom_encoder) and decoder
// (likewise); parameters with more than one dim are re-initialised xavier_uniform, as
// PyTorch's Transformer. A custom encoder or decoder is used as given, not cloned (libtorch
// clones it).
class TransformerImpl : public Module {
 public:
  explicit TransformerImpl(TransformerOptions options = {});

  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({2, AnyValue(Tensor())}, {3, AnyValue(Tensor())}, {4, AnyValue(Tensor())},
                                 {5, AnyValue(Tensor())}, {6, AnyValue(Tensor())}, {7, AnyValue(Tensor())})
  // [sz, sz] float mask: 0 on and below the diagonal, -inf above (a position sees itself and
  // earlier ones).
  static Tensor generate_square_subsequent_mask(int64_t sz);

  TransformerOptions options;
  AnyModule encoder;
  AnyModule decoder;
};
EMBER_MODULE(Transformer);

}  // namespace ember::nn
