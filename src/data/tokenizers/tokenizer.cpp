// ember::tokenizers::Tokenizer: the public face of a tokenizer.json pipeline.
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
