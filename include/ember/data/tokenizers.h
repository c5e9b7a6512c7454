// Hugging Face tokenizers read from tokenizer.json, in C++ (no Rust or Python at run time):
// BPE (byte-level, byte-fallback) with the normalizers, pre-tokenizers, post-processors and
// decoders that Llama, Mistral, Qwen, Gemma, Phi and GPT-2 files use. A component or option
// the file names and ember does not implement is an ember::Error naming the file and the key.
// The file's "truncation" and "padding" are not applied: transformers overrides both per call.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/text.h"

namespace ember::tokenizers {

namespace detail {
class Pipeline;
}

class Tokenizer : public ember::data::Tokenizer {
 public:
  // Reads tokenizer.json; errors name the file.
  static Tokenizer from_file(const std::string& path);
  // Parses tokenizer.json's text; `name` stands for the file in error messages.
  static Tokenizer from_json(const std::string& json, const std::string& name);

  // Throws ember::Error on text that is not valid UTF-8.
  std::vector<int64_t> encode(const std::string& text) const override;  // no special tokens
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens) const;
  // Throws ember::Error on an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const override;  // special tokens kept
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const;

  // The bytes each id adds to a decoded text in the middle of it (index = id; empty for ids
  // with no token), before any repair of invalid UTF-8: a token may hold part of a character.
  // Concatenated, they are the text a runtime without this tokenizer prints as ids come.
  std::vector<std::string> token_bytes() const;

  int64_t vocab_size() const override;  // model vocabulary and added tokens: max id + 1
  std::optional<int64_t> token_to_id(const std::string& token) const;
  std::string id_to_token(int64_t id) const;  // throws on an id outside the vocabulary
  bool is_special(int64_t id) const;          // an added token marked "special"
  std::string kind() const override { return "tokenizer.json"; }
  std::string state() const override;  // the JSON text; make_tokenizer(kind(), state()) rebuilds it

 private:
  explicit Tokenizer(std::shared_ptr<const detail::Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
  // Shared and immutable (apart from its thread-safe word cache): copies are cheap.
  std::shared_ptr<const detail::Pipeline> pipeline_;
};

// Incremental decoding for streaming generation: step(id) returns the text that became
// complete with this id, never half a UTF-8 character (bytes are held back until their
// character is complete, byte-fallback runs until they end); flush() returns what is still held. The pieces
// concatenated equal decode(all ids). As HF's DecodeStream, it decodes a short window of recent ids each step.
class DecodeStream {
 public:
  explicit DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string step(int64_t id);
  std::string flush();

 private:
  Tokenizer tokenizer_;
  bool skip_special_tokens_;
  std::vector<int64_t> window_;  // ids from the start of the previous emitted piece
  std::string window_prefix_;    // decode of window_[0, emitted_in_window_)
  size_t emitted_in_window_ = 0;
  bool in_byte_run_ = false;  // the last decoded id is a byte-fallback token (<0xNN>)
};

}  // namespace ember::tokenizers
