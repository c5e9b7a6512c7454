// Files of a training run directory: checkpoint (safetensors), metrics.jsonl, loss.svg.
#pragma once
#include <string>
#include <vector>

#include "ember/data/text.h"
#include "ember/models/gpt.h"
#include "ember/optim.h"

namespace ember::cli {

struct MetricPoint {
  int64_t step;
  double value;
};

// Writes an SVG line chart of train and validation loss with labelled axes.
void write_loss_svg(const std::string& path, const std::vector<MetricPoint>& train, const std::vector<MetricPoint>& val);

// Everything needed to continue a run: model, optimizer, step, RNG, tokenizer, config.
struct CheckpointInfo {
  models::GPTConfig config;
  int64_t step = 0;
  std::string tokenizer_kind, tokenizer_state;
  std::string train_json;  // the training settings that must match on resume
};

void save_checkpoint(const std::string& path, models::GPTImpl& model, const optim::Optimizer* optimizer,
                     const CheckpointInfo& info);
// Reads the info only (config, step, tokenizer, settings).
CheckpointInfo read_checkpoint_info(const std::string& path);
// Restores model weights (and optimizer state and the RNG when given an optimizer).
void load_checkpoint(const std::string& path, models::GPTImpl& model, optim::Optimizer* optimizer);

}  // namespace ember::cli
