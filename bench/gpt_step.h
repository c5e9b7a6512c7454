// The workload of `ember bench train` and `ember bench profiler`: `ember train`'s default GPT
// (model, AdamW, clipping) training on packed byte batches of the default corpus.
#pragma once
#include <vector>

#include "ember/data/text.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"

namespace ember::bench {

class GptStep {
 public:
  static constexpr int64_t kBatch = 16, kSeqLen = 128;

  // A fresh model (seed 1337) computing in `dtype`, its parameters float32.
  explicit GptStep(ScalarType dtype);

  // One optimisation step on the next batch; its wall time in milliseconds.
  double run();

  const models::GPTConfig& config() const { return config_; }

 private:
  data::SplitStreams streams_;
  models::GPTConfig config_;
  models::GPT model_;
  optim::AdamW optimizer_;
  int64_t index_ = 0;
};


}  // namespace ember::bench
