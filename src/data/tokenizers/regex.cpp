// The regex engine of the pre-tokenizers: a parser for the Oniguruma subset in regex.h, a
// compiler to a small backtracking program, and the matcher that runs it with an explicit stack.
//
// Note [Regex engine]
// Oniguruma picks the first alternative that matches (not the longest), and the patterns use
// lookahead and possessive loops, so this is a backtracking engine like Oniguruma rather than
// an automaton. Safety: the parser refuses nesting deeper than kMaxNesting, the matcher keeps
// its alternatives on a heap stack (only lookaheads and atomic groups recurse, as deep as the
// pattern nests them), a loop iteration that consumes nothing ends the loop, and a match
// attempt that exceeds a step budget throws. Speed: a quantified single code point (\p{L}+,
// \s*) is one RepeatChar instruction that scans its run and gives code points back one at a
// time, without a backtracking entry per iteration; an alternative whose first code point
// cannot match is skipped without one either; ASCII answers of a class come from a bitmap and
// BMP categories from one table.
#include "data/tokenizers/regex.h"

#include <algorithm>
#include <bitset>
#include <cstdio>
#include <limits>
#include <optional>
#include <tuple>

#include "data/tokenizers/unicode.h"
#include "ember/error.h"

namespace ember::tokenizers {
namespace regex_detail {
namespace {

constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
// Oniguruma's own limit on a repeat count (ONIG_MAX_REPEAT_NUM).
constexpr uint32_t kMaxRepeatCount = 100000;
// Nesting of groups, classes aside: bounds the parser's and compiler's recursion.
constexpr int kMaxNesting = 200;
// Counted repetitions of groups are expanded into copies; this bounds the program.
constexpr size_t kMaxInstructions = 200000;
// A match attempt gives up (throws) after this many steps plus so many per code point of
// the text after its start: the real pre-tokenizer patterns stay far below, linear in the run
// they scan, and a catastrophically backtracking pattern stops in about a second.
constexpr uint64_t kStepBudgetBase = 1'000'000;
constexpr uint64_t kStepBudgetPerCodePoint = 100;
// Pending alternatives of one match attempt (24 bytes each): the real patterns keep a few
// dozen; a loop over a group keeps one per iteration, so this allows such a loop over
// megabytes and stops a hostile pattern before it takes gigabytes.
constexpr size_t kMaxPendingAlternatives = size_t{1} << 22;

struct Range {
  char32_t first;
  char32_t last;
};

enum class Property : uint8_t { Whitespace, Word };

// Oniguruma's \w: Alphabetic, marks, decimal digits and connector punctuation, except that
// Latin-1 follows its ISO-8859-1 table, where the superscript digits and the vulgar fractions
// are word characters too. Alphabetic is the letters, Nl and Other_Alphabetic, whose members
// outside the marks are the circled and squared Latin letters listed here (PropList.txt;
// unicodedata lacks the property). tests/data checks it against Oniguruma on every code point.
bool is_word(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
  if (cp == 0xB2 || cp == 0xB3 || cp == 0xB9 || (cp >= 0xBC && cp <= 0xBE)) return true;
  switch (category(cp)) {
    case Category::Lu: case Category::Ll: case Category::Lt: case Category::Lm: case Category::Lo:
    case Category::Mn: case Category::Mc: case Category::Me: case Category::Nd: case Category::Nl:
    case Category::Pc:
      return true;
    default:
      return (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
             (cp >= 0x1F170 && cp <= 0x1F189);
  }
}

bool has_property(Property property, char32_t cp) {
  return property == Property::Whitespace ? is_whitespace(cp) : is_word(cp);
}

// A set of code points: the union of literal ranges, general categories and properties (each
// possibly negated), then possibly negated as a whole. ASCII answers come from a bitmap.
struct CharSet {
  bool negated = false;
  uint32_t categories = 0;  // bit i: Category(i) belongs
  std::vector<Range> ranges;  // sorted, disjoint; case folds when ranges_folded
  bool ranges_folded = false;
  std::vector<std::pair<Property, bool>> properties;  // (property, negated)
  std::bitset<128> ascii;

  bool contains_slow(char32_t cp) const {
    bool found = (categories >> static_cast<int>(category(cp))) & 1;
    if (!found && !ranges.empty()) {
      char32_t key = ranges_folded ? case_fold(cp) : cp;
      auto it = std::upper_bound(ranges.begin(), ranges.end(), key,
                                 [](char32_t value, const Range& range) { return value < range.first; });
      found = it != ranges.begin() && key <= std::prev(it)->last;
    }
    for (size_t i = 0; !found && i < properties.size(); ++i)
      found = has_property(properties[i].first, cp) != properties[i].second;
    return found != negated;
  }
  bool contains(char32_t cp) const { return cp < 128 ? ascii[cp] : contains_slow(cp); }
  void finish() {
    for (char32_t cp = 0; cp < 128; ++cp) ascii[cp] = contains_slow(cp);
  }
};

// What one step of a match consumes: exactly one code point.
struct CharMatcher {
  enum class Kind : uint8_t { Literal, FoldedLiteral, Set, AnyButNewline } kind = Kind::Literal;
  char32_t codepoint = 0;  // Literal; FoldedLiteral holds the case fold
  uint32_t set = 0;        // index into Program::sets
};

enum class Greed : uint8_t { Greedy, Lazy, Possessive };
enum class Assertion : uint8_t { LineStart, LineEnd, TextStart, TextEnd, TextEndBeforeNewline, WordBoundary, NotWordBoundary };

struct Node {
  enum class Kind : uint8_t { Char, Concat, Alternate, Repeat, LookAhead, Atomic, Assert } kind = Kind::Concat;
  CharMatcher matcher;                        // Char
  std::vector<std::unique_ptr<Node>> children;
  uint32_t min = 0, max = 0;                  // Repeat
  Greed greed = Greed::Greedy;                // Repeat
  bool negated = false;                       // LookAhead
  Assertion assertion = Assertion::LineStart; // Assert
  size_t offset = 0;                          // where the node starts in the pattern
  bool opaque_group = false;  // written as ( ), (?i: ) or (?-i: ): quantifiable whatever it holds
};
using NodePtr = std::unique_ptr<Node>;

NodePtr make_node(Node::Kind kind) {
  auto node = std::make_unique<Node>();
  node->kind = kind;
  return node;
}

bool nullable(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Char: return false;
    case Node::Kind::Concat:
      return std::all_of(node.children.begin(), node.children.end(), [](const NodePtr& c) { return nullable(*c); });
    case Node::Kind::Alternate:
      return std::any_of(node.children.begin(), node.children.end(), [](const NodePtr& c) { return nullable(*c); });
    case Node::Kind::Repeat: return node.min == 0 || nullable(*node.children[0]);
    case Node::Kind::Atomic: return nullable(*node.children[0]);
    default: return true;
  }
}

}  // namespace

enum class Op : uint8_t { MatchChar, RepeatChar, Split, Jump, SavePosition, CheckProgress, Assert, LookAhead, Atomic, Match };

struct Instruction {
  Op op = Op::Match;
  Greed greed = Greed::Greedy;              // RepeatChar
  Assertion assertion = Assertion::LineStart;
  bool negated = false;                     // LookAhead
  bool has_first = false;                   // Split: `first` filters its preferred branch
  CharMatcher matcher;                      // MatchChar, RepeatChar
  CharMatcher first;                        // Split: what the preferred branch must start with
  // Split: preferred branch x, other y. Jump: x. SavePosition: register x. CheckProgress:
  // register x, loop exit y. LookAhead, Atomic: sub-program x, next instruction y.
  uint32_t x = 0, y = 0;
  uint32_t min = 0, max = 0;                // RepeatChar
};

struct Program {
  std::vector<Instruction> code;
  std::vector<CharSet> sets;
  uint32_t registers = 0;

