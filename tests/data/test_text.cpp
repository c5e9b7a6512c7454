// Text data (src/data/text.cpp): the byte and char tokenizers, make_tokenizer, splitting
// fortune files and paragraphs into documents, reading files and corpus directories, the
// train/validation split and packed batches, against values written out by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "ember/data/text.h"
#include "ember/ember.h"
#include "test_support.h"

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using testutil::throws_error;

// An empty directory of this test's own.
fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(::testing::TempDir()) / ("ember_text_" + std::to_string(::getpid()) + "_" + test->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(ByteTokenizer, BytesAreTheIds) {
  const ByteTokenizer tokenizer;
  EXPECT_EQ(tokenizer.kind(), "byte");
  EXPECT_EQ(tokenizer.vocab_size(), 256);
  EXPECT_EQ(tokenizer.encode(std::string("A\xff\n\0z", 5)), (std::vector<int64_t>{65, 255, 10, 0, 122}));
  EXPECT_EQ(tokenizer.decode({104, 105, 255}), "hi\xff");
  EXPECT_EQ(tokenizer.encode(""), std::vector<int64_t>{});
  EXPECT_TRUE(throws_error([&] { tokenizer.decode({65, 256}); }, {"[ByteTokenizer::decode]", "256", "[0, 256)"}));
  EXPECT_TRUE(throws_error([&] { tokenizer.decode({-1}); }, {"[ByteTokenizer::decode]", "-1"}));
}

TEST(CharTokenizer, TheSortedDistinctBytesAreTheVocabulary) {
  // "banana\n" holds '\n' (10) < 'a' < 'b' < 'n': ids 0, 1, 2, 3.
  const CharTokenizer tokenizer("banana\n");
  EXPECT_EQ(tokenizer.kind(), "char");
  EXPECT_EQ(tokenizer.vocab_size(), 4);
  EXPECT_EQ(tokenizer.state(), "\nabn");
  EXPECT_EQ(tokenizer.encode("nab\n"), (std::vector<int64_t>{3, 1, 2, 0}));
  EXPECT_EQ(tokenizer.encode("zb"), (std::vector<int64_t>{0, 2}));  // unknown bytes are id 0
  EXPECT_EQ(tokenizer.decode({2, 1, 3, 1}), "bana");
  EXPECT_TRUE(throws_error([&] { tokenizer.decode({4}); }, {"[CharTokenizer::decode]", "4", "[0, 4)"}));
  EXPECT_TRUE(throws_error([] { CharTokenizer(""); }, {"[CharTokenizer]", "empty text"}));
}

TEST(MakeTokenizer, RebuildsEachKindFromItsState) {
  const CharTokenizer original("xyz");
  const auto rebuilt = make_tokenizer(original.kind(), original.state());
  EXPECT_EQ(rebuilt->kind(), "char");
  EXPECT_EQ(rebuilt->encode("zyx"), (std::vector<int64_t>{2, 1, 0}));
  const auto bytes = make_tokenizer("byte", "");
  EXPECT_EQ(bytes->vocab_size(), 256);
  EXPECT_EQ(bytes->encode("a"), std::vector<int64_t>{97});
  EXPECT_TRUE(throws_error([] { make_tokenizer("words", ""); }, {"[make_tokenizer]", "'words'", "byte, char"}));
}

TEST(SplitDocuments, PercentLinesSeparateFortunes) {
  // The empty fortune between two "%" lines is dropped; blank lines at either end of a
  // fortune are trimmed, inner ones kept, and every document ends in one newline.
  EXPECT_EQ(split_documents("one\n%\ntwo\n\nlines\n%\n%\n\n  three  \n\n"),
            (std::vector<std::string>{"one\n", "two\n\nlines\n", "three\n"}));
  // A file that starts with a "%" line is fortune-style too.
  EXPECT_EQ(split_documents("%\nalpha\n%\nbeta"), (std::vector<std::string>{"alpha\n", "beta\n"}));
}

TEST(SplitDocuments, WithoutPercentLinesParagraphsAreDocuments) {
  // Lines of spaces, tabs or a carriage return separate paragraphs as empty lines do.
  EXPECT_EQ(split_documents("a b\nc\n\n\nd\n \t\ne\r\n\r\nf"),
            (std::vector<std::string>{"a b\nc\n", "d\n", "e\r\n", "f\n"}));
  EXPECT_EQ(split_documents("\n\n \n"), std::vector<std::string>{});
  EXPECT_EQ(split_documents("50%\nof it\n"), (std::vector<std::string>{"50%\nof it\n"}));
}

TEST(ReadTextFile, ReadsEveryByteAndNamesTheFileItCannotUse) {
  const fs::path dir = scratch_directory();
  write(dir / "text", std::string("x\0y\n", 4));
  EXPECT_EQ(read_text_file((dir / "text").string()), std::string("x\0y\n", 4));
  write(dir / "empty", "");
  EXPECT_TRUE(throws_error([&] { read_text_file((dir / "empty").string()); }, {"[data]", "empty"}));
  const std::string missing = (dir / "missing").string();
  EXPECT_TRUE(throws_error([&] { read_text_file(missing); }, {missing}));
}

TEST(ReadCorpus, ADirectoryIsItsFortuneFilesInNameOrder) {
  const fs::path dir = scratch_directory();
  write(dir / "zebra", "last\n");
  write(dir / "apple", "first");  // no final newline: one is added before the "%" line
  write(dir / "apple.dat", "an index, skipped");
  fs::create_directory(dir / "subdirectory");
  write(dir / "subdirectory" / "inner", "skipped");
  fs::create_symlink(dir / "zebra", dir / "link");  // skipped: links would repeat a file
  EXPECT_EQ(read_corpus(dir.string()), "first\n%\nlast\n%\n");
  EXPECT_EQ(read_corpus((dir / "zebra").string()), "last\n");  // a file is read as it is
  const fs::path empty = dir / "subdirectory" / "none";
  fs::create_directory(empty);
  EXPECT_TRUE(throws_error([&] { read_corpus(empty.string()); }, {"[data]", empty.string(), "no text files"}));
}

TEST(TokenizeSplit, EveryNthDocumentIsValidation) {
  const ByteTokenizer bytes;
  // With val_every = 3, documents 2 and 5 (the third of each three) are validation.
  const SplitStreams split = tokenize_split({"a", "bb", "c", "dd", "e", "ff"}, bytes, 3);
  EXPECT_EQ(split.train.tokens, (std::vector<int64_t>{'a', 'b', 'b', 'd', 'd', 'e'}));
  EXPECT_EQ(split.train.doc_ids, (std::vector<int32_t>{0, 1, 1, 3, 3, 4}));
  EXPECT_EQ(split.val.tokens, (std::vector<int64_t>{'c', 'f', 'f'}));
  EXPECT_EQ(split.val.doc_ids, (std::vector<int32_t>{2, 5, 5}));
  EXPECT_TRUE(throws_error([&] { tokenize_split({"a"}, bytes, 1); }, {"[tokenize_split]", "at least 2", "1"}));
}

TEST(SampleBatch, RowsAreWindowsOfTheStreamChosenByTheSeedAndIndex) {
  // Token i is 1000 + i and belongs to document i / 10, so a row's first input names its window.
  TokenStream stream;
  for (int64_t i = 0; i < 50; ++i) {
    stream.tokens.push_back(1000 + i);
    stream.doc_ids.push_back(static_cast<int32_t>(i / 10));
  }
  const int64_t rows = 6, length = 7;
  std::set<int64_t> starts;
  for (uint64_t index : {0, 1, 2}) {
    const Batch batch = sample_batch(stream, rows, length, /*seed=*/11, index);
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{rows, length}));
    ASSERT_EQ(batch.targets.sizes(), (std::vector<int64_t>{rows, length}));
    ASSERT_EQ(batch.doc_ids.sizes(), (std::vector<int64_t>{rows, length}));
    EXPECT_EQ(batch.inputs.scalar_type(), kInt64);
    EXPECT_EQ(batch.targets.scalar_type(), kInt64);
    EXPECT_EQ(batch.doc_ids.scalar_type(), kInt32);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t start = batch.inputs[r][0].item<int64_t>() - 1000;
      // The window and its next token lie inside the stream.
      EXPECT_GE(start, 0);
      EXPECT_LE(start + length + 1, 50);
      starts.insert(start);
      for (int64_t t = 0; t < length; ++t) {
        EXPECT_EQ(batch.inputs[r][t].item<int64_t>(), 1000 + start + t);
        EXPECT_EQ(batch.targets[r][t].item<int64_t>(), 1000 + start + t + 1);
        EXPECT_EQ(batch.doc_ids[r][t].item<int64_t>(), (start + t) / 10);
      }
    }
    // The same (seed, index) gives the same batch, as a resumed run needs.
    const Batch again = sample_batch(stream, rows, length, 11, index);
    EXPECT_TRUE(equal(again.inputs, batch.inputs));
    EXPECT_TRUE(equal(again.doc_ids, batch.doc_ids));
  }
  // 18 rows drawn from 42 possible starts are not all one window.
  EXPECT_GT(starts.size(), 1u);
  EXPECT_FALSE(equal(sample_batch(stream, rows, length, 12, 0).inputs, sample_batch(stream, rows, length, 11, 0).inputs));
  EXPECT_TRUE(throws_error([&] { sample_batch(stream, 1, 49, 1, 0); }, {"[sample_batch]", "50 tokens", "49"}));
}

}  // namespace
}  // namespace ember::data
