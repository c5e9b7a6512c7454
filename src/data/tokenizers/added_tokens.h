// tokenizer.json's "added_tokens": found in the text before the model sees it, longest match
// first, with HF's lstrip, rstrip and single_word rules. Tokens with normalized=false are
// found in the raw text, those with normalized=true in each normalized piece (their content
// normalized too), as HF's AddedVocabulary::extract_and_normalize does.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::tokenizers::detail {

struct AddedToken {
  std::string content;
  // What decode and id_to_token give: HF gives the normalized content of a normalized=true token.
  std::string id_text;
  int64_t id = 0;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// A run of the text: an added token's match (its id), or plain text between matches (id -1).
struct AddedTokenRun {
  size_t begin, end;
  int64_t id;
};

// Finds a set of tokens leftmost-longest, without overlaps (HF uses Aho-Corasick so).
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is what token i is matched as (its content, normalized where it says so).
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, const std::vector<std::string>& patterns);

  bool empty() const { return nodes_.size() <= 1; }
  // Runs covering `text`; empty text gives no runs.
  std::vector<AddedTokenRun> split(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                       // index into tokens_
  };
  int32_t child(int32_t node, unsigned char byte) const;
  std::vector<Node> nodes_;
  std::vector<AddedToken> tokens_;
};

}  // namespace ember::tokenizers::detail
