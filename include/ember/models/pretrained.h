// Pretrained causal language models in Hugging Face's layout: from_pretrained builds one
// configurable decoder (Llama, Mistral, Qwen2, Qwen3, Gemma, Phi-3, GPT-2) from config.json and
// the safetensors shards, with weights mapped zero-copy; save_pretrained writes the directory
// back with the same keys. Parameter names equal the checkpoint keys.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/graph.h"
#include "ember/models/pretrained_config.h"
#include "ember/nn.h"
#include "ember/nn/attention/kv_cache.h"
#include "ember/quantized.h"

namespace ember::models {

struct PretrainedOptions {
  // Weight and compute dtype: kFloat32 or kBFloat16. Weights stored in another are converted
  // once, at load.
  ScalarType dtype = kFloat32;
  // Longest sequence (prompt + generated) the model accepts; 0: the config's
  // max_position_embeddings.
  int64_t max_seq_len = 0;
  // Owned, writable weights with requires_grad (full fine-tuning). Off: the weights require no
  // gradient (and are read-only views of the files under map_weights).
  bool trainable = false;
  // Weight-only quantization for inference: "" (none), "int8" (the layers' projections and
  // the LM head in blocks of 32 int8 values with a float16 scale, ember/quantized.h) or "int4"
  // (the projections in blocks of 32 4-bit values, the head in int8); embeddings and norms
  // stay in dtype. Not with trainable.
  std::string quantize;
  // Weights stored in dtype (and the blocks of a directory written by `ember quantize`): true
  // uses them as read-only views of the mapped files (no copy; pages read on first use, as
  // llama.cpp's mmap); false copies them into ember's memory, whose large blocks get huge
  // pages: a decoding step streams every weight, and ran about 10% faster so (bf16
  // Qwen2.5-0.5B, Zen 5). The float weights a model quantizes at load stay mapped either way
  // (the products read the blocks); trainable weights are always copies.
  bool map_weights = false;
};

// A tensor of the checkpoint: its key and shape.
struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
};
// Every tensor a checkpoint of `config` holds (a tied head is not among them), in
// transformers' order.
std::vector<CheckpointTensor> checkpoint_tensors(const PretrainedConfig& config);

// Keys and values of every layer, for incremental decoding.
struct DecoderCache {
  std::vector<nn::attention::KVCache> layers;
  int64_t length() const { return layers.empty() ? 0 : layers.front().length(); }
};

struct LoraConfig;  // lora.h
namespace detail {
class DecoderLayerImpl;
struct LoraAccess;  // lora.cpp: adds, merges and lists the layers' adapters
}

class CausalLMImpl : public nn::Module {
 public:
  // `weights` holds one tensor per entry of checkpoint_tensors(config), by name, with that
  // shape; they become the parameters as given (no copy), requiring grad when
  // options.trainable. Compute runs in options.dtype.
  CausalLMImpl(PretrainedConfig config, std::map<std::string, Tensor> weights, const PretrainedOptions& options = {});
  ~CausalLMImpl() override;

  const PretrainedConfig& config() const { return config_; }
  int64_t max_seq_len() const { return max_seq_len_; }
  // float32 or bfloat16: the activations' dtype (weights of another dtype are converted at
  // every use, as for mixed-precision training over float32 weights).
  void set_compute_dtype(ScalarType dtype);
  ScalarType compute_dtype() const { return compute_dtype_; }

  // tokens [B, T] (int64) -> logits [B, T, vocab] in float32. doc_ids [B, T] (optional):
  // tokens attend only within their document (packed sequences).
  Tensor forward(const Tensor& tokens, const Tensor& doc_ids = {});
  // The final normed hidden states [B, T, hidden] in the compute dtype.
  Tensor hidden(const Tensor& tokens, const Tensor& doc_ids = {});
  // Mean negative log-likelihood (nats per token) of targets [B, T] through the fused linear
  // cross-entropy in float32 (no [tokens, vocab] logits); targets of -100 are ignored.
  Tensor loss(const Tensor& tokens, const Tensor& targets, const Tensor& doc_ids = {});

