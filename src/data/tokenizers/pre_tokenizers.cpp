// The pre-tokenizers of tokenizer.json (HF tokenizers' pre_tokenizers/*.rs).
#include "data/tokenizers/pre_tokenizers.h"

#include <functional>
#include <optional>

#include "data/tokenizers/byte_level.h"
#include "data/tokenizers/char_classes.h"
#include "data/tokenizers/pattern.h"
#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {
namespace {

// Replaces every split by what `cut` makes of it.
template <typename Cut>
void cut_each(std::vector<Split>& splits, Cut&& cut) {
  std::vector<Split> out;
  out.reserve(splits.size() * 2);
  for (const Split& split : splits) cut(split, out);
  splits = std::move(out);
}

// Every code point for which `predicate` holds is a match of its own (HF's Fn(char) pattern).
std::vector<PatternRun> predicate_runs(const std::string& text, const std::function<bool(char32_t)>& predicate) {
  std::vector<std::pair<size_t, size_t>> matches;
  size_t offset = 0;
  for (char32_t c : utf8_to_codepoints(text, "text")) {
    const size_t length = utf8_length(c);
    if (predicate(c)) matches.emplace_back(offset, offset + length);
    offset += length;
  }
  return runs_from_matches(text.size(), matches);
}

SplitBehavior parse_behavior(const JsonNode& node) {
  const std::string name = node.as_string();
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  node.unsupported(name, "Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous");
}

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) split_pattern_ = Pattern::regex(kGpt2Pattern);
  }

  void pre_tokenize(std::vector<Split>& splits) const override {
    cut_each(splits, [&](const Split& split, std::vector<Split>& out) {
      Split prefixed = split;
      if (add_prefix_space_ && !prefixed.text.empty() && prefixed.text[0] != ' ') prefixed.text = " " + prefixed.text;
      const size_t first = out.size();
      if (split_pattern_) {
        split_by_runs(prefixed, runs_from_matches(prefixed.text.size(), split_pattern_->find_all(prefixed.text)),
                      SplitBehavior::kIsolated, out);
      } else if (!prefixed.text.empty())
        out.push_back(std::move(prefixed));
      for (size_t i = first; i < out.size(); ++i) out[i].text = bytes_to_unicode_text(out[i].text);
    });
  }

 private:
  bool add_prefix_space_;
  std::optional<Pattern> split_pattern_;  // GPT-2's, when use_regex
};

