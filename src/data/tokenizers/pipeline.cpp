// The tokenizer.json pipeline: reading the file and running encode and decode.
#include "data/tokenizers/pipeline.h"

#include <algorithm>

#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {

Pipeline::Pipeline(std::string json_text, std::string name) : json_text_(std::move(json_text)), name_(std::move(name)) {
  json root;
  try {
    root = json::parse(json_text_);
  } catch (const json::exception& e) {
    EMBER_FAIL("tokenizer", name_, ": not valid JSON: ", e.what());
  }
  try {
    read(JsonNode(root, name_, ""));
  } catch (const json::exception& e) {
    // JsonNode checks every type it reads; this is a net for any access it missed.
    EMBER_FAIL("tokenizer", name_, ": unexpected JSON content: ", e.what());
  }
}

void Pipeline::read(const JsonNode& root) {
  if (!root.value().is_object()) root.fail("expected a JSON object");
  // Components come first: added tokens with normalized=true are matched as normalized.
  if (auto node = root.find("normalizer")) normalizer_ = make_normalizer(*node);
  if (auto node = root.find("pre_tokenizer")) pre_tokenizer_ = make_pre_tokenizer(*node);
  model_ = std::make_unique<BpeModel>(root.at("model"));
  if (auto node = root.find("post_processor")) post_processor_ = make_post_processor(*node);
  if (auto node = root.find("decoder")) decoder_ = make_decoder(*node);
  // "truncation" and "padding" are not read: transformers overrides both on every call.
  vocab_size_ = model_->id_bound();
  if (auto node = root.find("added_tokens")) read_added_tokens(*node);
}

void Pipeline::read_added_tokens(const JsonNode& list) {
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonNode entry = list.at(i);
    AddedToken token;
    token.content = entry.at("content").as_string();
    if (token.content.empty()) entry.at("content").fail("an added token cannot be empty");
    utf8_to_codepoints(token.content, name_ + " added token");
    token.special = entry.bool_or("special", false);
    token.lstrip = entry.bool_or("lstrip", false);
    token.rstrip = entry.bool_or("rstrip", false);
    token.single_word = entry.bool_or("single_word", false);
    token.normalized = entry.bool_or("normalized", !token.special);
    const JsonNode id_node = entry.at("id");
    token.id = id_node.as_int();
    if (token.id < 0 || token.id > INT32_MAX) id_node.fail("token id ", token.id, " is out of range");
    // A token the model knows keeps the model's id, as in HF.
    if (auto model_id = model_->token_to_id(token.content))
      token.id = *model_id;
    else if (model_->id_to_token(token.id))
      id_node.fail("id ", token.id, " of '", token.content, "' belongs to the model's token '",
                   *model_->id_to_token(token.id), "'");
    if (added_by_id_.count(token.id) && added_tokens_[added_by_id_[token.id]].content != token.content)
      id_node.fail("id ", token.id, " is given to two added tokens");
    if (added_by_content_.count(token.content)) continue;  // listed twice: the first stays
    token.id_text = token.normalized && normalizer_ ? normalizer_->normalize(token.content) : token.content;
    added_by_id_[token.id] = added_tokens_.size();
    added_by_content_.emplace(token.content, token.id);
    if (token.special) special_contents_.emplace(token.content, true);
    vocab_size_ = std::max(vocab_size_, token.id + 1);
    added_tokens_.push_back(std::move(token));
  }
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  for (const AddedToken& token : added_tokens_) {
    if (token.normalized) {
      normalized.push_back(token);
      normalized_patterns.push_back(token.id_text);
    } else {
      raw.push_back(token);
      raw_patterns.push_back(token.content);
    }
  }
  raw_matcher_ = AddedTokenMatcher(raw, raw_patterns);
  normalized_matcher_ = AddedTokenMatcher(normalized, normalized_patterns);
}

std::vector<int64_t> Pipeline::encode(std::string_view text, bool add_special_tokens) const {
  utf8_to_codepoints(text, name_ + " text to encode");  // a named error on invalid UTF-8
  std::vector<int64_t> ids;
  ids.reserve(text.size() / 3);
  if (raw_matcher_.empty()) {
    encode_piece(text, true, ids);
  } else {
    for (const AddedTokenRun& run : raw_matcher_.split(text)) {
      if (run.id >= 0)
        ids.push_back(run.id);
      else
        encode_piece(text.substr(run.begin, run.end - run.begin), run.begin == 0, ids);
    }
  }
  if (add_special_tokens && post_processor_) ids = post_processor_->add_special_tokens(std::move(ids));
  return ids;
}

void Pipeline::encode_piece(std::string_view piece, bool at_text_start, std::vector<int64_t>& ids) const {
  if (piece.empty()) return;
  const std::string normalized = normalizer_ ? normalizer_->normalize(std::string(piece)) : std::string(piece);
  auto tokenize = [&](std::string_view part, bool part_at_text_start) {
    if (part.empty()) return;
    std::vector<Split> splits{{std::string(part), part_at_text_start}};
    if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(splits);
    for (const Split& split : splits) model_->tokenize(split.text, ids);
  };
  if (normalized_matcher_.empty()) {
    tokenize(normalized, at_text_start);
    return;
  }
  for (const AddedTokenRun& run : normalized_matcher_.split(normalized)) {
    if (run.id >= 0)
      ids.push_back(run.id);
    else
      tokenize(std::string_view(normalized).substr(run.begin, run.end - run.begin), at_text_start && run.begin == 0);
  }
}

std::string Pipeline::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  return decode(ids, skip_special_tokens, false);
}

std::string Pipeline::decode_bytes(const std::vector<int64_t>& ids) const { return decode(ids, false, true); }

std::string Pipeline::decode(const std::vector<int64_t>& ids, bool skip_special_tokens, bool raw_bytes) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    const std::string* token = id_to_token(id);
    EMBER_CHECK(token, "tokenizer", name_, ": cannot decode token id ", id, " (the vocabulary holds ids 0 to ",
                vocab_size_ - 1, ")");
    if (skip_special_tokens && special_contents_.count(*token)) continue;
    tokens.push_back(*token);
  }
  if (decoder_ && raw_bytes) decoder_->decode_chain_bytes(tokens);
  else if (decoder_) decoder_->decode_chain(tokens);
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) {
    // Without a decoder HF joins the tokens with spaces.
    if (i > 0 && !decoder_) text += ' ';
    text += tokens[i];
  }
  return text;
}

std::optional<int64_t> Pipeline::token_to_id(std::string_view token) const {
  if (auto it = added_by_content_.find(token); it != added_by_content_.end()) return it->second;
  return model_->token_to_id(token);
}

const std::string* Pipeline::id_to_token(int64_t id) const {
  if (auto it = added_by_id_.find(id); it != added_by_id_.end()) return &added_tokens_[it->second].id_text;
  return model_->id_to_token(id);
}

bool Pipeline::is_special(int64_t id) const {
  const std::string* token = id_to_token(id);
  return token && special_contents_.count(*token);
}

}  // namespace ember::tokenizers::detail