  bool matches(const CharMatcher& matcher, char32_t cp) const {
    switch (matcher.kind) {
      case CharMatcher::Kind::Literal: return cp == matcher.codepoint;
      case CharMatcher::Kind::FoldedLiteral: return case_fold(cp) == matcher.codepoint;
      case CharMatcher::Kind::Set: return sets[matcher.set].contains(cp);
      case CharMatcher::Kind::AnyButNewline: return cp != '\n';
    }
    return false;
  }
};

namespace {

// Recursive descent over the pattern's code points; recursion is bounded by kMaxNesting.
class Parser {
 public:
  Parser(std::u32string_view pattern, std::string_view utf8, Program& program)
      : pattern_(pattern), utf8_(utf8), program_(program) {}

  NodePtr parse() {
    bool case_insensitive = false;
    NodePtr root = parse_group_body(case_insensitive, 0);
    if (pos_ < pattern_.size()) fail("unmatched ')'", pos_);
    return root;
  }

 private:
  [[noreturn]] void fail(std::string_view problem, size_t offset) const {
    EMBER_FAIL("tokenizer", "regex \"", utf8_, "\": ", problem, " at offset ", offset);
  }
  [[noreturn]] void unsupported(size_t begin, size_t end) const {
    fail("unsupported construct '" + codepoints_to_utf8(pattern_.substr(begin, end - begin)) + "'", begin);
  }

  bool at_end() const { return pos_ >= pattern_.size(); }
  char32_t peek(size_t ahead = 0) const { return pos_ + ahead < pattern_.size() ? pattern_[pos_ + ahead] : 0; }
  bool looking_at(std::u32string_view text) const { return pattern_.substr(pos_, text.size()) == text; }

  // A group's contents up to its ')' (not consumed): a leading (?i) or (?-i) sets the case
  // flag for the whole group; elsewhere Oniguruma's scoping of it differs from Perl's, so it is
  // refused rather than guessed.
  NodePtr parse_group_body(bool case_insensitive, int depth) {
    if (depth > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting), pos_);
    if (looking_at(U"(?i)")) {
      case_insensitive = true;
      pos_ += 4;
    } else if (looking_at(U"(?-i)")) {
      case_insensitive = false;
      pos_ += 5;
    }
    auto alternate = make_node(Node::Kind::Alternate);
    alternate->children.push_back(parse_sequence(case_insensitive, depth));
    while (peek() == '|' && !at_end()) {
      ++pos_;
      alternate->children.push_back(parse_sequence(case_insensitive, depth));
    }
    if (alternate->children.size() == 1) return std::move(alternate->children[0]);
    return alternate;
  }

  NodePtr parse_sequence(bool case_insensitive, int depth) {
    auto sequence = make_node(Node::Kind::Concat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      size_t offset = pos_;
      NodePtr atom = parse_atom(case_insensitive, depth);
      atom->offset = offset;
      sequence->children.push_back(parse_quantifiers(std::move(atom)));
    }
    if (case_insensitive) refuse_multi_character_folds(*sequence);
    if (sequence->children.size() == 1) return std::move(sequence->children[0]);
    return sequence;
  }

