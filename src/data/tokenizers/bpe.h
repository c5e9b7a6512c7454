// tokenizer.json's BPE model: vocabulary, ranked merges, ignore_merges, byte_fallback
// (<0xNN> tokens), unk_token and fuse_unk, continuing_subword_prefix and end_of_word_suffix,
// with a cache of the words it has tokenized.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/tokenizers/json_reader.h"

namespace ember::tokenizers::detail {

// Lets the maps be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `node` is the "model" object; anything but BPE is refused, naming the type.
  explicit BpeModel(const JsonNode& node);

  // Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<int64_t>& ids) const;

  std::optional<int64_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int64_t id) const;                               // null when no token has this id
  int64_t id_bound() const { return static_cast<int64_t>(id_to_token_.size()); }  // max id + 1

 private:
  struct Merge {
    int32_t rank, new_id;
  };
  // The merges by pair of ids, in an open-addressing table: merging a long word looks pairs up
  // millions of times, and a node-based map costs a cache miss each.
  class MergeTable {
   public:
    void reserve(size_t count);
    void insert_or_assign(int32_t left, int32_t right, Merge merge);
    const Merge* find(int32_t left, int32_t right) const;

   private:
    static uint64_t key(int32_t left, int32_t right) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    size_t slot_of(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    struct Slot {
      uint64_t key = ~uint64_t{0};  // empty: no pair of valid ids has it
      Merge merge{};
    };
    std::vector<Slot> slots_;
    int shift_ = 64;
    size_t size_ = 0;
  };
  void read_merges(const JsonNode& merges);
  // The symbols of a word before merging, then merged by rank (HF's Word::merge_all).
  std::vector<int32_t> merge_word(std::string_view word) const;
  // merge_word through the cache.
  void tokenize_cached(std::string_view word, std::vector<int64_t>& ids) const;
  // Cuts a long word where no merge can ever join its two sides (Note [Long words]).
  std::vector<std::string_view> cut_long_word(std::string_view word) const;

  StringMap<int32_t> vocab_;
  std::vector<const std::string*> id_to_token_;  // into vocab_'s keys
  MergeTable merges_;
  std::array<int32_t, 256> byte_tokens_{};   // the <0xNN> ids, -1 where absent
  std::array<int32_t, 128> ascii_tokens_{};  // the ids of one-character ASCII words, -1 where absent
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
  std::optional<int32_t> unk_id_;
  // Pairs of adjacent code points inside some merge's result: only there can merges join two
  // characters (Note [Long words]).
  std::unordered_set<uint64_t> joinable_pairs_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;

  // Words seen before, as HF's cache (bounded; filled until full).
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<int32_t>> cache_;
};

}  // namespace ember::tokenizers::detail
