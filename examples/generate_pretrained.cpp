// Example 4: a Hugging Face model directory (config.json, safetensors, tokenizer.json) loaded
// with its tokenizer, and a greedy continuation of a prompt streamed through the KV cache.
//   example_generate_pretrained DIR [PROMPT] [NEW_TOKENS]
#include <ember/data/tokenizers.h>
#include <ember/ember.h>
#include <ember/models/pretrained.h>

#include <algorithm>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR [PROMPT] [NEW_TOKENS]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::string prompt = argc > 2 ? argv[2] : "The capital of France is";
  const int new_tokens = argc > 3 ? std::stoi(argv[3]) : 32;

  auto tokenizer = ember::tokenizers::Tokenizer::from_file(dir + "/tokenizer.json");
  auto model = ember::models::from_pretrained(dir);  // weights mapped from the files
  const auto eos = ember::models::read_generation_config(dir).eos_token_ids;
  ember::NoGradGuard no_grad;

  std::vector<int64_t> ids = tokenizer.encode(prompt, /*add_special_tokens=*/true);
  auto cache = model->make_cache(1, static_cast<int64_t>(ids.size()) + new_tokens);
  auto logits = model->forward_cached(ember::tensor(ids).view({1, -1}), cache, /*logits_to_keep=*/1);
  ember::tokenizers::DecodeStream stream(tokenizer, /*skip_special_tokens=*/true);
  std::cout << prompt;
  for (int i = 0; i < new_tokens; ++i) {
    const int64_t next = logits.reshape({-1}).argmax().item<int64_t>();
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
    std::cout << stream.step(next) << std::flush;
    if (i + 1 < new_tokens)
      logits = model->forward_cached(ember::tensor(std::vector<int64_t>{next}).view({1, 1}), cache);
  }
  std::cout << stream.flush() << "\n";
  return 0;
}