  // Oniguruma lets a case-insensitive "ss" match U+00DF and U+00DF match "ss"; this engine
  // compares one code point at a time, so such literals are refused.
  void refuse_multi_character_folds(const Node& sequence) const {
    // The folded literals of the sequence; a run breaks at anything else (kNotLiteral).
    constexpr char32_t kNotLiteral = 0xFFFFFFFF;
    std::u32string folded;
    for (const NodePtr& child : sequence.children) {
      bool literal = child->kind == Node::Kind::Char && child->matcher.kind == CharMatcher::Kind::FoldedLiteral;
      folded.push_back(literal ? child->matcher.codepoint : kNotLiteral);
    }
    for (size_t i = 0; i < folded.size(); ++i) {
      if (folded[i] == kNotLiteral) continue;
      size_t offset = sequence.children[i]->offset;
      if (!multi_character_fold(folded[i]).empty())
        fail("unsupported construct: case-insensitive '" + codepoints_to_utf8(folded.substr(i, 1)) +
                 "' (it folds to several code points)", offset);
      for (char32_t source : multi_fold_sources()) {
        std::u32string_view fold = multi_character_fold(source);
        if (std::u32string_view(folded).substr(i, fold.size()) == fold)
          fail("unsupported construct: case-insensitive '" + codepoints_to_utf8(fold) + "' (U+" + hex(source) +
                   " folds to it)", offset);
      }
    }
  }
  static std::string hex(char32_t cp) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%04X", static_cast<unsigned>(cp));
    return buffer;
  }
  // The code points whose case fold is several code points (about a hundred).
  static const std::vector<char32_t>& multi_fold_sources() {
    static const std::vector<char32_t> sources = [] {
      std::vector<char32_t> result;
      for (char32_t cp = 0xDF; cp < 0x20000; ++cp)
        if (!(cp >= 0xD800 && cp <= 0xDFFF) && !multi_character_fold(cp).empty()) result.push_back(cp);
      return result;
    }();
    return sources;
  }

  NodePtr parse_atom(bool case_insensitive, int depth) {
    size_t start = pos_;
    char32_t c = pattern_[pos_];
    switch (c) {
      case '(': return parse_group(case_insensitive, depth);
      case '[': {
        auto node = make_node(Node::Kind::Char);
        node->matcher = {CharMatcher::Kind::Set, 0, parse_class(case_insensitive)};
        return node;
      }
      case '.': {
        ++pos_;
        auto node = make_node(Node::Kind::Char);
        node->matcher.kind = CharMatcher::Kind::AnyButNewline;
        return node;
      }
      case '^': ++pos_; return make_assertion(Assertion::LineStart);
      case '$': ++pos_; return make_assertion(Assertion::LineEnd);
      case '\\': return parse_escape(case_insensitive);
      case '*': case '+': case '?': fail("quantifier '" + codepoints_to_utf8(pattern_.substr(pos_, 1)) + "' with nothing to repeat", start);
      case '{':
        if (parse_interval_at(pos_)) fail("quantifier with nothing to repeat", start);
        ++pos_;
        return make_literal(c, case_insensitive);
      default: ++pos_; return make_literal(c, case_insensitive);
    }
  }

  NodePtr make_assertion(Assertion assertion) {
    auto node = make_node(Node::Kind::Assert);
    node->assertion = assertion;
    return node;
  }

  NodePtr make_literal(char32_t cp, bool case_insensitive) {
    auto node = make_node(Node::Kind::Char);
    // Case-insensitively, 'k' matches 'K' and U+212A KELVIN SIGN: all fold to 'k'.
    if (case_insensitive)
      node->matcher = {CharMatcher::Kind::FoldedLiteral, case_fold(cp), 0};
    else
      node->matcher = {CharMatcher::Kind::Literal, cp, 0};
    return node;
  }

  NodePtr parse_group(bool case_insensitive, int depth) {
    size_t start = pos_;
    ++pos_;  // '('
    NodePtr body;
    if (peek() != '?') {
      body = parse_group_body(case_insensitive, depth + 1);  // capturing: captures are not reported
      body->opaque_group = true;
    } else if (looking_at(U"?:")) {
      pos_ += 2;
      body = parse_group_body(case_insensitive, depth + 1);
    } else if (looking_at(U"?i:") || looking_at(U"?-i:")) {
      bool flag = peek(1) == 'i';
      pos_ += flag ? 3 : 4;
      body = parse_group_body(flag, depth + 1);
      body->opaque_group = true;
    } else if (looking_at(U"?=") || looking_at(U"?!") || looking_at(U"?>")) {
      char32_t kind = peek(1);
      pos_ += 2;
      auto node = make_node(kind == '>' ? Node::Kind::Atomic : Node::Kind::LookAhead);
      node->negated = kind == '!';
      node->children.push_back(parse_group_body(case_insensitive, depth + 1));
      expect_close(start);
      return node;
    } else {
      // Named: "(?<=" and "(?<!" (lookbehind), "(?<" (named group), "(?m", "(?#", ...
      bool lookbehind = peek(1) == '<' && (peek(2) == '=' || peek(2) == '!');
      unsupported(start, std::min(pos_ + (lookbehind ? 3 : 2), pattern_.size()));
    }
    expect_close(start);
    return body;
  }

  void expect_close(size_t group_start) {
    if (at_end()) fail("unmatched '('", group_start);
    ++pos_;  // ')'
  }

