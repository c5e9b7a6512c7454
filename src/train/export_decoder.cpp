#include "train/export_decoder.h"

#include <algorithm>

#include "ember/autograd.h"
#include "ember/functions.h"

namespace ember::train {
namespace {

// Caches over the methods' cache inputs (from `first`), holding `length` positions.
std::vector<nn::attention::KVCache> caches_over(const std::vector<Tensor>& inputs, size_t first, int64_t length) {
  std::vector<nn::attention::KVCache> caches;
  for (size_t i = first; i + 1 < inputs.size(); i += 2) caches.emplace_back(inputs[i], inputs[i + 1], length);
  return caches;
}

void check_decoder(const CachedDecoder& d) {
  EMBER_CHECK(d.module != nullptr && d.forward, "export", "a CachedDecoder needs its module and forward");
  EMBER_CHECK(d.layers > 0 && d.kv_heads > 0 && d.head_dim > 0 && d.vocab_size > 0, "export",
              "a CachedDecoder of ", d.layers, " layers, ", d.kv_heads, " kv heads, head_dim ", d.head_dim,
              " and vocab ", d.vocab_size, ": expected all positive");
  // Each symbol is traced at three values at least (Note [Export by fitting]).
  EMBER_CHECK(d.max_seq_len >= 3, "export", "max_seq_len ", d.max_seq_len, " is too short to trace (needs >= 3)");
}

}  // namespace

std::vector<Tensor> make_cache_inputs(const CachedDecoder& decoder) {
  std::vector<Tensor> caches;
  for (int64_t i = 0; i < 2 * decoder.layers; ++i)
    caches.push_back(zeros({1, decoder.kv_heads, decoder.max_seq_len, decoder.head_dim},
                           TensorOptions().dtype(decoder.cache_dtype)));
  return caches;
}

ExportedProgram export_cached_decoder(const CachedDecoder& decoder) {
  check_decoder(decoder);
  const int64_t max_len = decoder.max_seq_len;
  {
    // A model may build tables on first use (the pretrained decoders' rotary tables grow with
    // the positions reached): one eager step at the last position gives them their final size
    // before the trace, so that every traced size reads the same constants.
    NoGradGuard no_grad;
    std::vector<nn::attention::KVCache> caches = caches_over(make_cache_inputs(decoder), 0, max_len - 1);
    decoder.forward(zeros({1, 1}, TensorOptions().dtype(kInt64)), caches, false);
  }
  const int64_t prompt = std::min<int64_t>(8, max_len - 1);
  std::vector<Tensor> prefill_inputs = {zeros({1, prompt}, TensorOptions().dtype(kInt64))};
  std::vector<Tensor> decode_inputs = {zeros({1, 1}, TensorOptions().dtype(kInt64)),
                                       full({}, prompt, TensorOptions().dtype(kInt64))};
  for (const Tensor& cache : make_cache_inputs(decoder)) {
    prefill_inputs.push_back(cache);
    decode_inputs.push_back(cache.clone());
  }
  auto forward = decoder.forward;
  ExportMethod prefill{"prefill",
                       [forward](const std::vector<Tensor>& in) -> std::vector<Tensor> {
                         std::vector<nn::attention::KVCache> caches = caches_over(in, 1, 0);
                         return {forward(in[0], caches, true)};
                       },
                       prefill_inputs, ExportOptions().dynamic_dim(0, 1, Dim("T", 1, max_len))};
  ExportMethod decode{"decode",
                      [forward](const std::vector<Tensor>& in) -> std::vector<Tensor> {
                        std::vector<nn::attention::KVCache> caches = caches_over(in, 2, in[1].item<int64_t>());
                        return {forward(in[0], caches, false)};
                      },
                      decode_inputs, ExportOptions().symbolic_value(1, Dim("pos", 0, max_len - 1))};
  ExportedProgram program = export_program(*decoder.module, {prefill, decode}, decoder.constants);
  program.set_metadata("max_seq_len", std::to_string(max_len));
  return program;
}

void check_against_eager(const ExportedProgram& program, const CachedDecoder& decoder, int64_t prompt, int64_t steps) {
  NoGradGuard no_grad;
  prompt = std::min<int64_t>(prompt, decoder.max_seq_len - steps);
  EMBER_CHECK(prompt >= 1, "export", "max_seq_len ", decoder.max_seq_len, " leaves no room for a prompt and ", steps,
              " decode steps");
  std::vector<Tensor> buffers = make_cache_inputs(decoder);
  std::vector<nn::attention::KVCache> eager;
  for (int64_t i = 0; i < decoder.layers; ++i)
    eager.emplace_back(1, decoder.kv_heads, decoder.max_seq_len, decoder.head_dim, decoder.head_dim,
                       decoder.cache_dtype);
  Tensor tokens = randint(0, decoder.vocab_size, {1, prompt}, TensorOptions().dtype(kInt64));
  std::vector<Tensor> inputs = {tokens};
  inputs.insert(inputs.end(), buffers.begin(), buffers.end());
  EMBER_CHECK(equal(program.run(inputs, "prefill")[0], decoder.forward(tokens, eager, true)), "export",
              "the exported prefill differs from the eager model (prompt of ", prompt, " tokens)");
  for (int64_t pos = prompt; pos < prompt + steps; ++pos) {
    Tensor next = randint(0, decoder.vocab_size, {1, 1}, TensorOptions().dtype(kInt64));
    std::vector<Tensor> step = {next, full({}, pos, TensorOptions().dtype(kInt64))};
    step.insert(step.end(), buffers.begin(), buffers.end());
    EMBER_CHECK(equal(program.run(step, "decode")[0], decoder.forward(next, eager, false)), "export",
                "the exported decode differs from the eager model at position ", pos);
  }
}

}  // namespace ember::train
