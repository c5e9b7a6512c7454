// tokenizer.json's "post_processor", applied when special tokens are asked for:
// TemplateProcessing (its "single" template), RobertaProcessing and BertProcessing (cls, the
// ids, sep), ByteLevel (nothing to do for ids) and Sequence of them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "data/tokenizers/json_reader.h"

namespace ember::tokenizers::detail {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens around one sequence's ids.
  virtual std::vector<int64_t> add_special_tokens(std::vector<int64_t> ids) const = 0;
};

// Null gives nullptr.
std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& node);

}  // namespace ember::tokenizers::detail