  // Quantifiers after an atom. A second quantifier on the same atom (a{2}{3}, a+*) is refused:
  // Oniguruma reads some of them (a{1,3}+) differently from Perl.
  NodePtr parse_quantifiers(NodePtr atom) {
    if (at_end()) return atom;
    size_t start = pos_;
    uint32_t min = 0, max = 0;
    bool exact_interval = false;
    char32_t c = peek();
    if (c == '*') { min = 0; max = kUnbounded; ++pos_; }
    else if (c == '+') { min = 1; max = kUnbounded; ++pos_; }
    else if (c == '?') { min = 0; max = 1; ++pos_; }
    else if (c == '{') {
      auto interval = parse_interval_at(pos_);
      if (!interval) return atom;
      std::tie(min, max, exact_interval) = *interval;
      pos_ = interval_end_;
    } else {
      return atom;
    }
    if (!atom->opaque_group && invalid_quantifier_target(*atom))
      fail("quantifier on an assertion (Oniguruma: target of repeat operator is invalid)", start);
    Greed greed = Greed::Greedy;
    NodePtr result;
    if (peek() == '?' && !at_end()) {
      ++pos_;
      if (exact_interval) {
        // Ruby syntax: "a{n}?" is an optional a{n}, not a lazy one.
        result = make_repeat(make_repeat(std::move(atom), min, max, Greed::Greedy), 0, 1, Greed::Greedy);
      } else {
        greed = Greed::Lazy;
      }
    } else if (peek() == '+' && !at_end() && c != '{') {
      ++pos_;
      greed = Greed::Possessive;
    }
    if (!result) result = make_repeat(std::move(atom), min, max, greed);
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && parse_interval_at(pos_))))
      unsupported(start, pos_ + 1);
    return result;
  }

  // Oniguruma refuses to repeat an anchor or lookahead, or an alternation with one among its
  // branches, unless a group other than (?: ) encloses it ("(\\b)*" but not "(?:\\b|a)*").
  static bool invalid_quantifier_target(const Node& node) {
    if (node.opaque_group) return false;
    switch (node.kind) {
      case Node::Kind::Assert: case Node::Kind::LookAhead: return true;
      case Node::Kind::Alternate:
        return std::any_of(node.children.begin(), node.children.end(),
                           [](const NodePtr& child) { return invalid_quantifier_target(*child); });
      default: return false;
    }
  }

  NodePtr make_repeat(NodePtr atom, uint32_t min, uint32_t max, Greed greed) {
    auto node = make_node(Node::Kind::Repeat);
    node->min = min;
    node->max = max;
    node->greed = greed;
    node->children.push_back(std::move(atom));
    return node;
  }

  // "{m}", "{m,}", "{m,n}" or "{,n}" at `at`: (min, max, exact). Anything else is no interval
  // (Oniguruma then reads '{' as a literal). Sets interval_end_ past the '}'.
  std::optional<std::tuple<uint32_t, uint32_t, bool>> parse_interval_at(size_t at) {
    size_t i = at + 1;
    auto read_number = [&](uint32_t& value) {
      size_t digits_start = i;
      uint64_t number = 0;
      while (i < pattern_.size() && pattern_[i] >= '0' && pattern_[i] <= '9') {
        number = std::min<uint64_t>(number * 10 + (pattern_[i] - '0'), uint64_t{1} << 40);
        ++i;
      }
      if (number > kMaxRepeatCount) fail("repeat count above " + std::to_string(kMaxRepeatCount), digits_start);
      value = static_cast<uint32_t>(number);
      return i > digits_start;
    };
    uint32_t min = 0, max = 0;
    bool has_min = read_number(min);
    if (i < pattern_.size() && pattern_[i] == '}') {
      if (!has_min) return std::nullopt;
      interval_end_ = i + 1;
      return std::tuple{min, min, true};
    }
    if (i >= pattern_.size() || pattern_[i] != ',') return std::nullopt;
    ++i;
    bool has_max = read_number(max);
    if (i >= pattern_.size() || pattern_[i] != '}') return std::nullopt;
    if (!has_min && !has_max) return std::nullopt;
    if (!has_max) max = kUnbounded;
    if (has_max && max < min) unsupported(at, i + 1);
    interval_end_ = i + 1;
    return std::tuple{min, max, false};
  }

  NodePtr parse_escape(bool case_insensitive) {
    size_t start = pos_;
    if (pos_ + 1 >= pattern_.size()) fail("pattern ends with '\\'", start);
    char32_t c = pattern_[pos_ + 1];
    auto set_node = [&](CharSet set) {
      auto node = make_node(Node::Kind::Char);
      node->matcher = {CharMatcher::Kind::Set, 0, add_set(std::move(set))};
      return node;
    };
    switch (c) {
      case 'A': pos_ += 2; return make_assertion(Assertion::TextStart);
      case 'z': pos_ += 2; return make_assertion(Assertion::TextEnd);
      case 'Z': pos_ += 2; return make_assertion(Assertion::TextEndBeforeNewline);
      case 'b': pos_ += 2; return make_assertion(Assertion::WordBoundary);
      case 'B': pos_ += 2; return make_assertion(Assertion::NotWordBoundary);
      default: break;
    }
    CharSet set;
    if (parse_class_escape(set)) return set_node(std::move(set));
    char32_t literal = parse_literal_escape();
    return make_literal(literal, case_insensitive);
  }

  // \s \S \d \D \w \W \p{..} \P{..} at pos_: adds the item to `set` (negated as written) and
  // returns true; anything else returns false and consumes nothing.
  // Under (?i) they stay as written: Oniguruma does not case-fold properties.
  bool parse_class_escape(CharSet& set) {
    char32_t c = peek(1);
    switch (c) {
      case 's': case 'S': set.properties.emplace_back(Property::Whitespace, c == 'S'); pos_ += 2; return true;
      case 'w': case 'W': set.properties.emplace_back(Property::Word, c == 'W'); pos_ += 2; return true;
      case 'd': case 'D': {
        uint32_t digits = 1u << static_cast<int>(Category::Nd);
        set.categories |= c == 'd' ? digits : (all_categories() & ~digits);
        pos_ += 2;
        return true;
      }
      case 'p': case 'P': set.categories |= parse_property(c == 'P'); return true;
      default: return false;
    }
  }

  static uint32_t all_categories() { return (1u << kCategoryCount) - 1; }

  // \p{Name} or \P{Name} at pos_ with the name of a general category or group (short or long,
  // as Oniguruma: case, spaces, '_' and '-' ignored; a leading '^' negates).
  uint32_t parse_property(bool negated) {
    size_t start = pos_;
    if (peek(2) != '{') unsupported(start, std::min(pos_ + 3, pattern_.size()));
    size_t close = pattern_.find('}', pos_ + 3);
    if (close == std::u32string_view::npos) fail("\\p{ without its '}'", start);
    std::string name;
    bool caret = false;
    for (size_t i = pos_ + 3; i < close; ++i) {
      char32_t c = pattern_[i];
      if (i == pos_ + 3 && c == '^') { caret = true; continue; }
      if (c == ' ' || c == '_' || c == '-') continue;
      if (c >= 0x80) unsupported(start, close + 1);
      name.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    }
    std::optional<uint32_t> mask = category_mask(name);
    if (!mask) unsupported(start, close + 1);
    pos_ = close + 1;
    return negated != caret ? all_categories() & ~*mask : *mask;
  }

  static std::optional<uint32_t> category_mask(const std::string& name) {
    using C = Category;
    auto bits = [](std::initializer_list<C> categories) {
      uint32_t mask = 0;
      for (C category : categories) mask |= 1u << static_cast<int>(category);
      return mask;
    };
    struct Entry { const char* short_name; const char* long_name; uint32_t mask; };
    static const Entry kEntries[] = {
        {"l", "letter", bits({C::Lu, C::Ll, C::Lt, C::Lm, C::Lo})},
        {"lc", "casedletter", bits({C::Lu, C::Ll, C::Lt})},
        {"lu", "uppercaseletter", bits({C::Lu})}, {"ll", "lowercaseletter", bits({C::Ll})},
        {"lt", "titlecaseletter", bits({C::Lt})}, {"lm", "modifierletter", bits({C::Lm})},
        {"lo", "otherletter", bits({C::Lo})},
        {"m", "mark", bits({C::Mn, C::Mc, C::Me})}, {"mn", "nonspacingmark", bits({C::Mn})},
        {"mc", "spacingmark", bits({C::Mc})}, {"me", "enclosingmark", bits({C::Me})},
        {"n", "number", bits({C::Nd, C::Nl, C::No})}, {"nd", "decimalnumber", bits({C::Nd})},
        {"nl", "letternumber", bits({C::Nl})}, {"no", "othernumber", bits({C::No})},
        {"p", "punctuation", bits({C::Pc, C::Pd, C::Ps, C::Pe, C::Pi, C::Pf, C::Po})},
        {"pc", "connectorpunctuation", bits({C::Pc})}, {"pd", "dashpunctuation", bits({C::Pd})},
        {"ps", "openpunctuation", bits({C::Ps})}, {"pe", "closepunctuation", bits({C::Pe})},
        {"pi", "initialpunctuation", bits({C::Pi})}, {"pf", "finalpunctuation", bits({C::Pf})},
        {"po", "otherpunctuation", bits({C::Po})},
        {"s", "symbol", bits({C::Sm, C::Sc, C::Sk, C::So})}, {"sm", "mathsymbol", bits({C::Sm})},
        {"sc", "currencysymbol", bits({C::Sc})}, {"sk", "modifiersymbol", bits({C::Sk})},
        {"so", "othersymbol", bits({C::So})},
        {"z", "separator", bits({C::Zs, C::Zl, C::Zp})}, {"zs", "spaceseparator", bits({C::Zs})},
        {"zl", "lineseparator", bits({C::Zl})}, {"zp", "paragraphseparator", bits({C::Zp})},
        {"c", "other", bits({C::Cc, C::Cf, C::Cs, C::Co, C::Cn})}, {"cc", "control", bits({C::Cc})},
        {"cf", "format", bits({C::Cf})}, {"cs", "surrogate", bits({C::Cs})},
        {"co", "privateuse", bits({C::Co})}, {"cn", "unassigned", bits({C::Cn})},
        {"any", "any", (1u << kCategoryCount) - 1},
    };
    for (const Entry& entry : kEntries)
      if (name == entry.short_name || name == entry.long_name) return entry.mask;
    return std::nullopt;
  }

  // A single-code-point escape at pos_ (\n, \x41, \., ...); anything else is refused.
  char32_t parse_literal_escape() {
    size_t start = pos_;
    char32_t c = peek(1);
    pos_ += 2;
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'f': return '\f';
      case 'v': return '\v';
      case 'a': return 0x07;
      case 'e': return 0x1B;
      case 'x': {
        if (peek() == '{') {
          size_t close = pattern_.find('}', pos_);
          if (close == std::u32string_view::npos || close == pos_ + 1 || close > pos_ + 9) unsupported(start, pos_ + 1);
          char32_t value = parse_hex(pos_ + 1, close, start);
          pos_ = close + 1;
          return checked_scalar(value, start);
        }
        size_t end = pos_;
        while (end < pattern_.size() && end < pos_ + 2 && is_hex(pattern_[end])) ++end;
        if (end == pos_) unsupported(start, pos_);
        char32_t value = parse_hex(pos_, end, start);
        pos_ = end;
        return value;
      }
      case 'u': {
        if (pos_ + 4 > pattern_.size()) unsupported(start, pattern_.size());
        for (size_t i = pos_; i < pos_ + 4; ++i)
          if (!is_hex(pattern_[i])) unsupported(start, i + 1);
        char32_t value = parse_hex(pos_, pos_ + 4, start);
        pos_ += 4;
        return checked_scalar(value, start);
      }
      default: break;
    }
    // Escaped ASCII punctuation and non-ASCII code points stand for themselves; letters and
    // digits name classes, back-references and options that this engine lacks.
    bool ascii_alphanumeric = c < 0x80 && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
    if (ascii_alphanumeric || c < 0x20) unsupported(start, pos_);
    return c;
  }

  static bool is_hex(char32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
  char32_t parse_hex(size_t begin, size_t end, size_t escape_start) const {
    char32_t value = 0;
    for (size_t i = begin; i < end; ++i) {
      char32_t c = pattern_[i];
      if (!is_hex(c)) unsupported(escape_start, i + 1);
      value = value * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return value;
  }
  char32_t checked_scalar(char32_t value, size_t start) const {
    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) fail("escape names no Unicode scalar value", start);
    return value;
  }

  // A bracket class at pos_; returns its index in the program's sets.
  uint32_t parse_class(bool case_insensitive) {
    size_t start = pos_;
    ++pos_;  // '['
    CharSet set;
    if (peek() == '^' && !at_end()) {
      set.negated = true;
      ++pos_;
    }
    std::vector<Range> ranges;
    const size_t class_body_start = pos_;
    bool first_item = true;
    bool previous_was_range = false;
    for (;;) {
      if (at_end()) fail("unterminated character class", start);
      char32_t c = peek();
      if (c == ']' && !first_item) {
        ++pos_;
        break;
      }
      if (c == '[' || (c == '&' && peek(1) == '&')) unsupported(pos_, pos_ + (c == '[' ? 1 : 2));
      first_item = false;
      size_t item_start = pos_;
      if (c == '\\' && parse_class_escape(set)) {
        if (peek() == '-' && peek(1) != ']' && pos_ + 1 < pattern_.size()) unsupported(item_start, pos_ + 2);
        previous_was_range = false;
        continue;
      }
      char32_t low = parse_class_literal();
      // '-' is literal first, last and right after a range ("[a-b-c]"), as Oniguruma reads it.
      bool literal_dash = c == '-' && (previous_was_range || item_start == class_body_start);
      if (!literal_dash && peek() == '-' && peek(1) != ']' && pos_ + 1 < pattern_.size()) {
        ++pos_;
        if (peek() == '[' || (peek() == '\\' && is_class_escape_letter(peek(1)))) unsupported(item_start, pos_ + 2);
        char32_t high = parse_class_literal();
        if (high < low) fail("character range out of order", item_start);
        ranges.push_back({low, high});
        previous_was_range = true;
      } else {
        ranges.push_back({low, low});
        previous_was_range = false;
      }
    }
    set.ranges = case_insensitive ? fold_ranges(ranges, start) : merge_ranges(std::move(ranges));
    set.ranges_folded = case_insensitive;
    return add_set(std::move(set));
  }

  static bool is_class_escape_letter(char32_t c) {
    return c == 's' || c == 'S' || c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 'p' || c == 'P';
  }

  char32_t parse_class_literal() {
    char32_t c = peek();
    if (c != '\\') {
      ++pos_;
      return c;
    }
    if (peek(1) == 'b') {  // backspace inside a class
      pos_ += 2;
      return 0x08;
    }
    return parse_literal_escape();
  }

  static std::vector<Range> merge_ranges(std::vector<Range> ranges) {
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.first < b.first; });
    std::vector<Range> merged;
    for (const Range& range : ranges) {
      if (!merged.empty() && range.first <= merged.back().last + 1)
        merged.back().last = std::max(merged.back().last, range.last);
      else
        merged.push_back(range);
    }
    return merged;
  }

  // The case folds of every code point in the ranges: a case-insensitive class holds c when it
  // holds case_fold(c).
  std::vector<Range> fold_ranges(const std::vector<Range>& ranges, size_t class_start) const {
    std::vector<Range> folded;
    for (const Range& range : ranges) {
      for (char32_t cp = range.first; cp <= range.last; ++cp) {
        if (!multi_character_fold(cp).empty())
          fail("unsupported construct: case-insensitive class holding '" + codepoints_to_utf8(std::u32string(1, cp)) +
                   "' (it folds to several code points)", class_start);
        char32_t fold = case_fold(cp);
        if (folded.empty() || folded.back().last + 1 != fold || fold == 0)
          folded.push_back({fold, fold});
        else
          folded.back().last = fold;
      }
    }
    return merge_ranges(std::move(folded));
  }

  uint32_t add_set(CharSet set) {
    set.finish();
    program_.sets.push_back(std::move(set));
    return static_cast<uint32_t>(program_.sets.size() - 1);
  }

  std::u32string_view pattern_;
  std::string_view utf8_;
  Program& program_;
  size_t pos_ = 0;
  size_t interval_end_ = 0;
};

