// The pretrained decoder as a module: embeddings (scaled, with learned positions or rotary
// tables), the layers, the final norm and the LM head; full forwards, the fused loss, and
// incremental decoding over a KV cache.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "decoder_layer.h"
#include "decoder_layout.h"
#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/models/gpt.h"
#include "ember/models/pretrained.h"
#include "ember/nn/attention/block_mask.h"

// Note [One decoder for seven families]: Llama, Mistral, Qwen2, Qwen3, Gemma, Phi-3 and GPT-2
// differ in a few switches (decoder_layout.h: norm kind, norm weight + 1, embedding scale,
// fused projections, gated or plain MLP, qk-norm, learned or rotary positions, tied head) and
// in their checkpoint keys, so one layer class computes all of them and one table
// (checkpoint_entries) names each weight and gives its role. Weights are used in the layout
// they are stored in: GPT-2's Conv1D weights [in, out] as x @ W, Phi-3's fused qkv_proj and
// gate_up_proj as one product split by narrow(), so named_parameters() maps one to one onto
// the files in both directions and nothing is rearranged at load.

namespace ember::models {
namespace F = ember::nn::functional;
using detail::WeightRole;

namespace {

constexpr const char* kOp = "CausalLM";

// Names of the checkpoint tensors that `weights` lacks, has beyond `entries`, or holds in
// another shape: one error listing them all.
void check_weights(const std::vector<detail::CheckpointEntry>& entries, const std::map<std::string, Tensor>& weights) {
  std::vector<std::string> missing, unexpected, misshapen;
  std::set<std::string> expected;
  for (const auto& entry : entries) {
    expected.insert(entry.name);
    auto it = weights.find(entry.name);
    if (it == weights.end() || !it->second.defined()) {
      missing.push_back(entry.name);
    } else if (it->second.sizes() != entry.shape) {
      misshapen.push_back(str(entry.name, " ", it->second.sizes(), " (expected ", entry.shape, ")"));
    }
  }
  for (const auto& [name, tensor] : weights)
    if (!expected.count(name)) unexpected.push_back(name);
  EMBER_CHECK(missing.empty() && unexpected.empty() && misshapen.empty(), kOp, "weights do not match the config: missing ",
              missing, ", unexpected ", unexpected, ", wrong shape ", misshapen);
}

}  // namespace

CausalLMImpl::CausalLMImpl(PretrainedConfig config, std::map<std::string, Tensor> weights,
                           const PretrainedOptions& options)
    : nn::Module(architecture_name(config.architecture)), config_(std::move(config)) {
  set_compute_dtype(options.dtype);
  EMBER_CHECK(options.max_seq_len >= 0, kOp, "max_seq_len must be >= 0, got ", options.max_seq_len);
  max_seq_len_ = options.max_seq_len > 0 ? options.max_seq_len : config_.max_position_embeddings;
  EMBER_CHECK(config_.uses_rope() || max_seq_len_ <= config_.max_position_embeddings, kOp, "max_seq_len ",
              max_seq_len_, " exceeds the ", config_.max_position_embeddings, " learned positions of ",
              config_.file);
  const auto entries = detail::checkpoint_entries(config_);
  check_weights(entries, weights);

  const bool gpt2 = config_.architecture == Architecture::kGPT2;
  const std::string layers_prefix = gpt2 ? "transformer.h." : "model.layers.";
  for (const auto& entry : entries) {
    Tensor tensor = std::move(weights.at(entry.name));
    if (entry.layer >= 0) {
      if (layers_.empty()) {
        // The layers sit in a ModuleList "model.layers" (GPT-2: "transformer.h"), after the
        // embeddings in named_parameters() as in transformers' state dict.
        nn::Module* body = named_children()[gpt2 ? "transformer" : "model"].get();
        auto list = body->register_module(gpt2 ? "h" : "layers", nn::ModuleList());
        for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
          layers_.push_back(std::make_shared<detail::DecoderLayerImpl>(config_, i));
          list->push_back(layers_.back());
        }
      }
      const std::string prefix = layers_prefix + std::to_string(entry.layer) + ".";
      layers_[static_cast<size_t>(entry.layer)]->add_weight(entry.role, entry.name.substr(prefix.size()),
                                                             std::move(tensor), options.trainable);
      continue;
    }
    Tensor& stored = detail::register_dotted(*this, entry.name, std::move(tensor), options.trainable);
    switch (entry.role) {
      case WeightRole::kEmbedding: embedding_ = stored; break;
      case WeightRole::kPositions: positions_ = stored; break;
      case WeightRole::kFinalNorm: norm_weight_ = stored; break;
      case WeightRole::kFinalNormBias: norm_bias_ = stored; break;
      case WeightRole::kLmHead: lm_head_ = stored; break;
      default: break;
    }
  }

