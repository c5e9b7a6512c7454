// tokenizer.json's "decoder": ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and
// Sequence of them. Each rewrites the list of token strings (HF's decode_chain); the
// tokenizer joins the final list.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizers/json_reader.h"

namespace ember::tokenizers::detail {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // decode_chain without the steps that repair invalid UTF-8 (ByteLevel's lossy read,
  // ByteFallback's U+FFFD): a token's own bytes, which may be part of a character.
  virtual void decode_chain_bytes(std::vector<std::string>& tokens) const { decode_chain(tokens); }
};

// Null (no decoder) gives nullptr.
std::unique_ptr<Decoder> make_decoder(const JsonNode& node);

// Bytes to valid UTF-8, each maximal invalid subsequence replaced by U+FFFD (Rust's
// String::from_utf8_lossy, the Unicode "maximal subpart" practice).
std::string utf8_lossy(std::string_view bytes);

}  // namespace ember::tokenizers::detail
