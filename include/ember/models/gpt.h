// A decoder-only transformer in the common PyTorch GPT/Llama layout: token embedding,
// rotary positions, RMSNorm, grouped-query attention under a causal (optionally sliding
// window) document mask, SwiGLU MLP, LM head tied to the embedding.
#pragma once
#include <string>
#include <vector>

#include "ember/nn.h"
#include "ember/nn/attention/kv_cache.h"

namespace ember::models {

struct GPTConfig {
  int64_t vocab_size = 256;
  int64_t dim = 192;
  int64_t n_layers = 4;
  int64_t n_heads = 6;
  int64_t n_kv_heads = 2;
  int64_t hidden_dim = 512;      // SwiGLU inner width
  int64_t max_seq_len = 256;
  int64_t window = 0;            // sliding-window width; 0 = full causal
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;

  int64_t head_dim() const { return dim / n_heads; }
  // Throws ember::Error naming the first inconsistent field.
  void validate() const;
  std::string to_json() const;
  static GPTConfig from_json(const std::string& json);
  bool operator==(const GPTConfig& other) const { return to_json() == other.to_json(); }
};

// The causal document mask of a batch (optionally a sliding window): position q of row b
// sees key kv when kv <= q, (q - kv) < window if set, and both are in the same document.
// doc_ids [B, T] (int32); undefined means one document per row.
nn::attention::BlockMask batch_block_mask(const Tensor& doc_ids, int64_t batch, int64_t seq_len, int64_t window);

// The block mask of decoding `queries` new positions after `cached` ones (one document):
// query i sits at position cached + i and sees keys 0 .. cached + i (within the window).
nn::attention::BlockMask decode_block_mask(int64_t queries, int64_t cached, int64_t window);

// x: [B, T, dim]; q [B, Hq, T, hd], k/v [B, Hkv, T, hd] through flex_attention with GQA.
// rope_cos/rope_sin: the rows of x's positions [T, hd / 2], in x's dtype. With a cache, the
// new keys and values join it and the queries attend to everything cached under `mask`.
class AttentionImpl : public nn::Module {
 public:
  explicit AttentionImpl(const GPTConfig& config);
  Tensor forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const nn::attention::BlockMask& mask,
                 nn::attention::KVCache* cache = nullptr);
  // One token per sequence (x: [B, 1, dim]) at position input_pos [1]: its key and value go
  // to the cache there, and the query attends to the whole cache with score_bias [max_length]
  // (0, or -inf past input_pos) added to the scores, as plain products and a softmax.
  Tensor decode_step(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const Tensor& score_bias,
                     const Tensor& input_pos, nn::attention::KVCache& cache);

  GPTConfig config;
  nn::Linear wq{nullptr}, wk{nullptr}, wv{nullptr}, wo{nullptr};
};
EMBER_MODULE(Attention);

class FeedForwardImpl : public nn::Module {
 public:
  explicit FeedForwardImpl(const GPTConfig& config);
  Tensor forward(const Tensor& x);  // w2(silu(w1 x) * w3 x)

  nn::Linear w1{nullptr}, w2{nullptr}, w3{nullptr};
};
EMBER_MODULE(FeedForward);

class TransformerBlockImpl : public nn::Module {
 public:
  explicit TransformerBlockImpl(const GPTConfig& config);
  Tensor forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const nn::attention::BlockMask& mask,
                 nn::attention::KVCache* cache = nullptr);
  Tensor decode_step(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const Tensor& score_bias,
                     const Tensor& input_pos, nn::attention::KVCache& cache);

  Attention attention{nullptr};
  FeedForward feed_forward{nullptr};
  nn::RMSNorm attention_norm{nullptr}, ffn_norm{nullptr};
};
EMBER_MODULE(TransformerBlock);

struct LossOptions {
  double label_smoothing = 0.0;
  double z_loss = 0.0;
};

// Keys and values of every layer, for incremental decoding.
struct GPTCache {
  std::vector<nn::attention::KVCache> layers;
  int64_t length() const { return layers.empty() ? 0 : layers.front().length(); }
};

class GPTImpl : public nn::Module {
 public:
  explicit GPTImpl(const GPTConfig& config);

  // float32 (default) or bfloat16: activations and per-forward copies of the weights in
  // that dtype, parameters (and so gradients and optimizer state) stay float32.
  void set_compute_dtype(ScalarType dtype);
  ScalarType compute_dtype() const { return compute_dtype_; }

  // tokens [B, T] -> final hidden states [B, T, dim] (before the LM head).
  Tensor hidden(const Tensor& tokens, const Tensor& doc_ids);
  // tokens [B, T] -> logits [B, T, vocab].
  Tensor forward(const Tensor& tokens, const Tensor& doc_ids = {});
  // Mean cross-entropy (nats per token) of predicting targets [B, T], through the fused
  // LinearCrossEntropy with the LM head tied to the embedding (no [tokens, vocab] logits).
  Tensor loss(const Tensor& tokens, const Tensor& targets, const Tensor& doc_ids, const LossOptions& options = {});

  // An empty cache for `batch` sequences of up to max_seq_len positions.
  GPTCache make_cache(int64_t batch) const;
  // tokens [B, n] at positions cache.length() .. cache.length() + n - 1 -> logits [B, n, vocab];
  // their keys and values join the cache. A few tokens at a time (n <= 16) run flex
  // attention's decoding path over the cache.
  Tensor forward_cached(const Tensor& tokens, GPTCache& cache);
  // One decoding step whose position is a tensor: tokens [B, 1] at position input_pos [1]
  // (int64) -> logits [B, 1, vocab]. Every shape and address is the same at every position
  // (the query attends to the whole cache, later positions masked), so this is the step
  // ember::Graph captures once and replays with fresh tokens and positions. Writes the
  // cache at input_pos without moving cache.length(). Equals forward_cached to rounding.
  Tensor decode_step(const Tensor& tokens, const Tensor& input_pos, GPTCache& cache);

  GPTConfig config;
  nn::Embedding tok_embeddings{nullptr};
  nn::ModuleList layers{nullptr};
  nn::RMSNorm norm{nullptr};
  Tensor rope_cos, rope_sin;  // [max_seq_len, head_dim / 2], non-persistent buffers

 private:
  // Embeds tokens [B, T] at positions start .. start + T - 1 and runs the layers and the final norm.
  Tensor run(const Tensor& tokens, int64_t start, const nn::attention::BlockMask& mask, GPTCache* cache);

  ScalarType compute_dtype_ = kFloat32;
};
EMBER_MODULE(GPT);

}  // namespace ember::models
