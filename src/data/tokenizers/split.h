// The pieces a text is cut into on its way through a tokenizer, and the split behaviours of
// HF tokenizers' NormalizedString::split over a list of pattern matches.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ember::tokenizers::detail {

// One piece of normalized text that the model will tokenize on its own.
struct Split {
  std::string text;
  // Whether the piece begins at byte 0 of the original text: Metaspace's prepend_scheme
  // "first" adds its "▁" only there (HF: offsets_original().0 == 0).
  bool at_text_start = false;
};

// A run of the text, in bytes, that a pattern matched (or the run between two matches).
struct PatternRun {
  size_t begin, end;
  bool is_match;
};

// HF's SplitDelimiterBehavior.
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

// The runs covering `text` for the given match spans (sorted, disjoint, in bytes), as HF's
// Pattern::find_matches: unmatched gaps between them, an empty text giving one empty gap.
std::vector<PatternRun> runs_from_matches(size_t text_size, const std::vector<std::pair<size_t, size_t>>& matches);

// Cuts `split` by `runs` with `behavior` and appends the non-empty pieces to `out`. Only the
// piece that starts at byte 0 keeps `at_text_start`.
void split_by_runs(const Split& split, std::vector<PatternRun> runs, SplitBehavior behavior, std::vector<Split>& out);

}  // namespace ember::tokenizers::detail