// Emits the program of a node tree; recursion follows the tree's nesting (bounded by the parser).
class Compiler {
 public:
  Compiler(Program& program, std::string_view pattern) : program_(program), pattern_(pattern) {}

  void compile(const Node& root) {
    emit_node(root);
    emit(Op::Match);
    for (Instruction& instruction : program_.code)
      if (instruction.op == Op::Split) set_first_filter(instruction);
  }

 private:
  uint32_t emit(Op op) {
    if (program_.code.size() >= kMaxInstructions)
      EMBER_FAIL("tokenizer", "regex \"", pattern_, "\": pattern too large (more than ", kMaxInstructions,
                 " instructions once counted repetitions are expanded)");
    program_.code.push_back({});
    program_.code.back().op = op;
    return static_cast<uint32_t>(program_.code.size() - 1);
  }
  uint32_t here() const { return static_cast<uint32_t>(program_.code.size()); }

  void emit_node(const Node& node) {
    switch (node.kind) {
      case Node::Kind::Char: program_.code[emit(Op::MatchChar)].matcher = node.matcher; break;
      case Node::Kind::Concat:
        for (const NodePtr& child : node.children) emit_node(*child);
        break;
      case Node::Kind::Alternate: {
        std::vector<uint32_t> jumps_to_end;
        for (size_t i = 0; i < node.children.size(); ++i) {
          uint32_t split = 0;
          if (i + 1 < node.children.size()) split = emit(Op::Split);
          if (i + 1 < node.children.size()) program_.code[split].x = here();
          emit_node(*node.children[i]);
          if (i + 1 < node.children.size()) {
            jumps_to_end.push_back(emit(Op::Jump));
            program_.code[split].y = here();
          }
        }
        for (uint32_t jump : jumps_to_end) program_.code[jump].x = here();
        break;
      }
      case Node::Kind::Repeat: emit_repeat(node); break;
      case Node::Kind::LookAhead:
      case Node::Kind::Atomic: {
        uint32_t at = emit(node.kind == Node::Kind::Atomic ? Op::Atomic : Op::LookAhead);
        program_.code[at].negated = node.negated;
        program_.code[at].x = here();
        emit_node(*node.children[0]);
        emit(Op::Match);
        program_.code[at].y = here();
        break;
      }
      case Node::Kind::Assert: program_.code[emit(Op::Assert)].assertion = node.assertion; break;
    }
  }

