// tokenizer.json's "pre_tokenizer": ByteLevel, Split, Metaspace, Digits, Whitespace,
// WhitespaceSplit, Punctuation, BertPreTokenizer and Sequence of them. Each cuts every split
// of the list into smaller ones (empty ones dropped, as in HF tokenizers).
#pragma once
#include <memory>
#include <vector>

#include "data/tokenizers/json_reader.h"
#include "data/tokenizers/split.h"

namespace ember::tokenizers::detail {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<Split>& splits) const = 0;
};

// Null (no pre-tokenization) gives nullptr.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& node);

// GPT-2's split pattern, which ByteLevel's use_regex applies.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace ember::tokenizers::detail
