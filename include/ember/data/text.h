// Text data for language-model training: tokenizers, documents, a deterministic split and
// packed batches that carry the document ids a document mask needs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::data {

// Maps text to token ids and back.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // A string that rebuilds this tokenizer with make_tokenizer(kind(), state()).
  virtual std::string state() const = 0;
};

// Bytes are tokens: vocabulary 256, loss in nats per token = nats per byte.
class ByteTokenizer : public Tokenizer {
 public:
  std::string kind() const override { return "byte"; }
  int64_t vocab_size() const override { return 256; }
  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string state() const override { return ""; }
};

// The distinct bytes of a corpus, sorted, are the vocabulary. Unknown bytes encode to id 0.
class CharTokenizer : public Tokenizer {
 public:
  explicit CharTokenizer(const std::string& alphabet_or_corpus);
  std::string kind() const override { return "char"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(alphabet_.size()); }
  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string state() const override { return alphabet_; }

 private:
  std::string alphabet_;
  int16_t index_[256];
};

// kind "byte", "char" or "tokenizer.json" (state: the file's text; ember/data/tokenizers.h).
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& kind, const std::string& state);

// Splits a fortune-style file into documents at lines holding only "%"; a file without such
// lines is one document per blank-line-separated paragraph. Empty documents are dropped.
std::vector<std::string> split_documents(const std::string& text);

// Reads a file, throwing ember::Error naming it if it is missing, unreadable or empty.
std::string read_text_file(const std::string& path);

// A text file, or a directory of fortune files (name order, each ending in a "%" line).
std::string read_corpus(const std::string& path);

// The default corpus: every fortune file of Debian's `fortunes` packages, in name order.
std::string default_corpus_path();

// Tokens of many documents laid end to end, with each token's document id.
struct TokenStream {
  std::vector<int64_t> tokens;
  std::vector<int32_t> doc_ids;
};

// Deterministic split: every `val_every`-th document (by position) goes to validation.
struct SplitStreams {
  TokenStream train, val;
};
SplitStreams tokenize_split(const std::vector<std::string>& documents, const Tokenizer& tokenizer,
                            int64_t val_every = 20);

// A batch of `batch` windows of seq_len + 1 tokens: inputs [B, T], targets [B, T] (int64),
// doc_ids [B, T] (int32; documents packed in one window never see each other).
struct Batch {
  Tensor inputs, targets, doc_ids;
};

// Window starts depend only on (seed, index), so a resumed run sees the same batches.
Batch sample_batch(const TokenStream& stream, int64_t batch, int64_t seq_len, uint64_t seed, uint64_t index);

}  // namespace ember::data