  void emit_repeat(const Node& node) {
    const Node& child = *node.children[0];
    if (child.kind == Node::Kind::Char) {
      uint32_t at = emit(Op::RepeatChar);
      Instruction& instruction = program_.code[at];
      instruction.matcher = child.matcher;
      instruction.min = node.min;
      instruction.max = node.max;
      instruction.greed = node.greed;
      return;
    }
    if (node.greed == Greed::Possessive) {
      // x*+ on a group: the greedy loop run once as an atomic sub-program.
      uint32_t at = emit(Op::Atomic);
      program_.code[at].x = here();
      emit_loop(child, node.min, node.max, Greed::Greedy);
      emit(Op::Match);
      program_.code[at].y = here();
      return;
    }
    emit_loop(child, node.min, node.max, node.greed);
  }

  // A loop, its mandatory iterations copied out. As in Oniguruma (its empty checks), an
  // iteration that matched nothing ends the whole loop there, successfully, even before `min`
  // iterations: it would repeat forever, and iterating on at the same position would change
  // which alternative wins when a later part fails.
  void emit_loop(const Node& child, uint32_t min, uint32_t max, Greed greed) {
    bool lazy = greed == Greed::Lazy;
    bool check_progress = nullable(child);
    uint32_t reg = check_progress ? program_.registers++ : 0;
    std::vector<uint32_t> progress_checks;
    auto emit_iteration = [&] {
      if (check_progress) program_.code[emit(Op::SavePosition)].x = reg;
      emit_node(child);
      if (check_progress) {
        progress_checks.push_back(emit(Op::CheckProgress));
        program_.code[progress_checks.back()].x = reg;
      }
    };
    for (uint32_t i = 0; i < min; ++i) emit_iteration();
    std::vector<uint32_t> splits;
    if (max == kUnbounded) {
      uint32_t loop = emit(Op::Split);
      splits.push_back(loop);
      program_.code[loop].x = here();
      emit_iteration();
      program_.code[emit(Op::Jump)].x = loop;
    } else {
      for (uint32_t i = min; i < max; ++i) {
        splits.push_back(emit(Op::Split));
        program_.code[splits.back()].x = here();
        emit_iteration();
      }
    }
    uint32_t exit = here();
    for (uint32_t split : splits) set_split(split, program_.code[split].x, exit, lazy);
    for (uint32_t check : progress_checks) program_.code[check].y = exit;
  }

