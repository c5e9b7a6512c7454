// Finding added tokens in text (HF tokenizers' added_vocabulary.rs, find_matches).
#include "data/tokenizers/added_tokens.h"

#include <algorithm>

#include "data/tokenizers/char_classes.h"
#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, const std::vector<std::string>& patterns)
    : nodes_(1), tokens_(tokens) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (patterns[t].empty()) continue;
    int32_t node = 0;
    for (unsigned char byte : patterns[t]) {
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& children = nodes_[node].children;
        children.insert(std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{0})),
                        {byte, next});
        nodes_.emplace_back();
      }
      node = next;
    }
    // Two tokens with one pattern: the first listed wins, as HF's pattern order does.
    if (nodes_[node].token < 0) nodes_[node].token = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes_[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{0}));
  return it != children.end() && it->first == byte ? it->second : -1;
}

std::vector<AddedTokenRun> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<AddedTokenRun> runs;
  if (text.empty()) return runs;
  size_t done = 0;  // the text before this is in `runs`
  size_t at = 0;
  while (at < text.size()) {
    // The longest token starting at `at`.
    int32_t node = 0, token = -1;
    size_t match_end = at;
    for (size_t i = at; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (nodes_[node].token >= 0) {
        token = nodes_[node].token;
        match_end = i + 1;
      }
    }
    if (token < 0) {
      ++at;
      continue;
    }
    const AddedToken& added = tokens_[token];
    size_t start = at, stop = match_end;
    at = match_end;  // a refused match is skipped whole, as Aho-Corasick's iterator does
    if (added.single_word) {
      const bool word_before = start > 0 && is_word_char(codepoint_before(text, start));
      const bool word_after = stop < text.size() && is_word_char(codepoint_at(text, stop));
      if (word_before || word_after) continue;
    }
    if (start < done) continue;  // overlaps what an rstrip consumed
    if (added.lstrip) {
      while (start > done && is_whitespace(codepoint_before(text, start))) {
        size_t previous = start - 1;
        while (previous > 0 && (static_cast<unsigned char>(text[previous]) & 0xC0) == 0x80) --previous;
        start = previous;
      }
    }
    if (added.rstrip) {
      while (stop < text.size() && is_whitespace(codepoint_at(text, stop)))
        stop += utf8_length(codepoint_at(text, stop));
      at = stop;
    }
    if (done < start) runs.push_back({done, start, -1});
    runs.push_back({start, stop, added.id});
    done = stop;
  }
  if (done < text.size()) runs.push_back({done, text.size(), -1});
  return runs;
}

}  // namespace ember::tokenizers::detail
