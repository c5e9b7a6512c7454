// The split behaviours of HF tokenizers (NormalizedString::split), over runs of a text.
#include "data/tokenizers/split.h"

#include <algorithm>

namespace ember::tokenizers::detail {

std::vector<PatternRun> runs_from_matches(size_t text_size, const std::vector<std::pair<size_t, size_t>>& matches) {
  if (text_size == 0) return {{0, 0, false}};
  std::vector<PatternRun> runs;
  runs.reserve(matches.size() * 2 + 1);
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) runs.push_back({previous, begin, false});
    runs.push_back({begin, end, true});
    previous = end;
  }
  if (previous != text_size) runs.push_back({previous, text_size, false});
  return runs;
}

void split_by_runs(const Split& split, std::vector<PatternRun> runs, SplitBehavior behavior, std::vector<Split>& out) {
  // Each behaviour turns the runs into (range, keep) pieces, as HF's fold over the matches.
  struct Piece {
    size_t begin, end;
    bool keep;
  };
  std::vector<Piece> pieces;
  pieces.reserve(runs.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const auto& run : runs) pieces.push_back({run.begin, run.end, true});
      break;
    case SplitBehavior::kRemoved:
      for (const auto& run : runs) pieces.push_back({run.begin, run.end, !run.is_match});
      break;
    case SplitBehavior::kContiguous:
      for (const auto& run : runs) {
        if (run.is_match == previous_match && !pieces.empty())
          pieces.back().end = run.end;
        else
          pieces.push_back({run.begin, run.end, true});
        previous_match = run.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const auto& run : runs) {
        if (run.is_match && !previous_match && !pieces.empty())
          pieces.back().end = run.end;
        else
          pieces.push_back({run.begin, run.end, true});
        previous_match = run.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
        if (run->is_match && !previous_match && !pieces.empty())
          pieces.back().begin = run->begin;
        else
          pieces.push_back({run->begin, run->end, true});
        previous_match = run->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
  }
  for (const auto& piece : pieces) {
    if (!piece.keep || piece.begin == piece.end) continue;  // HF drops empty splits
    out.push_back({split.text.substr(piece.begin, piece.end - piece.begin), split.at_text_start && piece.begin == 0});
  }
}

}  // namespace ember::tokenizers::detail
