#include "ember/models/gpt.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "ember/autograd.h"
#include "ember/detail/autocast_linear.h"
#include "ember/functions.h"

namespace ember::models {
namespace F = ember::nn::functional;

void GPTConfig::validate() const {
  EMBER_CHECK(vocab_size > 0, "GPTConfig", "vocab_size must be positive, got ", vocab_size);
  EMBER_CHECK(dim > 0 && n_layers > 0 && n_heads > 0 && n_kv_heads > 0 && hidden_dim > 0 && max_seq_len > 0,
              "GPTConfig", "dim, n_layers, n_heads, n_kv_heads, hidden_dim and max_seq_len must be positive");
  EMBER_CHECK(dim % n_heads == 0, "GPTConfig", "dim ", dim, " is not divisible by n_heads ", n_heads);
  EMBER_CHECK(head_dim() % 2 == 0, "GPTConfig", "head_dim ", head_dim(), " must be even for rotary embeddings");
  EMBER_CHECK(n_heads % n_kv_heads == 0, "GPTConfig", "n_heads ", n_heads, " is not a multiple of n_kv_heads ",
              n_kv_heads);
  EMBER_CHECK(window >= 0, "GPTConfig", "window must be >= 0, got ", window);
}

std::string GPTConfig::to_json() const {
  nlohmann::json j = {{"vocab_size", vocab_size}, {"dim", dim},           {"n_layers", n_layers},
                      {"n_heads", n_heads},       {"n_kv_heads", n_kv_heads}, {"hidden_dim", hidden_dim},
                      {"max_seq_len", max_seq_len}, {"window", window},   {"rope_theta", rope_theta},
                      {"norm_eps", norm_eps}};
  return j.dump();
}

GPTConfig GPTConfig::from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL("GPTConfig", "invalid JSON: ", e.what());
  }
  EMBER_CHECK(j.is_object(), "GPTConfig", "expected a JSON object");
  GPTConfig c;
  auto read = [&](const char* key, auto& field) {
    if (!j.contains(key)) return;
    try {
      field = j.at(key).get<std::decay_t<decltype(field)>>();
    } catch (const nlohmann::json::exception&) {
      EMBER_FAIL("GPTConfig", "field '", key, "' has the wrong type");
    }
  };
  read("vocab_size", c.vocab_size);
  read("dim", c.dim);
  read("n_layers", c.n_layers);
  read("n_heads", c.n_heads);
  read("n_kv_heads", c.n_kv_heads);
  read("hidden_dim", c.hidden_dim);
  read("max_seq_len", c.max_seq_len);
  read("window", c.window);
  read("rope_theta", c.rope_theta);
  read("norm_eps", c.norm_eps);
  c.validate();
  return c;
}

namespace {

// The layer's weight in the activations' dtype (bfloat16 compute keeps float32 parameters).
Tensor project(const nn::Linear& layer, const Tensor& x) { return ember::detail::autocast_linear(x, layer->weight); }

// Rows of a rotary table rounded to the compute dtype and kept in float32: the rotation
// computes in float32 and would widen a bf16 table in each of its calls.
Tensor rounded_rows(const Tensor& table, ScalarType dtype) { return table.to(dtype).to(kFloat32); }

Tensor normalize(const nn::RMSNorm& norm, const Tensor& x) {
  return F::rms_norm(x, nn::RMSNormFuncOptions(norm->options.normalized_shape())
                            .weight(norm->weight.to(x.scalar_type()))
                            .eps(norm->options.eps()));
}

}  // namespace

nn::attention::BlockMask batch_block_mask(const Tensor& doc_ids, int64_t batch, int64_t seq_len, int64_t window) {
  auto ids = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(batch * seq_len), 0);
  if (doc_ids.defined()) {
    EMBER_CHECK(doc_ids.sizes() == std::vector<int64_t>({batch, seq_len}), "GPT", "doc_ids shape ", doc_ids.sizes(),
                " does not match tokens [", batch, ", ", seq_len, "]");
    Tensor flat = doc_ids.to(kInt32).contiguous();
    std::copy(flat.data_ptr<int32_t>(), flat.data_ptr<int32_t>() + flat.numel(), ids->begin());
  }
  const int32_t T = static_cast<int32_t>(seq_len), W = static_cast<int32_t>(window);
  // Bitwise & and | rather than && and ||: no branches, so the mask kernels vectorize it.
  auto mask = [ids, T, W](auto b, auto, auto q, auto kv) {
    const int32_t* row = ids->data() + static_cast<int64_t>(b) * T;
    return (q >= kv) & ((W == 0) | (q - kv < W)) & (row[q] == row[kv]);
  };
  // Blocks of a quarter of the sequence (32 to 64): packed short documents then leave whole
  // blocks empty to skip. At T = 128, 32 measured 5% faster training steps than 64.
  const int64_t block = std::clamp<int64_t>(seq_len / 4, 32, 64);
  return nn::attention::create_block_mask(mask, batch, 1, seq_len, seq_len, nn::attention::BlockSize(block));
}

