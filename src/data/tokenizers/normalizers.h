// tokenizer.json's "normalizer": NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace and
// Sequence of them, as HF tokenizers applies them to each piece of text between added tokens.
#pragma once
#include <memory>
#include <string>

#include "data/tokenizers/json_reader.h"

namespace ember::tokenizers::detail {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

// Null (no normalization) gives nullptr.
std::unique_ptr<Normalizer> make_normalizer(const JsonNode& node);

}  // namespace ember::tokenizers::detail
