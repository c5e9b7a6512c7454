// Incremental decoding for streamed generation (HF tokenizers' DecodeStream).
#include "ember/data/tokenizers.h"
#include "ember/error.h"

namespace ember::tokenizers {
namespace {

bool ends_with_replacement_character(const std::string& text) {
  return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

// A byte-fallback token, "<0xNN>", which HF's ByteFallback decoder groups with its neighbours.
bool is_byte_token(const std::string& token) {
  return token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>';
}

}  // namespace

DecodeStream::DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

// Note [Decode window]: decoders treat the first token specially (Metaspace drops its "▁",
// Strip cuts the text's first space) and group byte tokens, so one id cannot be decoded alone.
// The window keeps the ids from the previous emission point on: its decode minus the decode of
// its already emitted part is the new text, the same as the difference over all ids. A text
// that ends in U+FFFD may be an incomplete character: it waits for the next id (or flush).
// A run of byte-fallback tokens waits for its end too: ByteFallback turns a whole run into
// U+FFFDs when any byte of it is invalid, rewriting the characters its first bytes made.
std::string DecodeStream::step(int64_t id) {
  const std::string token = tokenizer_.id_to_token(id);  // a named error for an unknown id
  window_.push_back(id);
  if (!(skip_special_tokens_ && tokenizer_.is_special(id))) in_byte_run_ = is_byte_token(token);
  if (in_byte_run_) return "";
  const std::string text = tokenizer_.decode(window_, skip_special_tokens_);
  if (text.size() <= window_prefix_.size() || ends_with_replacement_character(text)) return "";
  EMBER_CHECK(text.compare(0, window_prefix_.size(), window_prefix_) == 0, "tokenizer",
              "DecodeStream: the decoder rewrote text already emitted (", window_prefix_, " -> ", text, ")");
  std::string piece = text.substr(window_prefix_.size());
  // Slide: the new window starts where the emitted part of the old one ended.
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(emitted_in_window_));
  emitted_in_window_ = window_.size();
  window_prefix_ = tokenizer_.decode(window_, skip_special_tokens_);
  return piece;
}

std::string DecodeStream::flush() {
  const std::string text = tokenizer_.decode(window_, skip_special_tokens_);
  std::string piece = text.size() > window_prefix_.size() ? text.substr(window_prefix_.size()) : "";
  window_.clear();
  window_prefix_.clear();
  emitted_in_window_ = 0;
  in_byte_run_ = false;
  return piece;
}

}  // namespace ember::tokenizers
