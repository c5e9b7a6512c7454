// A tokenizer.json read into its parts: added tokens, normalizer, pre-tokenizer, BPE model,
// post-processor and decoder, run in HF tokenizers' order.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizers/added_tokens.h"
#include "data/tokenizers/bpe.h"
#include "data/tokenizers/decoders.h"
#include "data/tokenizers/normalizers.h"
#include "data/tokenizers/post_processors.h"
#include "data/tokenizers/pre_tokenizers.h"

namespace ember::tokenizers::detail {

class Pipeline {
 public:
  // `name` stands for the file in error messages.
  Pipeline(std::string json_text, std::string name);

  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens) const;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const;
  // decode's bytes before any repair of invalid UTF-8 (Decoder::decode_chain_bytes).
  std::string decode_bytes(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const { return vocab_size_; }
  std::optional<int64_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int64_t id) const;  // null when no token has this id
  bool is_special(int64_t id) const;
  const std::string& json_text() const { return json_text_; }
  const std::string& name() const { return name_; }

 private:
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens, bool raw_bytes) const;
  void read(const JsonNode& root);
  void read_added_tokens(const JsonNode& list);
  // Appends the ids of a piece of raw text that holds no raw-matched added token.
  void encode_piece(std::string_view piece, bool at_text_start, std::vector<int64_t>& ids) const;

  std::string json_text_;
  std::string name_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<AddedToken> added_tokens_;
  std::unordered_map<int64_t, size_t> added_by_id_;  // into added_tokens_
  StringMap<int64_t> added_by_content_;
  StringMap<bool> special_contents_;      // skip_special_tokens compares id_to_token with these, as HF
  AddedTokenMatcher raw_matcher_;         // normalized=false tokens, in the raw text
  AddedTokenMatcher normalized_matcher_;  // normalized=true tokens, in each normalized piece
  int64_t vocab_size_ = 0;
};

}  // namespace ember::tokenizers::detail