  void set_split(uint32_t at, uint32_t body, uint32_t exit, bool lazy) {
    program_.code[at].x = lazy ? exit : body;
    program_.code[at].y = lazy ? body : exit;
  }

  // When a Split's preferred branch must begin by consuming one code point of a known kind,
  // the matcher skips the branch (and its backtracking entry) on any other code point.
  void set_first_filter(Instruction& split) {
    uint32_t pc = split.x;
    while (pc < program_.code.size() && program_.code[pc].op == Op::Jump) pc = program_.code[pc].x;
    if (pc >= program_.code.size()) return;
    const Instruction& target = program_.code[pc];
    if (target.op == Op::MatchChar || (target.op == Op::RepeatChar && target.min > 0)) {
      split.has_first = true;
      split.first = target.matcher;
    }
  }

  Program& program_;
  std::string_view pattern_;
};

// One backtracking run of the program; the stack of alternatives lives on the heap.
class Matcher {
 public:
  Matcher(const Program& program, std::u32string_view text, std::string_view pattern)
      : program_(program), text_(text), pattern_(pattern), registers_(program.registers, SIZE_MAX) {}

  size_t match_at(size_t start) {
    steps_left_ = kStepBudgetBase + kStepBudgetPerCodePoint * (text_.size() - start + 1);
    attempt_start_ = start;
    return run(0, start);
  }

 private:
  struct Frame {
    enum class Kind : uint8_t { Resume, GiveBack, TakeMore, RestoreRegister } kind;
    uint32_t pc;
    size_t pos;
    size_t limit;  // GiveBack: the lowest end; TakeMore: code points taken
  };

  void push(const Frame& frame) {
    if (stack_.size() >= kMaxPendingAlternatives)
      EMBER_FAIL("tokenizer", "regex \"", pattern_, "\" gave up on the match attempt at code point ", attempt_start_,
                 ": more than ", kMaxPendingAlternatives, " pending alternatives");
    stack_.push_back(frame);
  }

  void spend(uint64_t steps) {
    if (steps_left_ < steps)
      EMBER_FAIL("tokenizer", "regex \"", pattern_, "\" gave up on the match attempt at code point ", attempt_start_,
                 ": more than ", kStepBudgetBase + kStepBudgetPerCodePoint * (text_.size() - attempt_start_ + 1),
                 " backtracking steps (the pattern backtracks catastrophically on this text)");
    steps_left_ -= steps;
  }

  bool is_word_at(size_t pos) const { return pos < text_.size() && is_word(text_[pos]); }

  bool holds(Assertion assertion, size_t pos) const {
    size_t n = text_.size();
    switch (assertion) {
      // As Oniguruma's ^: after a newline, except the newline that ends the text.
      case Assertion::LineStart: return pos == 0 || (text_[pos - 1] == '\n' && pos < n);
      case Assertion::LineEnd: return pos == n || text_[pos] == '\n';
      case Assertion::TextStart: return pos == 0;
      case Assertion::TextEnd: return pos == n;
      case Assertion::TextEndBeforeNewline: return pos == n || (pos + 1 == n && text_[pos] == '\n');
      case Assertion::WordBoundary: return (pos > 0 && is_word_at(pos - 1)) != is_word_at(pos);
      case Assertion::NotWordBoundary: return (pos > 0 && is_word_at(pos - 1)) == is_word_at(pos);
    }
    return false;
  }