  // An empty cache for `batch` sequences of up to max_length positions (<= max_seq_len()).
  DecoderCache make_cache(int64_t batch, int64_t max_length) const;
  // tokens [B, n] at positions cache.length() .. cache.length() + n - 1 -> logits [B, n,
  // vocab] (float32); their keys and values join the cache. logits_to_keep > 0 (transformers'
  // name) computes the logits of the last logits_to_keep positions only, [B, logits_to_keep,
  // vocab]: a prompt's prefill needs its last one, and the head is a quarter of a small
  // model's prefill.
  Tensor forward_cached(const Tensor& tokens, DecoderCache& cache, int64_t logits_to_keep = 0);
  // One token a sequence at position input_pos [1] (int64) over a cache of fixed size: the
  // position is a tensor that the kernels read when they run (keys and values written by
  // KVCache::assign, attention by nn::attention::decode_attention), so every call has the same
  // shapes and addresses and ember::Graph can capture the step once and replay it at each
  // position (CapturedDecoder). tokens [B, 1] -> logits [B, 1, vocab] (float32), as
  // forward_cached at that position; the cache's length() does not change.
  Tensor decode_step(const Tensor& tokens, const Tensor& input_pos, DecoderCache& cache);

  // The LM head's weight [vocab, hidden]: the embedding when tied.
  const Tensor& lm_head_weight() const;

  // Weight-only quantization ("int8" or "int4", see PretrainedOptions::quantize; a quantized
  // model can be quantized again to the other type, from its float weights); "" when none.
  void quantize(const std::string& type);
  const std::string& quantization() const { return quantization_; }
  // The quantized copies by checkpoint key ("model.layers.0.self_attn.q_proj.weight"; the head's
  // as kLmHeadKey, tied or not); empty when not quantized.
  std::map<std::string, quantized::QuantizedWeight> quantized_weights() const;
  // Installs quantized copies as given (read from a file) for every projection and the head,
  // each of its weight's shape [out, in]; the model's quantization becomes `type`. `where`
  // names their source in errors.
  void set_quantized_weights(const std::string& type, const std::map<std::string, quantized::QuantizedWeight>& blocks,
                             const std::string& where);
  static constexpr const char* kLmHeadKey = "lm_head.weight";

 private:
  friend struct detail::LoraAccess;
  // Embeds tokens at positions start .. start + T - 1, runs the layers (with the cache when
  // given) and the final norm.
  Tensor run(const Tensor& tokens, int64_t start, const Tensor& doc_ids, DecoderCache* cache);
  // The embeddings of tokens [B, T] in the compute dtype (scaled where the architecture does).
  Tensor embed(const Tensor& tokens) const;
  // Refuses a cache of another model, batch or dtype than `tokens` [B, ...] needs.
  void check_cache(const Tensor& tokens, const DecoderCache& cache, const char* op) const;
  // Rows start .. start + length - 1 of the rotary tables in the compute dtype, grown on demand.
  std::pair<Tensor, Tensor> rope_rows(int64_t start, int64_t length);
  Tensor final_norm(const Tensor& x) const;
  // Logits in float32 from hidden states, through the quantized head when quantized.
  Tensor head(const Tensor& h);
  // "model.layers.N." (GPT-2: "transformer.h.N."), the prefix of layer N's checkpoint keys.
  std::string layer_prefix(size_t layer) const;

  PretrainedConfig config_;
  ScalarType compute_dtype_ = kFloat32;
  int64_t max_seq_len_ = 0;
  Tensor embedding_, positions_, norm_weight_, norm_bias_, lm_head_;
  std::string quantization_;
  quantized::QuantizedWeight lm_head_quantized_;
  std::vector<std::shared_ptr<detail::DecoderLayerImpl>> layers_;
  std::vector<int64_t> windows_;  // the distinct sliding windows of the layers (0: none)
  std::vector<size_t> layer_window_;  // index into windows_ per layer
  Tensor rope_cos_, rope_sin_;  // [positions computed, rotary_dim / 2], float32 values of the compute dtype
  std::shared_ptr<const LoraConfig> lora_;  // the adapters' settings (lora.h); null without any
};
EMBER_MODULE(CausalLM);