class SplitPattern : public PreTokenizer {
 public:
  SplitPattern(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  void pre_tokenize(std::vector<Split>& splits) const override {
    cut_each(splits, [&](const Split& split, std::vector<Split>& out) {
      std::vector<PatternRun> runs = runs_from_matches(split.text.size(), pattern_.find_all(split.text));
      if (invert_)
        for (auto& run : runs) run.is_match = !run.is_match;
      split_by_runs(split, std::move(runs), behavior_, out);
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class Metaspace : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}

  void pre_tokenize(std::vector<Split>& splits) const override {
    const Pattern space = Pattern::literal(" ");
    const Pattern replacement = Pattern::literal(replacement_);
    cut_each(splits, [&](const Split& split, std::vector<Split>& out) {
      Split replaced{space.replace_all(split.text, replacement_), split.at_text_start};
      const bool starts_with_replacement = replaced.text.compare(0, replacement_.size(), replacement_) == 0;
      const bool prepend = prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && split.at_text_start);
      if (prepend && !starts_with_replacement && !replaced.text.empty()) replaced.text = replacement_ + replaced.text;
      if (!split_) {
        if (!replaced.text.empty()) out.push_back(std::move(replaced));
        return;
      }
      split_by_runs(replaced, runs_from_matches(replaced.text.size(), replacement.find_all(replaced.text)),
                    SplitBehavior::kMergedWithNext, out);
    });
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class PredicateSplit : public PreTokenizer {
 public:
  PredicateSplit(std::function<bool(char32_t)> predicate, SplitBehavior behavior)
      : predicate_(std::move(predicate)), behavior_(behavior) {}
  void pre_tokenize(std::vector<Split>& splits) const override {
    cut_each(splits, [&](const Split& split, std::vector<Split>& out) {
      split_by_runs(split, predicate_runs(split.text, predicate_), behavior_, out);
    });
  }

 private:
  std::function<bool(char32_t)> predicate_;
  SplitBehavior behavior_;
};

// HF's Whitespace: the runs of `\w+|[^\w\s]+`, whitespace dropped.
class Whitespace : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Split>& splits) const override {
    cut_each(splits, [&](const Split& split, std::vector<Split>& out) {
      std::vector<std::pair<size_t, size_t>> matches;
      int previous_class = -1;  // 0: word, 1: other non-space; -1: space
      size_t offset = 0;
      for (char32_t c : utf8_to_codepoints(split.text, "text")) {
        const int char_class = is_word_char(c) ? 0 : is_whitespace(c) ? -1 : 1;
        const size_t length = utf8_length(c);
        if (char_class >= 0 && char_class == previous_class)
          matches.back().second += length;
        else if (char_class >= 0)
          matches.emplace_back(offset, offset + length);
        previous_class = char_class;
        offset += length;
      }
      // HF inverts the pattern and removes: the matches stay, the whitespace between goes.
      std::vector<PatternRun> runs = runs_from_matches(split.text.size(), matches);
      for (auto& run : runs) run.is_match = !run.is_match;
      split_by_runs(split, std::move(runs), SplitBehavior::kRemoved, out);
    });
  }
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Split>& splits) const override {
    for (const auto& step : steps_) step->pre_tokenize(splits);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::unique_ptr<PreTokenizer> make_metaspace(const JsonNode& node) {
  const JsonNode replacement_node = node.at("replacement");
  const std::string replacement = replacement_node.as_string();
  if (utf8_to_codepoints(replacement, "replacement").size() != 1) replacement_node.fail("expected one character");
  Metaspace::Prepend prepend = Metaspace::Prepend::kAlways;
  if (auto scheme_node = node.find("prepend_scheme")) {
    const std::string scheme = scheme_node->as_string();
    if (scheme == "always")
      prepend = Metaspace::Prepend::kAlways;
    else if (scheme == "first")
      prepend = Metaspace::Prepend::kFirst;
    else if (scheme == "never")
      prepend = Metaspace::Prepend::kNever;
    else
      scheme_node->unsupported(scheme, "always, first, never");
  } else if (!node.bool_or("add_prefix_space", true)) {
    prepend = Metaspace::Prepend::kNever;  // files written before prepend_scheme
  }
  return std::make_unique<Metaspace>(replacement, prepend, node.bool_or("split", true));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const JsonNode type_node = node.at("type");
  const std::string type = type_node.as_string();
  if (type == "ByteLevel") {
    // trim_offsets changes offsets only, which ember does not report.
    return std::make_unique<ByteLevel>(node.bool_or("add_prefix_space", false), node.bool_or("use_regex", true));
  }
  if (type == "Split") {
    return std::make_unique<SplitPattern>(Pattern::from_json(node.at("pattern")), parse_behavior(node.at("behavior")),
                                          node.bool_or("invert", false));
  }
  if (type == "Metaspace") return make_metaspace(node);
  if (type == "Digits") {
    const bool individual = node.bool_or("individual_digits", false);
    return std::make_unique<PredicateSplit>([](char32_t c) { return is_number(c); },
                                            individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit")
    return std::make_unique<PredicateSplit>([](char32_t c) { return is_whitespace(c); }, SplitBehavior::kRemoved);
  if (type == "Punctuation") {
    const SplitBehavior behavior =
        node.has("behavior") ? parse_behavior(node.at("behavior")) : SplitBehavior::kIsolated;
    return std::make_unique<PredicateSplit>([](char32_t c) { return is_ascii_punctuation(c) || is_punctuation(c); },
                                            behavior);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(
        std::make_unique<PredicateSplit>([](char32_t c) { return is_whitespace(c); }, SplitBehavior::kRemoved));
    steps.push_back(std::make_unique<PredicateSplit>(
        [](char32_t c) { return is_ascii_punctuation(c) || is_punctuation(c); }, SplitBehavior::kIsolated));
    return std::make_unique<Sequence>(std::move(steps));
  }
  if (type == "Sequence") {
    const JsonNode list = node.at("pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_pre_tokenizer(list.at(i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  type_node.unsupported(type,
                        "the pre-tokenizers ByteLevel, Split, Metaspace, Digits, Whitespace, WhitespaceSplit, "
                        "Punctuation, BertPreTokenizer, Sequence");
}

}  // namespace ember::tokenizers::detail