  for (int64_t window : config_.layer_windows) {
    auto it = std::find(windows_.begin(), windows_.end(), window);
    if (it == windows_.end()) it = windows_.insert(windows_.end(), window);
    layer_window_.push_back(static_cast<size_t>(it - windows_.begin()));
  }
  if (!options.quantize.empty()) {
    EMBER_CHECK(!options.trainable, kOp, "quantize '", options.quantize, "' and trainable: quantized models run "
                "inference only");
    quantize(options.quantize);
  }
}

CausalLMImpl::~CausalLMImpl() = default;

void CausalLMImpl::set_compute_dtype(ScalarType dtype) {
  EMBER_CHECK(dtype == kFloat32 || dtype == kBFloat16, kOp, "compute dtype must be float32 or bfloat16, got ",
              dtype_name(dtype));
  if (dtype != compute_dtype_) rope_cos_ = rope_sin_ = Tensor();
  compute_dtype_ = dtype;
}

const Tensor& CausalLMImpl::lm_head_weight() const { return lm_head_.defined() ? lm_head_ : embedding_; }

std::pair<Tensor, Tensor> CausalLMImpl::rope_rows(int64_t start, int64_t length) {
  const int64_t needed = start + length;
  if (!rope_cos_.defined() || rope_cos_.size(0) < needed) {
    // Grown by doubling up to max_seq_len, so that a long context costs its tables only when used.
    const int64_t have = rope_cos_.defined() ? rope_cos_.size(0) : 0;
    const int64_t rows = std::min(max_seq_len_, std::max({needed, 2 * have, int64_t{256}}));
    const std::vector<double> inverse = rope_inverse_frequencies(config_);
    const int64_t half = static_cast<int64_t>(inverse.size());
    Tensor cos_table = empty({rows, half}, kFloat64), sin_table = empty({rows, half}, kFloat64);
    double* cos_data = cos_table.data_ptr<double>();
    double* sin_data = sin_table.data_ptr<double>();
    for (int64_t p = 0; p < rows; ++p)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(p) * inverse[static_cast<size_t>(i)];
        cos_data[p * half + i] = std::cos(angle);
        sin_data[p * half + i] = std::sin(angle);
      }
    // Rounded once to the compute dtype and kept in float32: the rotation computes in float32
    // and would widen a bf16 table in each of its calls.
    rope_cos_ = cos_table.to(compute_dtype_).to(kFloat32);
    rope_sin_ = sin_table.to(compute_dtype_).to(kFloat32);
  }
  return {rope_cos_.narrow(0, start, length), rope_sin_.narrow(0, start, length)};
}

Tensor CausalLMImpl::final_norm(const Tensor& x) const {
  return detail::normalize(x, norm_weight_, norm_bias_, detail::decoder_layout(config_), config_.norm_eps);
}

Tensor CausalLMImpl::embed(const Tensor& tokens) const {
  // Gathered in the weights' dtype, then converted: only the rows used, never the whole table.
  Tensor x = F::embedding(tokens, embedding_).to(compute_dtype_);
  if (detail::decoder_layout(config_).scale_embedding) {
    // transformers multiplies by sqrt(hidden) rounded to the compute dtype (55.4256 -> 55.5 in bfloat16).
    const double scale = std::sqrt(static_cast<double>(config_.hidden_size));
    x = x * (compute_dtype_ == kBFloat16 ? static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(scale))))
                                         : static_cast<double>(static_cast<float>(scale)));
  }
  return x;
}

