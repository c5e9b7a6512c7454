// The GPT as an exported program with two methods, `prefill` and `decode`, over KV caches
// the caller owns (train/export_decoder.h; the layout is in docs/RUNTIME_OPS.md, "Decoder
// program layout").
#pragma once
#include <vector>

#include "ember/export.h"
#include "ember/models/gpt.h"
#include "train/export_decoder.h"

namespace ember::train {

// The GPT as the export recipe sees it (prefill keeps every row of logits).
CachedDecoder cached_decoder(const models::GPT& model);

// prefill(tokens [1, T], cache_k_0, cache_v_0, ...) -> logits [1, T, vocab], writing cache
// positions 0 .. T-1; decode(tokens [1, 1], pos (int64 0-d), caches...) -> logits [1, 1, vocab],
// writing position pos. Caches are [1, n_kv_heads, max_seq_len, head_dim] in the compute dtype.
// Metadata: "max_seq_len" and "gpt_config" (GPTConfig::to_json).
ExportedProgram export_gpt(const models::GPT& model);

// Zeroed caches in the order the methods take them (k then v, layer by layer).
std::vector<Tensor> make_gpt_cache_inputs(const models::GPT& model);

}  // namespace ember::train
