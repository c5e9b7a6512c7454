// Files of a training run directory: checkpoint (safetensors), metrics.jsonl, loss.svg.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/data/text.h"
#include "ember/io/checkpoint.h"
#include "ember/models/gpt.h"
#include "ember/optim.h"

namespace ember::cli {

struct MetricPoint {
  int64_t step;
  double value;
};

// Writes an SVG of two line charts with labelled axes: train and validation loss, and below
// them the training throughput (tokens per second of each step).
void write_loss_svg(const std::string& path, const std::vector<MetricPoint>& train, const std::vector<MetricPoint>& val,
                    const std::vector<MetricPoint>& tokens_per_s);

// A resumed run continues the curve of its checkpoint: the lines of metrics.jsonl up to
// `last_step` are kept and returned, those past it (written before a crash or kill) dropped. The
// kept lines replace the file atomically: a kill while they are written loses none.
std::vector<nlohmann::json> keep_metrics_until(const std::string& path, int64_t last_step);

// What a run's checkpoint carries besides model, optimizer, step and RNG (which
// io::save_checkpoint stores): the model config, the tokenizer and the run's settings.
struct RunInfo {
  models::GPTConfig config;
  std::string tokenizer_kind, tokenizer_state;
  std::string train_json;  // the training settings that must match on resume
};

io::Metadata run_metadata(const RunInfo& info);
// The run info in a checkpoint's metadata; `checkpoint` names it in errors.
RunInfo run_info_from(const io::Metadata& metadata, const std::string& checkpoint);
// Reads the run info from a checkpoint's header.
RunInfo read_run_info(const std::string& checkpoint_path);

}  // namespace ember::cli
