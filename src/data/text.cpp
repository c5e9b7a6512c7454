#include "ember/data/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/data/tokenizers.h"
#include "ember/functions.h"
#include "ember/atomic_file.h"
#include "ember/random.h"

namespace ember::data {

std::vector<int64_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    EMBER_CHECK(id >= 0 && id < 256, "ByteTokenizer::decode", "token id ", id, " is outside [0, 256)");
    out.push_back(static_cast<char>(id));
  }
  return out;
}

CharTokenizer::CharTokenizer(const std::string& alphabet_or_corpus) {
  bool seen[256] = {};
  for (unsigned char c : alphabet_or_corpus) seen[c] = true;
  std::fill(std::begin(index_), std::end(index_), int16_t{-1});
  for (int c = 0; c < 256; ++c) {
    if (!seen[c]) continue;
    index_[c] = static_cast<int16_t>(alphabet_.size());
    alphabet_.push_back(static_cast<char>(c));
  }
  EMBER_CHECK(!alphabet_.empty(), "CharTokenizer", "cannot build a vocabulary from empty text");
}

std::vector<int64_t> CharTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = std::max<int16_t>(index_[static_cast<unsigned char>(text[i])], 0);
  return ids;
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    EMBER_CHECK(id >= 0 && id < vocab_size(), "CharTokenizer::decode", "token id ", id, " is outside [0, ",
                vocab_size(), ")");
    out.push_back(alphabet_[static_cast<size_t>(id)]);
  }
  return out;
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& kind, const std::string& state) {
  if (kind == "byte") return std::make_unique<ByteTokenizer>();
  if (kind == "char") return std::make_unique<CharTokenizer>(state);
  if (kind == "tokenizer.json")
    return std::make_unique<tokenizers::Tokenizer>(tokenizers::Tokenizer::from_json(state, "tokenizer.json"));
  EMBER_FAIL("make_tokenizer", "unknown tokenizer '", kind, "' (expected byte, char or tokenizer.json)");
}

std::vector<std::string> split_documents(const std::string& text) {
  std::vector<std::string> docs;
  std::istringstream in(text);
  std::string line, current;
  const bool percent_separated = text.find("\n%\n") != std::string::npos || text.rfind("%\n", 0) == 0;
  auto flush = [&] {
    // Trim blank lines at both ends; keep inner newlines.
    size_t b = current.find_first_not_of(" \t\n");
    size_t e = current.find_last_not_of(" \t\n");
    if (b != std::string::npos) docs.push_back(current.substr(b, e - b + 1) + "\n");
    current.clear();
  };
  while (std::getline(in, line)) {
    const bool separator = percent_separated ? line == "%" : line.find_first_not_of(" \t\r") == std::string::npos;
    if (separator) flush();
    else current += line + "\n";
  }
  flush();
  return docs;
}

std::string read_text_file(const std::string& path) {
  std::string text = read_file(path, "data");
  EMBER_CHECK(!text.empty(), "data", "data file '", path, "' is empty");
  return text;
}

std::string read_corpus(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) return read_text_file(path);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    // Fortune directories hold text files plus .dat indexes and .u8 links.
    if (entry.is_regular_file() && !entry.is_symlink() && entry.path().extension().empty()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  EMBER_CHECK(!files.empty(), "data", "directory '", path, "' holds no text files");
  std::string text;
  for (const auto& f : files) {
    text += read_text_file(f.string());
    if (text.back() != '\n') text += '\n';
    text += "%\n";
  }
  return text;
}

std::string default_corpus_path() { return "/usr/share/games/fortunes"; }

SplitStreams tokenize_split(const std::vector<std::string>& documents, const Tokenizer& tokenizer,
                            int64_t val_every) {
  EMBER_CHECK(val_every >= 2, "tokenize_split", "val_every must be at least 2, got ", val_every);
  SplitStreams out;
  for (size_t d = 0; d < documents.size(); ++d) {
    TokenStream& s = (static_cast<int64_t>(d) % val_every == val_every - 1) ? out.val : out.train;
    auto ids = tokenizer.encode(documents[d]);
    s.tokens.insert(s.tokens.end(), ids.begin(), ids.end());
    s.doc_ids.insert(s.doc_ids.end(), ids.size(), static_cast<int32_t>(d));
  }
  return out;
}

Batch sample_batch(const TokenStream& stream, int64_t batch, int64_t seq_len, uint64_t seed, uint64_t index) {
  const int64_t n = static_cast<int64_t>(stream.tokens.size());
  EMBER_CHECK(n > seq_len + 1, "sample_batch", "the token stream has ", n, " tokens, too few for sequences of ",
              seq_len, " (+1)");
  Batch b;
  b.inputs = empty({batch, seq_len}, kInt64);
  b.targets = empty({batch, seq_len}, kInt64);
  b.doc_ids = empty({batch, seq_len}, kInt32);
  int64_t* in = b.inputs.data_ptr<int64_t>();
  int64_t* tg = b.targets.data_ptr<int64_t>();
  int32_t* dc = b.doc_ids.data_ptr<int32_t>();
  for (int64_t r = 0; r < batch; ++r) {
    const uint64_t bits = random_bits(seed, index * static_cast<uint64_t>(batch) + static_cast<uint64_t>(r));
    const int64_t start = static_cast<int64_t>(bits % static_cast<uint64_t>(n - seq_len - 1));
    for (int64_t t = 0; t < seq_len; ++t) {
      in[r * seq_len + t] = stream.tokens[start + t];
      tg[r * seq_len + t] = stream.tokens[start + t + 1];
      dc[r * seq_len + t] = stream.doc_ids[start + t];
    }
  }
  return b;
}

}  // namespace ember::data