  // Runs from `pc` at `pos` until Match (returns the end) or until every alternative pushed
  // since the call has failed (returns SIZE_MAX). Lookaheads and atomic groups call it again
  // for their sub-programs, so the depth is the pattern's nesting of those, never the text's.
  size_t run(uint32_t pc, size_t pos) {
    const size_t base = stack_.size();
    const std::vector<Instruction>& code = program_.code;
    const size_t n = text_.size();
    for (;;) {
      spend(1);
      const Instruction& instruction = code[pc];
      bool ok = true;
      switch (instruction.op) {
        case Op::MatchChar:
          ok = pos < n && program_.matches(instruction.matcher, text_[pos]);
          ++pos;
          ++pc;
          break;
        case Op::RepeatChar: {
          size_t start = pos;
          size_t limit = instruction.max == kUnbounded ? n : std::min(n, pos + instruction.max);
          size_t want = instruction.greed == Greed::Lazy ? std::min(limit, pos + instruction.min) : limit;
          while (pos < want && program_.matches(instruction.matcher, text_[pos])) ++pos;
          spend(pos - start);
          if (pos - start < instruction.min) {
            ok = false;
            break;
          }
          if (instruction.greed == Greed::Greedy && pos > start + instruction.min)
            push({Frame::Kind::GiveBack, pc + 1, pos, start + instruction.min});
          else if (instruction.greed == Greed::Lazy && pos - start < instruction.max)
            push({Frame::Kind::TakeMore, pc, pos, pos - start});
          ++pc;
          break;
        }
        case Op::Split:
          if (instruction.has_first && !(pos < n && program_.matches(instruction.first, text_[pos]))) {
            pc = instruction.y;
          } else {
            push({Frame::Kind::Resume, instruction.y, pos, 0});
            pc = instruction.x;
          }
          break;
        case Op::Jump: pc = instruction.x; break;
        case Op::SavePosition:
          push({Frame::Kind::RestoreRegister, instruction.x, registers_[instruction.x], 0});
          registers_[instruction.x] = pos;
          ++pc;
          break;
        case Op::CheckProgress: pc = pos == registers_[instruction.x] ? instruction.y : pc + 1; break;
        case Op::Assert: ok = holds(instruction.assertion, pos); ++pc; break;
        case Op::LookAhead: {
          bool found = run(instruction.x, pos) != SIZE_MAX;
          ok = found != instruction.negated;
          pc = instruction.y;
          break;
        }
        case Op::Atomic: {
          size_t end = run(instruction.x, pos);
          ok = end != SIZE_MAX;
          pos = end;
          pc = instruction.y;
          break;
        }
        case Op::Match:
          stack_.resize(base);
          return pos;
      }
      if (ok) continue;
      // Backtrack to the newest alternative of this run.
      for (;;) {
        if (stack_.size() == base) return SIZE_MAX;
        spend(1);
        Frame& frame = stack_.back();
        if (frame.kind == Frame::Kind::Resume) {
          pc = frame.pc;
          pos = frame.pos;
          stack_.pop_back();
          break;
        }
        if (frame.kind == Frame::Kind::RestoreRegister) {
          registers_[frame.pc] = frame.pos;
          stack_.pop_back();
          continue;
        }
        if (frame.kind == Frame::Kind::GiveBack) {
          pc = frame.pc;
          pos = --frame.pos;
          if (frame.pos == frame.limit) stack_.pop_back();
          break;
        }
        // TakeMore: a lazy repeat takes one more code point, if it can.
        const Instruction& repeat = code[frame.pc];
        if (frame.pos < n && program_.matches(repeat.matcher, text_[frame.pos])) {
          pc = frame.pc + 1;
          pos = ++frame.pos;
          if (++frame.limit == repeat.max) stack_.pop_back();
          break;
        }
        stack_.pop_back();
      }
    }
  }

  const Program& program_;
  std::u32string_view text_;
  std::string_view pattern_;
  std::vector<Frame> stack_;
  std::vector<size_t> registers_;
  uint64_t steps_left_ = 0;
  size_t attempt_start_ = 0;
};

}  // namespace
}  // namespace regex_detail

Regex::Regex(std::string pattern, std::shared_ptr<const regex_detail::Program> program)
    : pattern_(std::move(pattern)), program_(std::move(program)) {}

Regex Regex::compile(std::string_view pattern) {
  std::u32string codepoints = utf8_to_codepoints(pattern, "regex pattern");
  auto program = std::make_shared<regex_detail::Program>();
  regex_detail::NodePtr root = regex_detail::Parser(codepoints, pattern, *program).parse();
  regex_detail::Compiler(*program, pattern).compile(*root);
  return Regex(std::string(pattern), std::move(program));
}

size_t Regex::match_at(std::u32string_view text, size_t start) const {
  regex_detail::Matcher matcher(*program_, text, pattern_);
  return start <= text.size() ? matcher.match_at(start) : SIZE_MAX;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::u32string_view text) const {
  regex_detail::Matcher matcher(*program_, text, pattern_);
  std::vector<std::pair<size_t, size_t>> matches;
  size_t search_from = 0;
  std::optional<size_t> last_match_end;
  while (search_from <= text.size()) {
    size_t begin = search_from, end = SIZE_MAX;
    for (; begin <= text.size(); ++begin)
      if ((end = matcher.match_at(begin)) != SIZE_MAX) break;
    if (end == SIZE_MAX) break;
    if (begin == end && last_match_end == end) {
      search_from = begin + 1;  // an empty match where the last one ended: step past it
      continue;
    }
    matches.emplace_back(begin, end);
    search_from = end;
    last_match_end = end;
  }
  return matches;
}

}  // namespace ember::tokenizers
