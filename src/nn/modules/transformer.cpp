// MultiheadAttention and the Transformer modules, following PyTorch's torch/nn/modules
// (activation.py, transformer.py) for the order of operations, names and initialisation.
#include "ember/nn/modules/transformer.h"

#include <limits>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember::nn {

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_) : options(options_) {
  const int64_t E = options.embed_dim(), heads = options.num_heads();
  EMBER_CHECK(E > 0 && heads > 0 && E % heads == 0, "MultiheadAttention", "embed_dim (", E,
              ") must be positive and divisible by num_heads (", heads, ")");
  EMBER_CHECK(options.kdim() > 0 && options.vdim() > 0, "MultiheadAttention", "kdim (", options.kdim(), ") and vdim (",
              options.vdim(), ") must be positive");
  EMBER_CHECK(options.dropout() >= 0 && options.dropout() <= 1, "MultiheadAttention",
              "dropout must be within [0, 1], got ", options.dropout());
  head_dim = E / heads;
  qkv_same_embed_dim = options.kdim() == E && options.vdim() == E;
  if (qkv_same_embed_dim) {
    in_proj_weight = register_parameter("in_proj_weight", ember::empty({3 * E, E}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", ember::empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", ember::empty({E, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", ember::empty({E, options.vdim()}));
  }
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", ember::empty({3 * E}));
  out_proj = register_module("out_proj", Linear(LinearOptions(E, E).bias(options.bias())));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", ember::empty({1, 1, E}));
    bias_v = register_parameter("bias_v", ember::empty({1, 1, E}));
  }
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  for (const Tensor& w : {in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight})
    if (w.defined()) init::xavier_uniform_(w);
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                           const Tensor& key_padding_mask, bool need_weights,
                                                           const Tensor& attn_mask, bool average_attn_weights) {
  // batch_first inputs [N, L, E] are transposed to the functional's [L, N, E] and back.
  const bool transpose = options.batch_first() && query.dim() == 3;
  auto seq_first = [&](const Tensor& t) { return transpose ? t.transpose(0, 1) : t; };
  functional::MultiheadAttentionForwardFuncOptions forward_options(
      options.embed_dim(), options.num_heads(), in_proj_weight, in_proj_bias, bias_k, bias_v, options.add_zero_attn(),
      options.dropout(), out_proj->weight, out_proj->bias);
  forward_options.training(is_training())
      .key_padding_mask(key_padding_mask)
      .need_weights(need_weights)
      .attn_mask(attn_mask)
      .average_attn_weights(average_attn_weights);
  if (!qkv_same_embed_dim) {
    forward_options.use_separate_proj_weight(true)
        .q_proj_weight(q_proj_weight)
        .k_proj_weight(k_proj_weight)
        .v_proj_weight(v_proj_weight);
  }
  auto [output, weights] =
      functional::multi_head_attention_forward(seq_first(query), seq_first(key), seq_first(value), forward_options);
  return {seq_first(output), weights};
}

void MultiheadAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::MultiheadAttention";
}

namespace {

// The feed-forward block: linear2(dropout(activation(linear1(x)))).
Tensor feed_forward(const TransformerActivation& activation, Linear& linear1, Dropout& dropout, Linear& linear2,
                    const Tensor& x) {
  return linear2(dropout(activation(linear1(x))));
}

void check_layer_options(const TransformerEncoderLayerOptions& options, const char* name) {
  EMBER_CHECK(options.dim_feedforward() > 0, name, "dim_feedforward must be positive, got ", options.dim_feedforward());
}

// A copy of `prototype` with the same parameter and buffer values (libtorch's clone()).
template <typename Holder>
Holder copy_layer(const Holder& prototype) {
  Holder copy(prototype->options);
  copy->to(prototype->parameters().front().scalar_type());
  copy->load_state_dict(prototype->state_dict());
  copy->train(prototype->is_training());
  return copy;
}

}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options_)
    : options(options_) {
  check_layer_options(options, "TransformerEncoderLayer");
  const int64_t d = options.d_model();
  self_attn = register_module(
      "self_attn",
      MultiheadAttention(
          MultiheadAttentionOptions(d, options.nhead()).dropout(options.dropout()).batch_first(options.batch_first())));
  linear1 = register_module("linear1", Linear(d, options.dim_feedforward()));
  dropout = register_module("dropout", Dropout(options.dropout()));
  linear2 = register_module("linear2", Linear(options.dim_feedforward(), d));
  norm1 = register_module("norm1", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  norm2 = register_module("norm2", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  dropout1 = register_module("dropout1", Dropout(options.dropout()));
  dropout2 = register_module("dropout2", Dropout(options.dropout()));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask) {
  auto self_attention = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, src_key_padding_mask, /*need_weights=*/false, src_mask)));
  };
  auto ff = [&](const Tensor& x) { return dropout2(feed_forward(options.activation(), linear1, dropout, linear2, x)); };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + self_attention(norm1(x));
    return x + ff(norm2(x));
  }
  x = norm1(x + self_attention(x));
  return norm2(x + ff(x));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options_)
    : options(options_) {
  check_layer_options(options, "TransformerDecoderLayer");
  const int64_t d = options.d_model();
  auto attention = [&] {
    return MultiheadAttention(
        MultiheadAttentionOptions(d, options.nhead()).dropout(options.dropout()).batch_first(options.batch_first()));
  };
  self_attn = register_module("self_attn", attention());
  multihead_attn = register_module("multihead_attn", attention());
  linear1 = register_module("linear1", Linear(d, options.dim_feedforward()));
  dropout = register_module("dropout", Dropout(options.dropout()));
  linear2 = register_module("linear2", Linear(options.dim_feedforward(), d));
  norm1 = register_module("norm1", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  norm2 = register_module("norm2", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  norm3 = register_module("norm3", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  dropout1 = register_module("dropout1", Dropout(options.dropout()));
  dropout2 = register_module("dropout2", Dropout(options.dropout()));
  dropout3 = register_module("dropout3", Dropout(options.dropout()));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask) {
  auto self_attention = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, tgt_key_padding_mask, false, tgt_mask)));
  };
  auto cross_attention = [&](const Tensor& x) {
    return dropout2(std::get<0>(multihead_attn(x, memory, memory, memory_key_padding_mask, false, memory_mask)));
  };
  auto ff = [&](const Tensor& x) { return dropout3(feed_forward(options.activation(), linear1, dropout, linear2, x)); };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + self_attention(norm1(x));
    x = x + cross_attention(norm2(x));
    return x + ff(norm3(x));
  }
  x = norm1(x + self_attention(x));
  x = norm2(x + cross_attention(x));
  return norm3(x + ff(x));
}

