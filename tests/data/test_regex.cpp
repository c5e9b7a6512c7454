// The pre-tokenizers' regex engine: the real split patterns and one pattern per feature against
// Oniguruma's matches (tests/data/fixtures/regex_reference.json, made through Hugging Face
// tokenizers by scripts/gen_unicode_reference.py), hand-derived cases, errors, hostile patterns.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "data/tokenizers/regex.h"
#include "data/tokenizers/unicode.h"
#include "ember/error.h"

namespace ember::tokenizers {
namespace {

using Matches = std::vector<std::pair<size_t, size_t>>;

const nlohmann::json& fixture(const std::string& name) {
  static std::map<std::string, nlohmann::json> loaded;
  if (!loaded.count(name)) {
    std::ifstream in(std::string(EMBER_DATA_FIXTURES_DIR) + "/" + name);
    EXPECT_TRUE(in) << "missing fixture " << name;
    loaded[name] = nlohmann::json::parse(in);
  }
  return loaded[name];
}

// The reference's matches come through tokenizers' Split, which drops empty pieces.
Matches non_empty(const Matches& matches) {
  Matches result;
  for (auto match : matches)
    if (match.second > match.first) result.push_back(match);
  return result;
}

Matches expected_matches(const nlohmann::json& json) {
  Matches result;
  for (const auto& pair : json) result.emplace_back(pair[0].get<size_t>(), pair[1].get<size_t>());
  return result;
}

// The matched pieces, as UTF-8, for readable failures.
std::vector<std::string> pieces(const std::u32string& text, const Matches& matches) {
  std::vector<std::string> out;
  for (auto [begin, end] : matches) out.push_back(codepoints_to_utf8(std::u32string_view(text).substr(begin, end - begin)));
  return out;
}

std::vector<std::string> split(const std::string& pattern, const std::string& text) {
  std::u32string codepoints = utf8_to_codepoints(text, "text");
  return pieces(codepoints, Regex::compile(pattern).find_all(codepoints));
}

std::string compile_error(const std::string& pattern) {
  try {
    Regex::compile(pattern);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

constexpr const char* kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
constexpr const char* kLlama3 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

TEST(RegexReference, RealPretokenizerPatternsMatchOniguruma) {
  const nlohmann::json& reference = fixture("regex_reference.json");
  ASSERT_EQ(reference["real_patterns"].size(), 4u);
  for (const auto& entry : reference["real_patterns"]) {
    Regex regex = Regex::compile(entry["pattern"].get<std::string>());
    for (const auto& c : entry["cases"]) {
      std::u32string text = utf8_to_codepoints(c["text"].get<std::string>(), "text");
      Matches expected = expected_matches(c["matches"]);
      Matches found = regex.find_all(text);
      EXPECT_EQ(found, expected) << entry["name"] << " on " << c["text"] << "\n got:      "
                                 << testing::PrintToString(pieces(text, found))
                                 << "\n expected: " << testing::PrintToString(pieces(text, expected));
    }
  }
}

TEST(RegexReference, FeaturePatternsMatchOniguruma) {
  for (const auto& entry : fixture("regex_reference.json")["feature_patterns"]) {
    Regex regex = Regex::compile(entry["pattern"].get<std::string>());
    for (const auto& c : entry["cases"]) {
      std::u32string text = utf8_to_codepoints(c["text"].get<std::string>(), "text");
      Matches expected = expected_matches(c["matches"]);
      Matches found = non_empty(regex.find_all(text));
      EXPECT_EQ(found, expected) << entry["pattern"] << " on " << c["text"] << "\n got:      "
                                 << testing::PrintToString(pieces(text, found))
                                 << "\n expected: " << testing::PrintToString(pieces(text, expected));
    }
  }
}

TEST(RegexReference, RandomPatternsMatchOniguruma) {
  const nlohmann::json& cases = fixture("regex_reference.json")["random_cases"];
  ASSERT_GE(cases.size(), 400u);
  for (const auto& c : cases) {
    std::u32string text = utf8_to_codepoints(c["text"].get<std::string>(), "text");
    Matches expected = expected_matches(c["matches"]);
    Matches found = non_empty(Regex::compile(c["pattern"].get<std::string>()).find_all(text));
    EXPECT_EQ(found, expected) << c["pattern"] << " on " << c["text"] << "\n got:      "
                               << testing::PrintToString(pieces(text, found))
                               << "\n expected: " << testing::PrintToString(pieces(text, expected));
  }
}

// \s, \w and \d on every assigned code point, against the sets Oniguruma matched.
TEST(RegexReference, ShorthandClassesMatchOnigurumaEverywhere) {
  std::u32string assigned;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp)
    if (category(cp) != Category::Cn && category(cp) != Category::Cs) assigned.push_back(cp);
  for (auto [name, pattern] : {std::pair{"whitespace", R"re(\s+)re"}, {"word", R"re(\w+)re"}, {"digit", R"re(\d+)re"}}) {
    std::set<char32_t> onig;
    for (const auto& range : fixture("unicode_reference.json")["oniguruma"][name])
      for (char32_t cp = range[0].get<char32_t>(); cp <= range[1].get<char32_t>(); ++cp) onig.insert(cp);
    std::set<char32_t> found;
    for (auto [begin, end] : Regex::compile(pattern).find_all(assigned))
      for (size_t i = begin; i < end; ++i) found.insert(assigned[i]);
    EXPECT_EQ(found.size(), onig.size()) << name;
    EXPECT_TRUE(found == onig) << name;
  }
}

TEST(RegexMatching, HandDerivedSplits) {
  using Pieces = std::vector<std::string>;
  EXPECT_EQ(split(kGpt2, "Hello world's 123  x  "), (Pieces{"Hello", " world", "'s", " 123", " ", " x", "  "}));
  EXPECT_EQ(split(kLlama3, "I'LL 12345\n\n  end"), (Pieces{"I", "'LL", " ", "123", "45", "\n\n", " ", " end"}));
  EXPECT_EQ(split(R"re(\p{L}+?\d)re", "ab1cd2"), (Pieces{"ab1", "cd2"}));
  EXPECT_EQ(split(R"re(a+?)re", "aaa"), (Pieces{"a", "a", "a"}));
  EXPECT_EQ(split(R"re(a{2,3}?)re", "aaaaa"), (Pieces{"aa", "aa"}));
  EXPECT_EQ(split(R"re(a*+a|b)re", "aaab"), (Pieces{"b"}));  // possessive: never gives an 'a' back
  EXPECT_EQ(split(R"re((?:ab)*+a|c)re", "ababac"), (Pieces{"ababa", "c"}));
  EXPECT_EQ(split(R"re(\d+(?=px))re", "12px 34em 5px"), (Pieces{"12", "5"}));
  EXPECT_EQ(split(R"re(\d+(?!\d|px))re", "12px 34em"), (Pieces{"34"}));
  EXPECT_EQ(split(R"re((?i:'s|'ll))re", "'S 'lL 's \u017F"), (Pieces{"'S", "'lL", "'s"}));
  EXPECT_EQ(split(R"re((?i:'s))re", "'\u017F"), (Pieces{"'\u017F"}));  // long s folds to s
  EXPECT_EQ(split(R"re(^\w+|\w+$)re", "ab cd\nef gh"), (Pieces{"ab", "cd", "ef", "gh"}));
  EXPECT_EQ(split(R"re([\p{Lu}\p{Lt}]+)re", "ABcD\u01C5e"), (Pieces{"AB", "D\u01C5"}));
  EXPECT_EQ(split(R"re(\P{L}+)re", "ab12!c"), (Pieces{"12!"}));
  EXPECT_EQ(split(R"re(.+)re", "ab\ncd"), (Pieces{"ab", "cd"}));  // '.' stops at a newline
  EXPECT_EQ(split(R"re(\x{1F600}|\u00e9)re", "a\U0001F600\u00E9"), (Pieces{"\U0001F600", "\u00E9"}));
  EXPECT_EQ(split(R"re(a{2}?b)re", "ab aab"), (Pieces{"b", "aab"}));  // Ruby syntax: an optional a{2}
  EXPECT_EQ(Regex::compile(R"re(\n^)re").find_all(U"a\nb\n"), (Matches{{1, 2}}));  // no ^ after the final newline
  // An iteration that matches nothing ends its loop, successfully: (?:|a)+ is satisfied by its
  // first, empty iteration (were the empty iteration a failure, "aa" would match at 0).
  EXPECT_EQ(Regex::compile("(?:|a)+(?=a)").find_all(U"aaa"), (Matches{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(split(R"re((?:x?|ab)+c|ab)re", "abc"), (Pieces{"abc"}));  // backtracking into it is allowed
  EXPECT_EQ(split(R"re((\b)+a|(?i:^|b)+c)re", "a bc"), (Pieces{"a", "bc"}));
}

// Empty matches as the onig crate's find_iter yields them: one right at the previous match's
// end is skipped, the search resuming one code point further.
TEST(RegexMatching, EmptyMatchesAdvanceByOne) {
  EXPECT_EQ(Regex::compile("a*").find_all(U"baac"), (Matches{{0, 0}, {1, 3}, {4, 4}}));
  EXPECT_EQ(Regex::compile("a*|b").find_all(U"ab"), (Matches{{0, 1}, {2, 2}}));
  EXPECT_EQ(Regex::compile("x*").find_all(U""), (Matches{{0, 0}}));
  EXPECT_EQ(Regex::compile("(?:)").find_all(U"ab"), (Matches{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(Regex::compile("b").find_all(U""), Matches{});
  EXPECT_EQ(Regex::compile("ab").match_at(U"xab", 1), 3u);
  EXPECT_EQ(Regex::compile("ab").match_at(U"xab", 0), SIZE_MAX);
}

TEST(RegexErrors, UnsupportedConstructsAreNamed) {
  EXPECT_EQ(compile_error(R"re(ab\h)re"), R"re([tokenizer] regex "ab\h": unsupported construct '\h' at offset 2)re");
  EXPECT_EQ(compile_error(R"re((?<=a)b)re"), R"re([tokenizer] regex "(?<=a)b": unsupported construct '(?<=' at offset 0)re");
  EXPECT_EQ(compile_error(R"re((?<n>a))re"), R"re([tokenizer] regex "(?<n>a)": unsupported construct '(?<' at offset 0)re");
  EXPECT_EQ(compile_error(R"re((?m:a))re"), R"re([tokenizer] regex "(?m:a)": unsupported construct '(?m' at offset 0)re");
  EXPECT_EQ(compile_error(R"re(x\p{Han})re"), R"re([tokenizer] regex "x\p{Han}": unsupported construct '\p{Han}' at offset 1)re");
  EXPECT_EQ(compile_error(R"re([[a]b])re"), R"re([tokenizer] regex "[[a]b]": unsupported construct '[' at offset 1)re");
  EXPECT_EQ(compile_error(R"re(a{1,3}+)re"), R"re([tokenizer] regex "a{1,3}+": unsupported construct '{1,3}+' at offset 1)re");
  EXPECT_EQ(compile_error("(?i:'s|x\u00DF)"),
            "[tokenizer] regex \"(?i:'s|x\u00DF)\": unsupported construct: case-insensitive '\u00DF' (it folds to "
            "several code points) at offset 8");
  EXPECT_EQ(compile_error("(?i:'re|ffi)"),
            "[tokenizer] regex \"(?i:'re|ffi)\": unsupported construct: case-insensitive 'ff' (U+FB00 folds to it) at "
            "offset 8");
  for (const char* pattern : {R"re((?<name>a))re", R"re([a&&b])re", R"re((a)\1)re", "a**", R"re(\pL)re", "(?m:a)", "a(?i)b", R"re(\R)re",
                              R"re(\X)re", R"re(\k<a>)re", "(?#c)", "(?i:ss)", "(?i:stra\u00DFe)", "(?i:[\u00DF])", R"re(\0)re",
                              R"re(\cA)re", "a{3,2}", R"re([\s-a])re", R"re(\G)re", R"re(\K)re"}) {
    std::string message = compile_error(pattern);
    EXPECT_NE(message.find("[tokenizer] regex"), std::string::npos) << pattern;
    EXPECT_NE(message.find("unsupported construct"), std::string::npos) << pattern << ": " << message;
  }
}

TEST(RegexErrors, MalformedPatternsAreNamed) {
  EXPECT_EQ(compile_error("(a"), R"re([tokenizer] regex "(a": unmatched '(' at offset 0)re");
  EXPECT_EQ(compile_error("a)"), R"re([tokenizer] regex "a)": unmatched ')' at offset 1)re");
  EXPECT_EQ(compile_error("*a"), R"re([tokenizer] regex "*a": quantifier '*' with nothing to repeat at offset 0)re");
  EXPECT_EQ(compile_error("[a"), R"re([tokenizer] regex "[a": unterminated character class at offset 0)re");
  EXPECT_EQ(compile_error("a\\"), R"re([tokenizer] regex "a\": pattern ends with '\' at offset 1)re");
  EXPECT_EQ(compile_error("[z-a]"), R"re([tokenizer] regex "[z-a]": character range out of order at offset 1)re");
  for (const char* pattern : {R"re(\p{L)re", R"re(\x{110000})re", R"re(\uD800)re", "a{100001}", "a|*", "(?=a)*",
                              R"re(\b+)re", R"re((?:a|$)*)re", "^?"})
    EXPECT_NE(compile_error(pattern).find("[tokenizer] regex"), std::string::npos) << pattern;
  EXPECT_NE(compile_error("\xFF").find("[tokenizer] invalid UTF-8 in regex pattern at byte 0"), std::string::npos);
}

TEST(RegexHostile, DeepNestingThrowsInsteadOfOverflowing) {
  std::string deep = std::string(100000, '(') + "a" + std::string(100000, ')');
  EXPECT_NE(compile_error(deep).find("nested deeper than"), std::string::npos);
  std::string fine = std::string(150, '(') + "a" + std::string(150, ')');
  EXPECT_EQ(Regex::compile(fine).find_all(U"aa"), (Matches{{0, 1}, {1, 2}}));
  std::string lookaheads;
  for (int i = 0; i < 150; ++i) lookaheads += "(?=";
  lookaheads.append("a").append(150, ')').append("a");
  EXPECT_EQ(Regex::compile(lookaheads).find_all(U"aa"), (Matches{{0, 1}, {1, 2}}));
  EXPECT_NE(compile_error("(?:(?:ab){1000}){1000}").find("pattern too large"), std::string::npos);
}

TEST(RegexHostile, CatastrophicBacktrackingThrowsANamedError) {
  for (const char* pattern : {"(a*)*b", "(a|a)*b", "(?:a|aa)+$b"}) {
    std::u32string text(3000, U'a');
    try {
      Regex::compile(pattern).find_all(text);
      ADD_FAILURE() << pattern << " finished";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("backtracking steps"), std::string::npos) << error.what();
    }
  }
  // A loop over a group keeps one pending alternative per iteration: bounded, with a named error.
  std::u32string pairs;
  for (int i = 0; i < 4'500'000; ++i) pairs += U"ab";
  try {
    Regex::compile("(?:ab)*c").match_at(pairs, 0);
    ADD_FAILURE() << "kept 4.5M pending alternatives";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("pending alternatives"), std::string::npos) << error.what();
  }
  EXPECT_EQ(Regex::compile("(?:ab)*").find_all(std::u32string_view(pairs).substr(0, 1'000'000)).front(),
            (std::pair<size_t, size_t>{0, 1'000'000}));
  // Empty iterations end a loop rather than spinning: (a?)* on b's terminates with empty matches.
  EXPECT_EQ(Regex::compile("(?:a?)*").find_all(U"bb"), (Matches{{0, 0}, {1, 1}, {2, 2}}));
}

TEST(RegexHostile, LongRunsStayLinear) {
  // Runs far longer than any recursion could follow: one run of 1M letters, 1M spaces before a
  // word, a million digits in threes.
  Regex llama3 = Regex::compile(kLlama3);
  std::u32string letters(1'000'000, U'x');
  EXPECT_EQ(llama3.find_all(letters), (Matches{{0, 1'000'000}}));
  std::u32string spaces = std::u32string(1'000'000, U' ') + U"end";
  EXPECT_EQ(llama3.find_all(spaces), (Matches{{0, 999'999}, {999'999, 1'000'003}}));
  std::u32string digits(999'999, U'7');
  EXPECT_EQ(llama3.find_all(digits).size(), 333'333u);
}

}  // namespace
}  // namespace ember::tokenizers
