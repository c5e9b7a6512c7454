// `ember tune`: fills the GEMM autotune table for a GPT's products ahead of training, by
// running two training steps of the model on random tokens in each compute dtype (forward,
// backward and the fused loss reach every product shape a training run has).
#include <iostream>

#include "args.h"
#include "ember/backends.h"
#include "ember/ember.h"
#include "info.h"
#include "train/train_step.h"

namespace ember::cli {
namespace {

const char* kTuneHelp =
    "usage: ember tune [flags]\n"
    "\n"
    "Times the GEMM backends on every product shape of a GPT training step and stores the\n"
    "fastest per shape in the autotune table (ember info shows it), so `ember train` with the\n"
    "same flags starts tuned. Flags as ember train:\n"
    "  --dim N --layers N --heads N --kv-heads N --hidden N   (defaults 192, 4, 6, 2, 512)\n"
    "  --seq-len N --batch-size N    (defaults 128, 16)\n"
    "  --dtype KIND                  float32, bfloat16 or both (default both)\n"
    "  --threads N                   thread count (default: cores)\n";

const std::set<std::string> kFlags = {"dim",     "layers",     "heads", "kv-heads", "hidden",
                                      "seq-len", "batch-size", "dtype", "threads"};

}  // namespace

int run_tune(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kTuneHelp;
    return 0;
  }
  Args args(argv, kFlags, {});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  models::GPTConfig config;
  config.dim = args.get_int("dim", config.dim);
  config.n_layers = args.get_int("layers", config.n_layers);
  config.n_heads = args.get_int("heads", config.n_heads);
  config.n_kv_heads = args.get_int("kv-heads", config.n_kv_heads);
  config.hidden_dim = args.get_int("hidden", config.hidden_dim);
  const int64_t batch = args.get_int("batch-size", 16), seq_len = args.get_int("seq-len", 128);
  if (batch <= 0 || seq_len <= 0) throw UsageError{"--batch-size and --seq-len must be positive"};
  config.max_seq_len = std::max(config.max_seq_len, seq_len);
  config.validate();
  const std::string dtype = args.get("dtype", "both");
  std::vector<ScalarType> dtypes;
  if (dtype == "float32" || dtype == "both") dtypes.push_back(kFloat32);
  if (dtype == "bfloat16" || dtype == "both") dtypes.push_back(kBFloat16);
  if (dtypes.empty()) throw UsageError{"--dtype must be float32, bfloat16 or both, got '" + dtype + "'"};

  const size_t before = backends::autotune_table().size();
  for (ScalarType compute : dtypes) {
    manual_seed(0);
    models::GPT model(config);
    model->set_compute_dtype(compute);
    optim::AdamW optimizer = train::make_optimizer(model, 1e-3, 0.1);
    auto random_batch = [&](int64_t) {
      return data::Batch{randint(config.vocab_size, {batch, seq_len}), randint(config.vocab_size, {batch, seq_len}),
                         Tensor()};
    };
    for (int step = 0; step < 2; ++step) train::train_step(model, optimizer, 1, random_batch, 1.0, {});
  }
  const std::vector<backends::AutotuneEntry> table = backends::autotune_table();
  std::cout << "autotune table " << backends::autotune_table_path() << ": " << table.size() << " entries ("
            << table.size() - before << " new)\n";
  for (const backends::AutotuneEntry& e : table) std::cout << "  " << e.key << " -> " << e.backend << "\n";
  return 0;
}

}  // namespace ember::cli
