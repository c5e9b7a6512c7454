// The export recipe shared by every decoder language model with a KV cache (ember's GPT and
// the pretrained causal LMs): one program with two methods, `prefill` and `decode`, over KV
// caches the caller owns (the layout is in docs/RUNTIME_OPS.md, "Decoder program layout").
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ember/export.h"
#include "ember/nn/attention/kv_cache.h"

namespace ember::train {

// What the recipe needs of a model: the caches' geometry and its cached forward.
struct CachedDecoder {
  const nn::Module* module = nullptr;  // its parameters and buffers become the constants
  NamedConstants constants;             // and these: tensors it holds outside its state (quantized blocks)
  int64_t layers = 0, kv_heads = 0, head_dim = 0;
  int64_t max_seq_len = 0;  // the caches' length and the bound of the T and pos symbols
  int64_t vocab_size = 0;
  ScalarType cache_dtype = kFloat32;
  // tokens [1, n] at positions caches[0].length() .. + n - 1 -> logits [1, n or fewer, vocab]
  // (float32), their keys and values appended to `caches` (one per layer). `prefill` is true
  // for the prompt: a model may return its last row only.
  std::function<Tensor(const Tensor& tokens, std::vector<nn::attention::KVCache>& caches, bool prefill)> forward;
};

// prefill(tokens [1, T], cache_k_0, cache_v_0, ...) writing cache positions 0 .. T-1, and
// decode(tokens [1, 1], pos (int64 0-d), caches...) writing position pos. Metadata:
// "max_seq_len".
ExportedProgram export_cached_decoder(const CachedDecoder& decoder);

// Zeroed caches [1, kv_heads, max_seq_len, head_dim] in the order the methods take them (k
// then v, layer by layer).
std::vector<Tensor> make_cache_inputs(const CachedDecoder& decoder);

// Runs `program`'s prefill on a random prompt of `prompt` tokens and then `steps` decode steps
// beside decoder.forward on eager caches; an ember::Error unless every logit is bitwise equal.
void check_against_eager(const ExportedProgram& program, const CachedDecoder& decoder, int64_t prompt = 5,
                         int64_t steps = 2);

}  // namespace ember::train
