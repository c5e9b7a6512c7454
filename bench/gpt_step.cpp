#include "gpt_step.h"

#include <algorithm>
#include <chrono>

#include "train/train_step.h"

namespace ember::bench {
namespace {

data::SplitStreams default_corpus_streams() {
  auto tokenizer = data::make_tokenizer("byte", "");
  return data::tokenize_split(data::split_documents(data::read_corpus(data::default_corpus_path())), *tokenizer);
}

models::GPT seeded_model(const models::GPTConfig& config, ScalarType dtype) {
  manual_seed(1337);
  models::GPT model(config);
  model->set_compute_dtype(dtype);
  return model;
}

}  // namespace

GptStep::GptStep(ScalarType dtype)
    : streams_(default_corpus_streams()),
      model_(seeded_model(config_, dtype)),
      optimizer_(train::make_optimizer(model_, 2e-3, 0.1)) {}

double GptStep::run() {
  const auto start = std::chrono::steady_clock::now();
  train::train_step(
      model_, optimizer_, 1,
      [&](int64_t) { return data::sample_batch(streams_.train, kBatch, kSeqLen, 1, static_cast<uint64_t>(index_++)); },
      1.0, {});
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}


}  // namespace ember::bench