Tensor CausalLMImpl::run(const Tensor& tokens, int64_t start, const Tensor& doc_ids, DecoderCache* cache) {
  EMBER_CHECK(tokens.dim() == 2 && tokens.size(1) > 0 && is_integral(tokens.scalar_type()), kOp,
              "tokens must be integer [batch, time] with time > 0, got ", dtype_name(tokens.scalar_type()), " of shape ",
              tokens.sizes());
  const int64_t B = tokens.size(0), T = tokens.size(1);
  EMBER_CHECK(start + T <= max_seq_len_, kOp, "positions ", start, " .. ", start + T - 1, " exceed max_seq_len ",
              max_seq_len_);
  Tensor x = embed(tokens);
  if (positions_.defined()) x = x + positions_.narrow(0, start, T).to(compute_dtype_);
  Tensor cos, sin;
  if (config_.uses_rope()) std::tie(cos, sin) = rope_rows(start, T);

  std::vector<nn::attention::BlockMask> masks;
  for (int64_t window : windows_) {
    masks.push_back(doc_ids.defined() && !cache
                        ? batch_block_mask(doc_ids, B, T, window)
                        : nn::attention::causal_block_mask(T, start + T, start, window, nn::attention::BlockSize(64)));
  }
  for (size_t i = 0; i < layers_.size(); ++i)
    x = detail::DecoderLayer(layers_[i])(x, cos, sin, masks[layer_window_[i]], cache ? &cache->layers[i] : nullptr);
  return final_norm(x);
}

Tensor CausalLMImpl::hidden(const Tensor& tokens, const Tensor& doc_ids) { return run(tokens, 0, doc_ids, nullptr); }

Tensor CausalLMImpl::head(const Tensor& h) {
  if (lm_head_quantized_.defined()) return quantized::linear(h, lm_head_quantized_).to(kFloat32);
  return F::linear(h, lm_head_weight().to(h.scalar_type())).to(kFloat32);
}

void CausalLMImpl::quantize(const std::string& type) {
  const quantized::Format format = quantized::parse_format(type, std::string(kOp) + " quantize");
  for (const auto& parameter : parameters())
    EMBER_CHECK(!parameter.requires_grad(), kOp, "quantize: the model has trainable weights (quantized models run "
                "inference only)");
  NoGradGuard no_grad;
  std::map<std::string, quantized::QuantizedWeight> blocks;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->quantize_projections(format);
    for (auto& [name, weight] : layers_[i]->quantized_projections()) blocks[layer_prefix(i) + name] = weight;
  }
  // The head too (llama.cpp's files quantize it): for a small model it is a quarter of the
  // bytes a token reads. In int8 under both types: llama.cpp keeps the head of its 4-bit types
  // at 6 bits (Q6_K), the logits being the most sensitive product. A tied head's int8 copy
  // serves the head; lookups keep the embedding.
  blocks[kLmHeadKey] = quantized::quantize_int8(lm_head_weight());
  set_quantized_weights(type, blocks, "quantize");
}

std::string CausalLMImpl::layer_prefix(size_t layer) const {
  return (config_.architecture == Architecture::kGPT2 ? "transformer.h." : "model.layers.") + std::to_string(layer) +
         ".";
}

std::map<std::string, quantized::QuantizedWeight> CausalLMImpl::quantized_weights() const {
  std::map<std::string, quantized::QuantizedWeight> out;
  if (quantization_.empty()) return out;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (auto& [name, weight] : layers_[i]->quantized_projections()) out[layer_prefix(i) + name] = weight;
  out[kLmHeadKey] = lm_head_quantized_;
  return out;
}

