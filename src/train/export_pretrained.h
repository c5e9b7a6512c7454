// A pretrained causal LM (ember/models/pretrained.h) as an exported program: the decoder
// recipe of train/export_decoder.h, and the metadata ember-rt needs to print its text
// without a tokenizer.json parser (docs/RUNTIME_OPS.md, "Decoder program layout").
#pragma once
#include <string>
#include <vector>

#include "ember/data/tokenizers.h"
#include "ember/export.h"
#include "ember/models/pretrained.h"
#include "train/export_decoder.h"

namespace ember::train {

// The model as the export recipe sees it: caches of model->max_seq_len() positions; prefill
// returns the logits of the prompt's last token only ([1, 1, vocab]: the head over a whole
// prompt is most of a small model's prefill, and generation reads one row). A quantized
// model's blocks are constants under the keys save_quantized gives them.
CachedDecoder cached_decoder(const models::CausalLM& model);

// prefill and decode over caller-owned caches, with metadata "max_seq_len", "architecture"
// (transformers' class name), "quantization" ("int8" or "int4", when quantized),
// "eos_token_ids" (decimal, space-separated) and, with a tokenizer,
// "token_bytes": every id's bytes (Tokenizer::token_bytes) as lowercase hex, comma-separated in
// id order.
ExportedProgram export_pretrained(const models::CausalLM& model, const std::vector<int64_t>& eos_token_ids,
                                  const tokenizers::Tokenizer* tokenizer = nullptr);

// "token_bytes"'s encoding of `bytes` (one entry per id).
std::string encode_token_bytes(const std::vector<std::string>& bytes);

}  // namespace ember::train
