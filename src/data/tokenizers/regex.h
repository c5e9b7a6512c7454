// A small backtracking regex engine over code points for the Split and Regex pre-tokenizers of
// tokenizer.json files: the Oniguruma syntax and matching rules that the Rust `tokenizers`
// crate runs (leftmost, first alternative wins), limited to what those patterns use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::tokenizers {

namespace regex_detail {
struct Program;
}

// Supported: literals and escapes (\s \S \d \D \w \W \r \n \t \f \v \e \a \xHH \x{H..} \uHHHH,
// escaped punctuation), \p{..} and \P{..} for general categories and their one-letter groups
// (short or long names, LC, Any, `^` negation), `.`, classes [...] with ranges, negation and
// nested escapes, alternation, groups ( ) (?: ) (?> ) (?i: ) (?-i: ) and (?i) at the start of a
// group, lookahead (?= ) (?! ), quantifiers ? * + {m} {m,} {m,n} {,n}, lazy (?? *? +? {m,n}?)
// and possessive (?+ *+ ++), anchors ^ $ \A \z \Z \b \B (^ and $ match at line breaks, as in
// Oniguruma's Ruby syntax). Anything else throws ember::Error "[tokenizer] regex "<pattern>":
// unsupported construct '<text>' at offset N" (offsets in code points); a malformed pattern
// throws the same way with what is wrong. Matching throws a named error, never overflows the
// stack, when a hostile pattern backtracks without end.
class Regex {
 public:
  static Regex compile(std::string_view pattern);

  // Thread-safe: a compiled Regex is immutable, each call keeps its own matching state.
  // The non-overlapping leftmost matches, [begin, end) in code points, as the `onig` crate's
  // find_iter yields them (what tokenizers' Split uses): after a match the search resumes at
  // its end; an empty match right at the previous match's end is skipped by one code point.
  std::vector<std::pair<size_t, size_t>> find_all(std::u32string_view text) const;

  // The end of the match that starts exactly at `start`, or SIZE_MAX where none does.
  size_t match_at(std::u32string_view text, size_t start) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, std::shared_ptr<const regex_detail::Program> program);
  std::string pattern_;
  std::shared_ptr<const regex_detail::Program> program_;
};

}  // namespace ember::tokenizers
