// ember::tokenizers::Tokenizer: the public face of a tokenizer.json pipeline.
#include <cctype>
#include <fstream>
#include <sstream>

#include "data/tokenizers/pipeline.h"
#include "ember/data/tokenizers.h"

namespace ember::tokenizers {

Tokenizer Tokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, "tokenizer", path, ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  EMBER_CHECK(!in.bad(), "tokenizer", path, ": cannot read the file");
  return from_json(text.str(), path);
}

Tokenizer Tokenizer::from_json(const std::string& json, const std::string& name) {
  return Tokenizer(std::make_shared<const detail::Pipeline>(json, name));
}

std::vector<int64_t> Tokenizer::encode(const std::string& text) const { return pipeline_->encode(text, false); }

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
  return pipeline_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const { return pipeline_->decode(ids, false); }

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  return pipeline_->decode(ids, skip_special_tokens);
}

std::vector<std::string> Tokenizer::token_bytes() const {
  const int64_t vocab = pipeline_->vocab_size();
  // Decoders treat the start of a text apart (Metaspace drops its first space, Strip trims it):
  // each id is decoded after an anchor, a letter or digit token, and the anchor's bytes cut off.
  std::optional<int64_t> anchor;
  std::string anchor_bytes;
  for (int64_t id = 0; id < vocab && !anchor; ++id) {
    if (pipeline_->id_to_token(id) == nullptr || pipeline_->is_special(id)) continue;
    anchor_bytes = pipeline_->decode_bytes({id});
    if (!anchor_bytes.empty() && std::isalnum(static_cast<unsigned char>(anchor_bytes.front()))) anchor = id;
  }
  EMBER_CHECK(anchor, "tokenizer", pipeline_->name(), ": no token decodes to a letter or digit to anchor token_bytes");
  std::vector<std::string> bytes(static_cast<size_t>(vocab));
  for (int64_t id = 0; id < vocab; ++id) {
    if (pipeline_->id_to_token(id) == nullptr) continue;
    std::string pair = pipeline_->decode_bytes({*anchor, id});
    EMBER_CHECK(pair.compare(0, anchor_bytes.size(), anchor_bytes) == 0, "tokenizer", pipeline_->name(),
                ": token ", id, " changes the bytes of the token ", *anchor, " before it");
    bytes[static_cast<size_t>(id)] = pair.substr(anchor_bytes.size());
  }
  return bytes;
}

int64_t Tokenizer::vocab_size() const { return pipeline_->vocab_size(); }

std::optional<int64_t> Tokenizer::token_to_id(const std::string& token) const { return pipeline_->token_to_id(token); }

std::string Tokenizer::id_to_token(int64_t id) const {
  const std::string* token = pipeline_->id_to_token(id);
  EMBER_CHECK(token, "tokenizer", pipeline_->name(), ": no token has id ", id);
  return *token;
}

bool Tokenizer::is_special(int64_t id) const { return pipeline_->is_special(id); }

std::string Tokenizer::state() const { return pipeline_->json_text(); }

}  // namespace ember::tokenizers