// Decoding through a replayed graph (ember/graph.h): each step replays a captured
// CausalLMImpl::decode_step instead of dispatching its few hundred ops one by one (Note
// [Captured decoding] in src/models/causal_lm.cpp). The first step runs eagerly and captures.
class CapturedDecoder {
 public:
  // Steps continue `cache` from its length() (after a prefill by forward_cached). The model and
  // the cache must outlive the decoder, and neither may change under it: the graph reads the
  // model's weights (make a new decoder after quantize, set_compute_dtype or adapters) and the
  // cache's buffers as they were at capture.
  CapturedDecoder(CausalLM model, DecoderCache& cache);
  ~CapturedDecoder();
  CapturedDecoder(const CapturedDecoder&) = delete;
  CapturedDecoder& operator=(const CapturedDecoder&) = delete;
  // tokens [B, 1] at position cache.length() -> logits [B, vocab] (float32); the cache's
  // length grows by one. The logits are the graph's output, which the next step overwrites:
  // clone them to keep them.
  Tensor step(const Tensor& tokens);

 private:
  CausalLM model_;
  DecoderCache& cache_;
  Tensor tokens_, position_, logits_;  // the graph's input and output
  std::unique_ptr<Graph> graph_;
};

// Reads `dir` (config.json, model.safetensors or model.safetensors.index.json and its shards,
// generation_config.json if present). Missing or unexpected tensors, wrong shapes or dtypes,
// unknown architectures or rope types are one ember::Error naming the file and the key.
CausalLM from_pretrained(const std::string& dir, const PretrainedOptions& options = {});

// Writes config.json (the original JSON, its dtype updated), generation_config.json (if one
// was read) and the weights under their checkpoint keys in `{"format": "pt"}` safetensors: one
// model.safetensors, or shards of at most max_shard_bytes (a larger tensor gets a shard of its
// own) with model.safetensors.index.json. Each file is written atomically; shards of an
// earlier save that this one does not write are removed.
void save_pretrained(CausalLM& model, const std::string& dir, int64_t max_shard_bytes = 5'000'000'000);
// Writes a quantized model (CausalLMImpl::quantize) as save_pretrained does, its weights in one
// model.safetensors: every quantized weight as its blocks, "<key without .weight>.qweight" and
// ".scales", the head's as "lm_head.qweight" / "lm_head.scales" (also when tied), the other
// tensors under their keys, and __metadata__ "quantization" naming the type (Note [Quantized
// checkpoints] in src/models/pretrained_io.cpp). from_pretrained reads such a directory back,
// quantized, with the blocks as stored.
void save_quantized(CausalLM& model, const std::string& dir);
// A quantized model's blocks under the keys save_quantized writes them with: "<stem>.qweight"
// and "<stem>.scales" for each quantized weight "<stem>.weight" (the head's "lm_head.*"), in
// the order of CausalLMImpl::quantized_weights(); empty when the model is not quantized.
std::vector<std::pair<std::string, Tensor>> quantized_block_tensors(const CausalLM& model);

// generation_config.json's eos/bos/pad ids and sampling settings, over config.json's ids.
GenerationConfig read_generation_config(const std::string& dir);

// Perplexity as llama-perplexity computes it: `ids` cut into non-overlapping windows of ctx
// tokens (the remainder after the last full window dropped), each window one forward from
// scratch scoring its tokens 2..ctx; nll is the mean of -log p over the scored tokens.
struct PerplexityResult {
  int64_t tokens = 0;  // scored tokens
  double nll = 0;      // mean nats per token
  double perplexity = 0;
};
PerplexityResult perplexity(CausalLMImpl& model, const std::vector<int64_t>& ids, int64_t ctx);

}  // namespace ember::models