void CausalLMImpl::set_quantized_weights(const std::string& type,
                                         const std::map<std::string, quantized::QuantizedWeight>& blocks,
                                         const std::string& where) {
  const quantized::Format format = quantized::parse_format(type, std::string(kOp) + " quantize");
  auto head = blocks.find(kLmHeadKey);
  EMBER_CHECK(head != blocks.end(), kOp, where, ": no quantized blocks for the head (", kLmHeadKey, ")");
  EMBER_CHECK(head->second.format == quantized::Format::kInt8, kOp, where, ": the head is ",
              quantized::format_name(head->second.format), ", expected int8");
  const Tensor& head_weight = lm_head_weight();
  EMBER_CHECK(head->second.out_features() == head_weight.size(0) && head->second.in_features() == head_weight.size(1),
              kOp, where, ": the head's blocks are [", head->second.out_features(), ", ", head->second.in_features(),
              "], expected ", head_weight.sizes());
  std::set<std::string> used;
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::map<std::string, quantized::QuantizedWeight> layer_blocks;
    const std::string prefix = layer_prefix(i);
    for (const auto& [name, weight] : blocks)
      if (name.starts_with(prefix)) {
        EMBER_CHECK(weight.format == format, kOp, where, ": ", name, " is ", quantized::format_name(weight.format),
                    ", expected ", type);
        layer_blocks[name.substr(prefix.size())] = weight;
        used.insert(name);
      }
    layers_[i]->set_quantized_projections(layer_blocks, where + " (layer " + std::to_string(i) + ")");
  }
  used.insert(kLmHeadKey);
  for (const auto& [name, weight] : blocks)
    EMBER_CHECK(used.count(name), kOp, where, ": quantized blocks '", name, "' belong to no projection of the model");
  lm_head_quantized_ = head->second;
  quantization_ = type;
}

Tensor CausalLMImpl::forward(const Tensor& tokens, const Tensor& doc_ids) { return head(hidden(tokens, doc_ids)); }

Tensor CausalLMImpl::loss(const Tensor& tokens, const Tensor& targets, const Tensor& doc_ids) {
  EMBER_CHECK(targets.sizes() == tokens.sizes(), kOp, "targets shape ", targets.sizes(), " must equal tokens shape ",
              tokens.sizes());
  // The head and the loss in float32 whatever the compute dtype: a bfloat16 loss keeps 3
  // significant digits.
  Tensor h = hidden(tokens, doc_ids).to(kFloat32);
  return F::linear_cross_entropy(h.reshape({-1, config_.hidden_size}), lm_head_weight().to(kFloat32),
                                 targets.reshape({-1}));
}

DecoderCache CausalLMImpl::make_cache(int64_t batch, int64_t max_length) const {
  EMBER_CHECK(batch > 0 && max_length > 0 && max_length <= max_seq_len_, kOp, "cache of batch ", batch,
              " and max_length ", max_length, ": expected both positive and max_length <= max_seq_len ", max_seq_len_);
  DecoderCache cache;
  for (size_t i = 0; i < layers_.size(); ++i)
    cache.layers.emplace_back(batch, config_.num_key_value_heads, max_length, config_.head_dim, config_.head_dim,
                              compute_dtype_);
  return cache;
}

void CausalLMImpl::check_cache(const Tensor& tokens, const DecoderCache& cache, const char* op) const {
  EMBER_CHECK(cache.layers.size() == layers_.size(), op, "the cache has ", cache.layers.size(), " layers, the model ",
              layers_.size());
  EMBER_CHECK(tokens.defined() && tokens.dim() == 2 && tokens.size(0) == cache.layers.front().key_buffer().size(0), op,
              "tokens shape ", tokens.defined() ? tokens.sizes() : IntArrayRef(), " does not match the cache's batch ",
              cache.layers.front().key_buffer().size(0));
  EMBER_CHECK(cache.layers.front().key_buffer().scalar_type() == compute_dtype_, op, "the cache holds ",
              dtype_name(cache.layers.front().key_buffer().scalar_type()), ", the model computes in ",
              dtype_name(compute_dtype_));
}

Tensor CausalLMImpl::forward_cached(const Tensor& tokens, DecoderCache& cache, int64_t logits_to_keep) {
  check_cache(tokens, cache, kOp);
  const int64_t start = cache.length(), max_length = cache.layers.front().max_length();
  EMBER_CHECK(start + tokens.size(1) <= max_length, kOp, "positions ", start, " .. ", start + tokens.size(1) - 1,
              " exceed the cache's max_length ", max_length);
  EMBER_CHECK(logits_to_keep >= 0, kOp, "logits_to_keep must be >= 0, got ", logits_to_keep);
  Tensor h = run(tokens, start, {}, &cache);
  if (logits_to_keep > 0 && logits_to_keep < h.size(1)) h = h.narrow(1, h.size(1) - logits_to_keep, logits_to_keep);
  return head(h);
}