nn::attention::BlockMask decode_block_mask(int64_t queries, int64_t cached, int64_t window) {
  return nn::attention::causal_block_mask(queries, cached + queries, cached, window, nn::attention::BlockSize(64));
}

AttentionImpl::AttentionImpl(const GPTConfig& c) : config(c) {
  const int64_t hd = c.head_dim();
  wq = register_module("wq", nn::Linear(nn::LinearOptions(c.dim, c.n_heads * hd).bias(false)));
  wk = register_module("wk", nn::Linear(nn::LinearOptions(c.dim, c.n_kv_heads * hd).bias(false)));
  wv = register_module("wv", nn::Linear(nn::LinearOptions(c.dim, c.n_kv_heads * hd).bias(false)));
  wo = register_module("wo", nn::Linear(nn::LinearOptions(c.n_heads * hd, c.dim).bias(false)));
}

namespace {

struct QueryKeyValue {
  Tensor q, k, v;  // [B, Hq, T, hd], [B, Hkv, T, hd], [B, Hkv, T, hd]
};

QueryKeyValue project_qkv(const AttentionImpl& a, const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin) {
  const int64_t B = x.size(0), T = x.size(1), hd = a.config.head_dim();
  const int64_t Hq = a.config.n_heads, Hkv = a.config.n_kv_heads;
  // The three products share x (a group); rotated straight from the [B, T, H, hd] projections:
  // the fused kernel reads the strides.
  const std::vector<Tensor> qkv = ember::detail::autocast_linear_group(x, {a.wq->weight, a.wk->weight, a.wv->weight});
  return {F::rotary_embedding(qkv[0].view({B, T, Hq, hd}).transpose(1, 2), rope_cos, rope_sin),
          F::rotary_embedding(qkv[1].view({B, T, Hkv, hd}).transpose(1, 2), rope_cos, rope_sin),
          qkv[2].view({B, T, Hkv, hd}).transpose(1, 2)};
}

// The pre-norm residual block around `attend` (attention of the normalized input).
template <typename Attend>
Tensor residual_block(TransformerBlockImpl& block, const Tensor& x, Attend attend) {
  Tensor h = x + attend(normalize(block.attention_norm, x));
  return h + block.feed_forward->forward(normalize(block.ffn_norm, h));
}

}  // namespace

Tensor AttentionImpl::forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                              const nn::attention::BlockMask& mask, nn::attention::KVCache* cache) {
  const int64_t B = x.size(0), T = x.size(1), hd = config.head_dim(), Hq = config.n_heads;
  auto [q, k, v] = project_qkv(*this, x, rope_cos, rope_sin);
  if (cache) {
    cache->append(k, v);
    k = cache->keys();
    v = cache->values();
  }
  Tensor out = nn::attention::flex_attention(q, k, v, mask, nn::attention::FlexAttentionOptions().set_enable_gqa(true));
  return project(wo, out.transpose(1, 2).reshape({B, T, Hq * hd}));
}

