// ember-rt's text generation (--prompt) over a stand-in for the exported GPT: methods prefill
// and decode whose logits for a position are row `token` of a table (an embedding), so the
// expected text follows from the table, the sampler (ember/detail/sampling.h, shared with
// `ember generate`) and the seed stream alone. The real GPT's logits are checked against
// eager by the exporter's tests and by the kernel tests here.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

#include "ember/detail/sampling.h"
#include "ember/random.h"
#include "program_builder.h"

namespace ember::rt::testing {
namespace {

constexpr int64_t kVocab = 256, kMaxLen = 6;

// prefill(tokens [1, T], T in [1, kMaxLen]) -> logits [1, T, 256]; decode(tokens [1, 1],
// pos) -> logits [1, 1, 256]; metadata of a byte tokenizer.
ProgramSpec stand_in_gpt(const std::vector<float>& table) {
  ProgramSpec p;
  p.operators = {"embedding"};
  p.segments = {float_bytes(table)};
  p.metadata = {{"tokenizer_kind", "byte"}, {"tokenizer_state", ""}, {"max_seq_len", std::to_string(kMaxLen)}};
  const ValueSpec weight{.name = "table", .shape = lits({kVocab, kVocab}), .location = fb::Location::Constant,
                         .max_bytes = kVocab * kVocab * 4};
  MethodSpec prefill;
  prefill.name = "prefill";
  prefill.symbols = {SymbolSpec{"T", fb::SymbolSource::InputDim, 0, 1, 1, kMaxLen}};
  prefill.values = {ValueSpec{.name = "tokens", .dtype = fb::ScalarType::Int64, .shape = {lit(1), sym(0)},
                              .location = fb::Location::Input, .slot = 0},
                    weight,
                    ValueSpec{.name = "logits", .shape = {lit(1), sym(0), lit(kVocab)}, .location = fb::Location::Output,
                              .slot = 0}};
  prefill.inputs = {0};
  prefill.outputs = {2};
  prefill.instructions = {call({.op = 0, .inputs = {1, 0}, .outputs = {2}, .attributes = {}})};
  MethodSpec decode;
  decode.name = "decode";
  decode.symbols = {SymbolSpec{"pos", fb::SymbolSource::InputValue, 1, 0, 0, kMaxLen - 1}};
  decode.values = {ValueSpec{.name = "tokens", .dtype = fb::ScalarType::Int64, .shape = lits({1, 1}),
                             .location = fb::Location::Input, .slot = 0},
                   ValueSpec{.name = "pos", .dtype = fb::ScalarType::Int64, .location = fb::Location::Input, .slot = 1},
                   weight,
                   ValueSpec{.name = "logits", .shape = lits({1, 1, kVocab}), .location = fb::Location::Output,
                             .slot = 0}};
  decode.inputs = {0, 1};
  decode.outputs = {3};
  decode.instructions = {call({.op = 0, .inputs = {2, 0}, .outputs = {3}, .attributes = {}})};
  p.methods = {prefill, decode};
  return p;
}

std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[256];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  pclose(pipe);
  return out;
}

TEST(RuntimeGenerate, EmberRtSamplesAsEmberGenerateDoes) {
  // Logits favour printable letters and token 0 (a NUL byte, which must be printed too), with
  // ties and near-ties for the sampler to order.
  std::vector<float> table(static_cast<size_t>(kVocab * kVocab), -8.0f);
  for (int64_t row = 0; row < kVocab; ++row) {
    for (int64_t c = 'a'; c <= 'z'; ++c) table[static_cast<size_t>(row * kVocab + c)] = static_cast<float>((row * 7 + c * 13) % 11) * 0.25f;
    table[static_cast<size_t>(row * kVocab)] = 2.0f;
  }
  const std::string path = ::testing::TempDir() + "/stand_in_gpt.ember";
  const auto bytes = build_program(stand_in_gpt(table));
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);

  const std::string prompt = "The ";
  const int64_t count = 20, top_k = 40;
  const double temperature = 0.8, top_p = 0.95;
  const uint64_t seed = 1;
  // The loop of src/cli/generate.cpp on this table, where the logits after a token are its row
  // (so ember-rt's restarts from half the context, every few tokens past max_seq_len 6, give
  // the same logits as a decoding step would).
  std::string expected = prompt;
  int64_t last = prompt.back();
  for (int64_t i = 0; i < count; ++i) {
    std::vector<double> logits(table.begin() + last * kVocab, table.begin() + (last + 1) * kVocab);
    const double u = detail::uniform_from_bits(random_bits(seed, static_cast<uint64_t>(i)));
    const int64_t next = detail::sample_token(logits.data(), kVocab, temperature, top_k, top_p, u);
    expected.push_back(static_cast<char>(next));
    last = next;
  }
  expected += "\n";
  ASSERT_NE(expected.find('\0'), std::string::npos) << "the seed samples no token 0: pick another";
  const std::string printed =
      run_command(std::string(EMBER_RT_PATH) + " " + path + " --prompt 'The ' --tokens 20 --seed 1 2>&1");
  EXPECT_EQ(printed, expected);
  std::remove(path.c_str());
}

// The sampler's order, derived by hand: most likely first, ties by token id, a NaN logit last.
TEST(RuntimeGenerate, SamplerOrdersByLogitThenTokenId) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double logits[] = {1.0, 3.0, 3.0, nan, 2.0};
  EXPECT_EQ(detail::sample_token(logits, 5, 0.0, 0, 1.0, 0.9), 1);  // greedy: the tie goes to id 1
  // top-k 2 keeps tokens 1 and 2 with equal weight: u <= 1/2 draws the first.
  EXPECT_EQ(detail::sample_token(logits, 5, 1.0, 2, 1.0, 0.5), 1);
  EXPECT_EQ(detail::sample_token(logits, 5, 1.0, 2, 1.0, 0.75), 2);
  // top-k 3 adds token 4 (logit 2) with weight e^-1; u = 0.99 lands on it.
  EXPECT_EQ(detail::sample_token(logits, 5, 1.0, 3, 1.0, 0.99), 4);
  const double mostly_nan[] = {nan, nan, -1.0, nan};
  EXPECT_EQ(detail::sample_token(mostly_nan, 4, 0.0, 0, 1.0, 0.5), 2);
}

}  // namespace
}  // namespace ember::rt::testing