// Note [Captured decoding]
// A decoding step of a small model spends a millisecond of its few on the host: a 24-layer
// Qwen2 runs about 500 ops a token, each checking shapes, allocating its output and
// dispatching its kernel. decode_step gives every position the same shapes and addresses: the
// position is a tensor, keys and values are written in place (KVCache::assign), and attention
// (nn::attention::decode_attention) reads the position when its kernel runs, attending to the
// keys up to it. So CapturedDecoder records the step's kernels once (ember::Graph) and replays
// them: the host work left is the kernels' own.
Tensor CausalLMImpl::decode_step(const Tensor& tokens, const Tensor& input_pos, DecoderCache& cache) {
  constexpr const char* op = "CausalLM::decode_step";
  check_cache(tokens, cache, op);
  EMBER_CHECK(tokens.size(1) == 1 && is_integral(tokens.scalar_type()), op, "tokens must be integer [batch, 1], got ",
              dtype_name(tokens.scalar_type()), " of shape ", tokens.sizes());
  EMBER_CHECK(input_pos.defined() && input_pos.dim() == 1 && input_pos.size(0) == 1 &&
                  input_pos.scalar_type() == kInt64,
              op, "input_pos must be int64 of shape [1], got ",
              input_pos.defined() ? dtype_name(input_pos.scalar_type()) : "an undefined tensor", " of shape ",
              input_pos.defined() ? input_pos.sizes() : IntArrayRef());
  Tensor x = embed(tokens);
  if (positions_.defined()) x = x + positions_.index_select(0, input_pos).to(compute_dtype_);
  Tensor cos, sin;
  if (config_.uses_rope()) {
    rope_rows(0, cache.layers.front().max_length());  // the tables cover the cache
    cos = rope_cos_.index_select(0, input_pos);
    sin = rope_sin_.index_select(0, input_pos);
  }
  for (size_t i = 0; i < layers_.size(); ++i)
    x = layers_[i]->decode_step(x, cos, sin, input_pos, cache.layers[i], windows_[layer_window_[i]]);
  return head(final_norm(x));
}

CapturedDecoder::CapturedDecoder(CausalLM model, DecoderCache& cache) : model_(std::move(model)), cache_(cache) {
  EMBER_CHECK(!cache.layers.empty(), "CapturedDecoder", "the cache holds no layers");
  tokens_ = zeros({cache.layers.front().key_buffer().size(0), 1}, kInt64);
  position_ = zeros({1}, kInt64);
}

CapturedDecoder::~CapturedDecoder() = default;

Tensor CapturedDecoder::step(const Tensor& tokens) {
  constexpr const char* op = "CapturedDecoder";
  const int64_t position = cache_.length(), max_length = cache_.layers.front().max_length();
  EMBER_CHECK(position < max_length, op, "the cache is full (", max_length, " positions)");
  EMBER_CHECK(tokens.defined() && tokens.sizes() == tokens_.sizes() && is_integral(tokens.scalar_type()), op,
              "tokens must be integer of shape ", tokens_.sizes(), ", got ",
              tokens.defined() ? tokens.sizes() : IntArrayRef());
  NoGradGuard no_grad;
  tokens_.copy_(tokens);
  position_.data_ptr<int64_t>()[0] = position;
  Tensor logits;
  if (graph_) {
    graph_->replay();
    logits = logits_;
  } else {
    // Eagerly first: the products are tuned and the kernels' scratch grown before the capture.
    logits = model_->decode_step(tokens_, position_, cache_);
    auto graph = std::make_unique<Graph>();
    graph->capture([&] { logits_ = model_->decode_step(tokens_, position_, cache_); });
    graph_ = std::move(graph);
  }
  for (nn::attention::KVCache& layer : cache_.layers) layer.set_length(position + 1);
  return logits.select(1, 0);
}

}  // namespace ember::models