Tensor AttentionImpl::decode_step(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                                  const Tensor& score_bias, const Tensor& input_pos, nn::attention::KVCache& cache) {
  const int64_t B = x.size(0), hd = config.head_dim(), Hq = config.n_heads, Hkv = config.n_kv_heads;
  auto [q, k, v] = project_qkv(*this, x, rope_cos, rope_sin);
  cache.assign(input_pos, k, v);
  // Query head h reads key head h / (Hq / Hkv), as flex attention's enable_gqa does.
  Tensor grouped = q.reshape({B, Hkv, Hq / Hkv, hd});  // [B, Hkv, group, hd]
  Tensor scores = grouped.matmul(cache.key_buffer().transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor out = (scores + score_bias).softmax(-1).matmul(cache.value_buffer());  // [B, Hkv, group, hd]
  return project(wo, out.reshape({B, 1, Hq * hd}));
}

FeedForwardImpl::FeedForwardImpl(const GPTConfig& c) {
  w1 = register_module("w1", nn::Linear(nn::LinearOptions(c.dim, c.hidden_dim).bias(false)));
  w2 = register_module("w2", nn::Linear(nn::LinearOptions(c.hidden_dim, c.dim).bias(false)));
  w3 = register_module("w3", nn::Linear(nn::LinearOptions(c.dim, c.hidden_dim).bias(false)));
}

Tensor FeedForwardImpl::forward(const Tensor& x) {
  const std::vector<Tensor> gate_up = ember::detail::autocast_linear_group(x, {w1->weight, w3->weight});
  return project(w2, F::swiglu(gate_up[0], gate_up[1]));
}

TransformerBlockImpl::TransformerBlockImpl(const GPTConfig& c) {
  attention = register_module("attention", Attention(c));
  feed_forward = register_module("feed_forward", FeedForward(c));
  attention_norm = register_module("attention_norm", nn::RMSNorm(nn::RMSNormOptions({c.dim}).eps(c.norm_eps)));
  ffn_norm = register_module("ffn_norm", nn::RMSNorm(nn::RMSNormOptions({c.dim}).eps(c.norm_eps)));
}

Tensor TransformerBlockImpl::forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                                     const nn::attention::BlockMask& mask, nn::attention::KVCache* cache) {
  return residual_block(*this, x, [&](const Tensor& n) { return attention->forward(n, rope_cos, rope_sin, mask, cache); });
}

Tensor TransformerBlockImpl::decode_step(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                                         const Tensor& score_bias, const Tensor& input_pos,
                                         nn::attention::KVCache& cache) {
  return residual_block(
      *this, x, [&](const Tensor& n) { return attention->decode_step(n, rope_cos, rope_sin, score_bias, input_pos, cache); });
}

GPTImpl::GPTImpl(const GPTConfig& c) : config(c) {
  c.validate();
  tok_embeddings = register_module("tok_embeddings", nn::Embedding(c.vocab_size, c.dim));
  {
    // GPT-style init: the tied embedding doubles as the LM head, so keep it small.
    NoGradGuard guard;
    tok_embeddings->weight.normal_(0, 0.02);
  }
  layers = register_module("layers", nn::ModuleList());
  for (int64_t i = 0; i < c.n_layers; ++i) layers->push_back(TransformerBlock(c));
  norm = register_module("norm", nn::RMSNorm(nn::RMSNormOptions({c.dim}).eps(c.norm_eps)));
  const int64_t half = c.head_dim() / 2;
  Tensor inv_freq = pow(c.rope_theta, arange(0, half, 1, kFloat64) * (-2.0 / static_cast<double>(c.head_dim())));
  Tensor angles = outer(arange(c.max_seq_len, kFloat64), inv_freq);
  rope_cos = register_buffer("rope_cos", angles.cos().to(kFloat32), /*persistent=*/false);
  rope_sin = register_buffer("rope_sin", angles.sin().to(kFloat32), /*persistent=*/false);
}

void GPTImpl::set_compute_dtype(ScalarType dtype) {
  EMBER_CHECK(dtype == kFloat32 || dtype == kBFloat16, "GPT", "compute dtype must be float32 or bfloat16, got ", dtype);
  compute_dtype_ = dtype;
}

Tensor GPTImpl::run(const Tensor& tokens, int64_t start, const nn::attention::BlockMask& mask, GPTCache* cache) {
  EMBER_CHECK(tokens.dim() == 2, "GPT", "tokens must be [batch, time], got shape ", tokens.sizes());
  const int64_t T = tokens.size(1);
  EMBER_CHECK(start + T <= config.max_seq_len, "GPT", "positions ", start, " .. ", start + T - 1,
              " exceed max_seq_len ", config.max_seq_len);
  Tensor x = tok_embeddings->forward(tokens).to(compute_dtype_);
  Tensor cos = rounded_rows(rope_cos.narrow(0, start, T), compute_dtype_);
  Tensor sin = rounded_rows(rope_sin.narrow(0, start, T), compute_dtype_);
  // Through the holder, so that the blocks' forward hooks (FSDP's) run.
  for (size_t i = 0; i < layers->size(); ++i)
    x = TransformerBlock(layers->ptr<TransformerBlockImpl>(i))(x, cos, sin, mask, cache ? &cache->layers[i] : nullptr);
  return normalize(norm, x);
}