TransformerEncoderImpl::TransformerEncoderImpl(TransformerEncoderOptions options_) : options(std::move(options_)) {
  EMBER_CHECK(options.num_layers() > 0, "TransformerEncoder", "num_layers must be positive, got ",
              options.num_layers());
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) layers->push_back(copy_layer(options.encoder_layer()));
  norm = options.norm();
  if (!norm.is_empty()) register_module("norm", norm.ptr());
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask) {
  Tensor output = src;
  for (size_t i = 0; i < layers->size(); ++i) {
    TransformerEncoderLayer layer(layers->ptr<TransformerEncoderLayerImpl>(i));
    output = layer(output, src_mask, src_key_padding_mask);
  }
  return norm.is_empty() ? output : norm.forward(output);
}

TransformerDecoderImpl::TransformerDecoderImpl(TransformerDecoderOptions options_) : options(std::move(options_)) {
  EMBER_CHECK(options.num_layers() > 0, "TransformerDecoder", "num_layers must be positive, got ",
              options.num_layers());
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) layers->push_back(copy_layer(options.decoder_layer()));
  norm = options.norm();
  if (!norm.is_empty()) register_module("norm", norm.ptr());
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask) {
  Tensor output = tgt;
  for (size_t i = 0; i < layers->size(); ++i) {
    TransformerDecoderLayer layer(layers->ptr<TransformerDecoderLayerImpl>(i));
    output = layer(output, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
  }
  return norm.is_empty() ? output : norm.forward(output);
}

TransformerImpl::TransformerImpl(TransformerOptions options_) : options(std::move(options_)) {
  auto layer_options = TransformerEncoderLayerOptions(options.d_model(), options.nhead())
                           .dim_feedforward(options.dim_feedforward())
                           .dropout(options.dropout())
                           .activation(options.activation())
                           .layer_norm_eps(options.layer_norm_eps())
                           .batch_first(options.batch_first())
                           .norm_first(options.norm_first());
  auto final_norm = [&] { return LayerNorm(LayerNormOptions({options.d_model()}).eps(options.layer_norm_eps())); };
  if (!options.custom_encoder().is_empty()) {
    encoder = options.custom_encoder();
  } else {
    encoder = AnyModule(TransformerEncoder(
        TransformerEncoderOptions(TransformerEncoderLayer(layer_options), options.num_encoder_layers())
            .norm(AnyModule(final_norm()))));
  }
  register_module("encoder", encoder.ptr());
  if (!options.custom_decoder().is_empty()) {
    decoder = options.custom_decoder();
  } else {
    decoder = AnyModule(TransformerDecoder(
        TransformerDecoderOptions(TransformerDecoderLayer(layer_options), options.num_decoder_layers())
            .norm(AnyModule(final_norm()))));
  }
  register_module("decoder", decoder.ptr());
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask) {
  const bool batched = src.dim() == 3;
  const int64_t batch_dim = options.batch_first() ? 0 : 1;
  EMBER_CHECK(src.dim() == tgt.dim() && (src.dim() == 3 || src.dim() == 2), "Transformer",
              "src and tgt should have 3 dimensions (2 unbatched), but got ", src.dim(), " and ", tgt.dim());
  EMBER_CHECK(!batched || src.size(batch_dim) == tgt.size(batch_dim), "Transformer",
              "src and tgt should have equal batch size (at dim ", batch_dim, "), but got src ", src.sizes(),
              " and tgt ", tgt.sizes());
  EMBER_CHECK(src.size(-1) == options.d_model() && tgt.size(-1) == options.d_model(), "Transformer",
              "src and tgt should have same feature size as d_model (", options.d_model(), "), but got src ",
              src.sizes(), " and tgt ", tgt.sizes());
  Tensor memory = encoder.forward(src, src_mask, src_key_padding_mask);
  return decoder.forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  EMBER_CHECK(sz >= 0, "Transformer", "generate_square_subsequent_mask needs a non-negative size, got ", sz);
  return triu(full({sz, sz}, -std::numeric_limits<double>::infinity()), 1);
}

}  // namespace ember::nn
