// libFuzzer target for the tokenizer.json loader and the encoder. The first byte chooses:
// 0-5 encode the rest with a fixture tokenizer (gpt2, llama3, qwen2, llama2, metaspace,
// gemma); otherwise the rest is a tokenizer.json, a NUL byte, and a text to encode with it.
// Any input must load or throw ember::Error, never crash; what encodes must decode, stream to
// the same text, and the byte-level families must give back the text they encoded.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/tokenizers.h"
#include "ember/error.h"

namespace {

const char* const kFamilies[] = {"gpt2", "llama3", "qwen2", "llama2", "metaspace", "gemma"};
constexpr int kFamilyCount = 6;
std::optional<ember::tokenizers::Tokenizer> fixtures[kFamilyCount];

void check_round_trip(const ember::tokenizers::Tokenizer& tokenizer, const std::string& text, bool lossless) {
  std::vector<int64_t> ids;
  try {
    ids = tokenizer.encode(text, true);
    ids = tokenizer.encode(text);
  } catch (const ember::Error&) {
    return;  // invalid UTF-8, or a regex that backtracks without end
  }
  if (lossless && tokenizer.decode(ids) != text) __builtin_trap();
  for (bool skip_special : {false, true}) {
    ember::tokenizers::DecodeStream stream(tokenizer, skip_special);
    std::string streamed;
    for (int64_t id : ids) streamed += stream.step(id);
    streamed += stream.flush();
    if (streamed != tokenizer.decode(ids, skip_special)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (int i = 0; i < kFamilyCount; ++i)
    fixtures[i] = ember::tokenizers::Tokenizer::from_file(std::string(EMBER_FUZZ_TOKENIZER_FIXTURES) + "/" +
                                                          kFamilies[i] + "/tokenizer.json");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] < kFamilyCount) {
    check_round_trip(*fixtures[data[0]], rest, data[0] <= 1);
    return 0;
  }
  const size_t nul = rest.find('\0');
  const std::string json = rest.substr(0, nul);
  const std::string text = nul == std::string::npos ? std::string("Hello world 123 ") : rest.substr(nul + 1);
  try {
    const auto tokenizer = ember::tokenizers::Tokenizer::from_json(json, "fuzz.json");
    check_round_trip(tokenizer, text, false);
  } catch (const ember::Error&) {
  }
  return 0;
}