Tensor GPTImpl::hidden(const Tensor& tokens, const Tensor& doc_ids) {
  EMBER_CHECK(tokens.dim() == 2, "GPT", "tokens must be [batch, time], got shape ", tokens.sizes());
  return run(tokens, 0, batch_block_mask(doc_ids, tokens.size(0), tokens.size(1), config.window), nullptr);
}

Tensor GPTImpl::forward(const Tensor& tokens, const Tensor& doc_ids) {
  Tensor h = hidden(tokens, doc_ids);
  return F::linear(h, tok_embeddings->weight.to(h.scalar_type()));
}

Tensor GPTImpl::loss(const Tensor& tokens, const Tensor& targets, const Tensor& doc_ids, const LossOptions& options) {
  // The head's products run in the compute dtype and the loss is accumulated and returned in
  // float32, as linear then cross_entropy under PyTorch's autocast (a bfloat16 loss would keep
  // 3 significant digits); the fused op keeps the logits in float32 besides.
  Tensor h = hidden(tokens, doc_ids);
  return F::linear_cross_entropy(h.reshape({-1, config.dim}), tok_embeddings->weight.to(h.scalar_type()),
                                 targets.reshape({-1}),
                                 nn::LinearCrossEntropyFuncOptions()
                                     .label_smoothing(options.label_smoothing)
                                     .z_loss(options.z_loss)
                                     .loss_dtype(kFloat32));
}

GPTCache GPTImpl::make_cache(int64_t batch) const {
  EMBER_CHECK(batch > 0, "GPT", "cache batch must be positive, got ", batch);
  GPTCache cache;
  for (size_t i = 0; i < layers->size(); ++i)
    cache.layers.emplace_back(batch, config.n_kv_heads, config.max_seq_len, config.head_dim(), config.head_dim(),
                              compute_dtype_);
  return cache;
}

Tensor GPTImpl::forward_cached(const Tensor& tokens, GPTCache& cache) {
  EMBER_CHECK(tokens.dim() == 2 && tokens.size(1) > 0, "GPT", "tokens must be [batch, time] with time > 0, got shape ",
              tokens.sizes());
  EMBER_CHECK(cache.layers.size() == layers->size(), "GPT", "the cache has ", cache.layers.size(),
              " layers, the model ", layers->size());
  const int64_t start = cache.length();
  Tensor h = run(tokens, start, decode_block_mask(tokens.size(1), start, config.window), &cache);
  return F::linear(h, tok_embeddings->weight.to(h.scalar_type()));
}

Tensor GPTImpl::decode_step(const Tensor& tokens, const Tensor& input_pos, GPTCache& cache) {
  EMBER_CHECK(tokens.dim() == 2 && tokens.size(1) == 1, "GPT::decode_step", "tokens must be [batch, 1], got shape ",
              tokens.sizes());
  EMBER_CHECK(input_pos.dim() == 1 && input_pos.size(0) == 1 && input_pos.scalar_type() == kInt64,
              "GPT::decode_step", "input_pos must be int64 of shape [1], got ", dtype_name(input_pos.scalar_type()),
              " of shape ", input_pos.sizes());
  EMBER_CHECK(cache.layers.size() == layers->size(), "GPT::decode_step", "the cache has ", cache.layers.size(),
              " layers, the model ", layers->size());
  const int64_t max_length = cache.layers.front().max_length();
  Tensor x = tok_embeddings->forward(tokens).to(compute_dtype_);
  Tensor cos = rounded_rows(rope_cos.index_select(0, input_pos), compute_dtype_);
  Tensor sin = rounded_rows(rope_sin.index_select(0, input_pos), compute_dtype_);
  // Keys after input_pos, and before its window, get no weight: the decode mask of forward_cached.
  Tensor key_pos = arange(max_length, kInt64);
  Tensor hidden_keys = key_pos > input_pos;
  if (config.window > 0) hidden_keys = hidden_keys.logical_or(key_pos <= input_pos - config.window);
  Tensor score_bias = zeros({max_length}, compute_dtype_).masked_fill(hidden_keys, -INFINITY);
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->ptr<TransformerBlockImpl>(i)->decode_step(x, cos, sin, score_bias, input_pos, cache.layers[i]);
  Tensor h = normalize(norm, x);
  return F::linear(h, tok_embeddings->weight.to(h.scalar_type()));
}

}  // namespace ember::models
