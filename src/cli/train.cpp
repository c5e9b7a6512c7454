// `ember train`: trains the GPT on a text corpus, with validation, checkpoints and resume.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "args.h"
#include "distributed/text_file.h"
#include "ember/ember.h"
#include "run_files.h"
#include "train_step.h"

namespace ember::cli {
namespace {

const char* kTrainHelp =
    "usage: ember train [flags]\n"
    "\n"
    "data:\n"
    "  --data PATH          text file, or a directory of fortune files (default: Debian's fortunes)\n"
    "  --tokenizer KIND     byte (default) or char\n"
    "  --val-every N        every N-th document goes to validation (default 20)\n"
    "model:\n"
    "  --dim N --layers N --heads N --kv-heads N --hidden N   (defaults 192, 4, 6, 2, 512)\n"
    "  --seq-len N          training sequence length (default 128)\n"
    "  --window N           sliding attention window, 0 = full causal (default 0)\n"
    "optimisation:\n"
    "  --batch-size N       sequences per micro-batch (default 16)\n"
    "  --accum N            micro-batches per step (gradient accumulation, default 1)\n"
    "  --lr X --min-lr X    peak and final learning rate (defaults 2e-3, 2e-4)\n"
    "  --warmup N           linear warmup steps (default 50), then cosine decay to --min-lr\n"
    "  --weight-decay X     AdamW weight decay (default 0.1)\n"
    "  --clip X             gradient norm clipping, 0 = off (default 1.0)\n"
    "  --label-smoothing X  (default 0)   --z-loss X  coefficient on lse^2 (default 0)\n"
    "  --dtype KIND         compute dtype: float32 (default) or bfloat16 (activations and weight\n"
    "                       copies in bfloat16; parameters and optimizer state stay float32)\n"
    "length and output:\n"
    "  --max-steps N        total steps of the schedule (default 1000)\n"
    "  --max-time SECONDS   stop (with a checkpoint) after this wall time (default: none)\n"
    "  --stop-at N          stop after step N without changing the schedule (for split runs)\n"
    "  --eval-every N       validation every N steps (default 100)\n"
    "  --eval-batches N     validation batches (default 8)\n"
    "  --ckpt-every N       checkpoint every N steps (default 100) and at the end\n"
    "  --out DIR            run directory (default runs/default): checkpoint.safetensors,\n"
    "                       metrics.jsonl, loss.svg\n"
    "  --resume             continue from DIR/checkpoint.safetensors (with --fsdp: the latest\n"
    "                       complete checkpoint in DIR/checkpoints)\n"
    "  --auto-resume        --resume when DIR has a complete checkpoint, else start afresh: one\n"
    "                       command for the first start and every restart (ember-run --max-restarts)\n"
    "  --seed N             initialisation and data order (default 1337)\n"
    "  --threads N          thread count (default: cores; per rank with --fsdp)\n"
    "  --fsdp               fully sharded data parallel over the ranks `ember-run --nproc N` starts:\n"
    "                       each rank trains on its rows of every batch (--batch-size must divide\n"
    "                       by N); checkpoints are sharded, in DIR/checkpoints/step_<N>, and\n"
    "                       --resume works at another rank count\n"
    "  --comm-timeout SECONDS  with --fsdp: timeout of every collective; a peer that is gone or\n"
    "                       stuck past it fails the step with a CommError naming it (default 1800)\n"
    "  --config FILE.json   flags as a JSON object (command-line flags win)\n";

const std::set<std::string> kFlags = {
    "data", "tokenizer", "val-every", "dim", "layers", "heads", "kv-heads", "hidden", "seq-len", "window",
    "batch-size", "accum", "lr", "min-lr", "warmup", "weight-decay", "clip", "label-smoothing", "z-loss", "dtype",
    "max-steps", "max-time", "stop-at", "eval-every", "eval-batches", "ckpt-every", "out", "seed", "threads",
    "comm-timeout"};

double learning_rate(int64_t step, int64_t warmup, int64_t total, double lr, double min_lr) {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / std::max<int64_t>(1, total - warmup));
  return min_lr + (lr - min_lr) * 0.5 * (1 + std::cos(M_PI * progress));
}

std::string format_seconds(double s) {
  const int64_t t = static_cast<int64_t>(s);
  return std::to_string(t / 60) + "m" + (t % 60 < 10 ? "0" : "") + std::to_string(t % 60) + "s";
}

// The step_<N> directories of an --fsdp run by step, complete or not.
std::map<int64_t, std::filesystem::path> sharded_checkpoint_directories(const std::string& directory) {
  std::map<int64_t, std::filesystem::path> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    // At most 18 digits: std::stoll cannot overflow on a stray directory name.
    if (name.size() > 5 && name.size() <= 5 + 18 && name.rfind("step_", 0) == 0 &&
        name.find_first_not_of("0123456789", 5) == std::string::npos)
      found[std::stoll(name.substr(5))] = entry.path();
  }
  return found;
}

// The latest complete sharded checkpoint: a step directory with its index.json, which
// save_sharded_checkpoint writes (atomically) after every rank's file and
// remove_sharded_checkpoint deletes first. Empty when there is none.
std::string latest_sharded_checkpoint(const std::string& directory) {
  const auto found = sharded_checkpoint_directories(directory);
  for (auto it = found.rbegin(); it != found.rend(); ++it)
    if (std::filesystem::exists(it->second / "index.json")) return it->second.string();
  return "";
}

// Removes a step directory so that it is never seen complete and torn: index first.
void remove_sharded_checkpoint(const std::filesystem::path& directory) {
  std::filesystem::remove(directory / "index.json");
  std::filesystem::remove_all(directory);
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  for (const auto& a : argv)
    if (a == "--help" || a == "-h") {
      std::cout << kTrainHelp;
      return 0;
    }
  Args args(argv, kFlags, {"resume", "auto-resume", "fsdp"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string out_dir = args.get("out", "runs/default");
  const std::string ckpt_path = out_dir + "/checkpoint.safetensors";
  const bool fsdp = args.get_switch("fsdp"), auto_resume = args.get_switch("auto-resume");
  if (auto_resume && args.get_switch("resume")) throw UsageError{"--resume and --auto-resume exclude each other"};
  const std::string sharded_dir = out_dir + "/checkpoints";
  // The checkpoint to resume from (the latest complete one): --resume needs one,
  // --auto-resume takes one if there is one.
  const std::string resume_from = fsdp ? latest_sharded_checkpoint(sharded_dir)
                                       : (std::filesystem::exists(ckpt_path) ? ckpt_path : "");
  if (args.get_switch("resume"))
    EMBER_CHECK(!resume_from.empty(), "train", "--resume: no ",
                fsdp ? "complete sharded checkpoint in '" + sharded_dir + "'" : "checkpoint at '" + ckpt_path + "'");
  const bool resume = !resume_from.empty() && (args.get_switch("resume") || auto_resume);
  const std::string dtype = args.get("dtype", "float32");
  if (dtype != "float32" && dtype != "bfloat16")
    throw UsageError{"--dtype must be float32 or bfloat16, got '" + dtype + "'"};

  const int64_t batch = args.get_int("batch-size", 16), seq_len = args.get_int("seq-len", 128);
  const int64_t accum = args.get_int("accum", 1), max_steps = args.get_int("max-steps", 1000);
  const int64_t stop_at = args.get_int("stop-at", max_steps), warmup = args.get_int("warmup", 50);
  const int64_t eval_every = args.get_int("eval-every", 100), eval_batches = args.get_int("eval-batches", 8);
  const int64_t ckpt_every = args.get_int("ckpt-every", 100), val_every = args.get_int("val-every", 20);
  const uint64_t seed = static_cast<uint64_t>(args.get_int("seed", 1337));
  const double lr = args.get_double("lr", 2e-3), min_lr = args.get_double("min-lr", 2e-4);
  const double max_time = args.get_double("max-time", 0), clip = args.get_double("clip", 1.0);
  models::LossOptions loss_options{args.get_double("label-smoothing", 0), args.get_double("z-loss", 0)};
  for (auto [name, v] : {std::pair{"batch-size", batch}, {"seq-len", seq_len}, {"accum", accum}, {"max-steps", max_steps},
                         {"eval-every", eval_every}, {"eval-batches", eval_batches}, {"ckpt-every", ckpt_every}})
    if (v <= 0) throw UsageError{std::string("--") + name + " must be positive, got " + std::to_string(v)};
  if (!fsdp && args.has("comm-timeout")) throw UsageError{"--comm-timeout needs --fsdp"};
  if (fsdp) {
    const double timeout_s = args.get_double("comm-timeout", 1800);
    if (timeout_s <= 0) throw UsageError{"--comm-timeout must be positive, got " + args.get("comm-timeout", "")};
    distributed::init_process_group(
        {.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout_s * 1000)))});
    // Every rank must resume from the same checkpoint (they read one shared directory).
    const int64_t resume_step =
        resume ? distributed::fsdp::read_sharded_checkpoint_info(resume_from).step : -1;
    EMBER_CHECK(same_on_all_ranks(resume_step), "train", "the ranks found different checkpoints to resume from in '",
                sharded_dir, "' (this rank: '", resume_from, "'); do they share one file system?");
  }
  const int rank = fsdp ? distributed::get_rank() : 0, world_size = fsdp ? distributed::get_world_size() : 1;
  if (batch % world_size != 0)
    throw UsageError{"--batch-size " + std::to_string(batch) + " does not divide by the " +
                     std::to_string(world_size) + " ranks"};
  const bool writes_files = rank == 0;  // metrics, plot and progress: one rank writes them
  // This rank's rows of a batch of the whole run.
  auto rows_of = [&](data::Batch b) {
    if (world_size == 1) return b;
    const int64_t rows = batch / world_size;
    return data::Batch{b.inputs.narrow(0, rank * rows, rows), b.targets.narrow(0, rank * rows, rows),
                       b.doc_ids.defined() ? b.doc_ids.narrow(0, rank * rows, rows) : Tensor()};
  };

  // Settings that define the run: a resumed run must use the same ones.
  nlohmann::json train_settings = {{"batch_size", batch}, {"seq_len", seq_len}, {"accum", accum},
                                   {"max_steps", max_steps}, {"warmup", warmup}, {"lr", lr}, {"min_lr", min_lr},
                                   {"seed", seed}, {"val_every", val_every}, {"dtype", dtype},
                                   {"data", args.get("data", data::default_corpus_path())}};

  std::string text = data::read_corpus(args.get("data", data::default_corpus_path()));
  std::vector<std::string> documents = data::split_documents(text);
  EMBER_CHECK(documents.size() >= 2, "data", "the corpus has ", documents.size(), " document(s); need at least 2");

  // Model flags override the defaults, or on --resume must agree with the checkpoint.
  auto model_config = [&](models::GPTConfig c) {
    c.dim = args.get_int("dim", c.dim);
    c.n_layers = args.get_int("layers", c.n_layers);
    c.n_heads = args.get_int("heads", c.n_heads);
    c.n_kv_heads = args.get_int("kv-heads", c.n_kv_heads);
    c.hidden_dim = args.get_int("hidden", c.hidden_dim);
    c.window = args.get_int("window", c.window);
    return c;
  };
  models::GPTConfig config;
  std::unique_ptr<data::Tokenizer> tokenizer;
  int64_t start_step = 0;
  if (resume) {
    const RunInfo info =
        fsdp ? run_info_from(distributed::fsdp::read_sharded_checkpoint_info(resume_from).metadata, resume_from)
             : read_run_info(resume_from);
    config = info.config;
    EMBER_CHECK(model_config(config) == config, "train", "--resume: the checkpoint's model is ", config.to_json(),
                ", not the one the flags ask for");
    tokenizer = data::make_tokenizer(info.tokenizer_kind, info.tokenizer_state);
    EMBER_CHECK(nlohmann::json::parse(info.train_json) == train_settings, "train",
                "--resume: the checkpoint was trained with different settings: ", info.train_json);
  } else {
    const std::string kind = args.get("tokenizer", "byte");
    tokenizer = kind == "char" ? data::make_tokenizer("char", text) : data::make_tokenizer(kind, "");
    config = model_config(config);
    config.vocab_size = tokenizer->vocab_size();
    config.max_seq_len = std::max<int64_t>(seq_len, 256);
    config.validate();
  }
  EMBER_CHECK(seq_len <= config.max_seq_len, "train", "--seq-len ", seq_len, " exceeds the model's max_seq_len ",
              config.max_seq_len);
  data::SplitStreams streams = data::tokenize_split(documents, *tokenizer, val_every);

  manual_seed(seed);
  models::GPT model(config);
  model->set_compute_dtype(dtype == "bfloat16" ? kBFloat16 : kFloat32);
  std::optional<ShardedTraining> sharded;
  if (fsdp) {
    sharded = shard_for_training(model, /*separate_reduce_scatter=*/true);
  }
  optim::AdamW optimizer = make_optimizer(model, lr, args.get_double("weight-decay", 0.1));
  if (resume) {
    start_step = fsdp ? distributed::fsdp::load_sharded_checkpoint(resume_from, *model, optimizer).step
                      : io::load_checkpoint(resume_from, *model, optimizer);
    if (writes_files) std::cerr << "resuming from " << resume_from << " at step " << start_step << "\n";
  }
  std::filesystem::create_directories(out_dir);
  const io::Metadata run_meta = run_metadata({config, tokenizer->kind(), tokenizer->state(), train_settings.dump()});
  // A resumed run continues the curve of its checkpoint: lines past it (written before a
  // crash or kill) are dropped, the earlier ones stay in the file and the plot.
  // The kept lines replace the file atomically: a kill while they are written loses none.
  std::vector<MetricPoint> train_curve, val_curve;
  const std::string metrics_path = out_dir + "/metrics.jsonl";
  if (resume && writes_files) {
    std::string kept;
    std::ifstream old(metrics_path);
    for (std::string line; std::getline(old, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("step") || j["step"].get<int64_t>() > start_step) continue;
      kept += line + "\n";
      if (j.contains("loss")) train_curve.push_back({j["step"], j["loss"]});
      if (j.contains("val_loss")) val_curve.push_back({j["step"], j["val_loss"]});
    }
    distributed::write_text_atomically(metrics_path, kept, "train");
  }
  std::ofstream metrics;
  if (writes_files) metrics.open(metrics_path, resume ? std::ios::app : std::ios::trunc);

  auto evaluate = [&] {
    NoGradGuard guard;
    model->eval();
    double total = 0;
    for (int64_t i = 0; i < eval_batches; ++i) {
      data::Batch b =
          rows_of(data::sample_batch(streams.val, batch, seq_len, seed ^ 0x5eedull, static_cast<uint64_t>(i)));
      total += model.call(&models::GPTImpl::loss, b.inputs, b.targets, b.doc_ids, models::LossOptions{})
                   .item<double>();
    }
    model->train();
    const double loss = total / static_cast<double>(eval_batches);
    return fsdp ? mean_over_ranks(loss) : loss;
  };
  int64_t saved_step = resume ? start_step : -1;  // a complete checkpoint is never rewritten in place
  auto checkpoint = [&](int64_t step) {
    if (step != saved_step && fsdp) {
      // A fresh directory per step; the others (older ones, and any left incomplete by a
      // killed run) go once this one is complete.
      distributed::fsdp::save_sharded_checkpoint(sharded_dir + "/step_" + std::to_string(step), *model, optimizer,
                                                 step, run_meta);
      if (writes_files)
        for (const auto& [other_step, directory] : sharded_checkpoint_directories(sharded_dir))
          if (other_step != step) remove_sharded_checkpoint(directory);
    } else if (step != saved_step) {
      io::save_checkpoint(ckpt_path, *model, optimizer, step, run_meta);
    }
    saved_step = step;
    if (writes_files) write_loss_svg(out_dir + "/loss.svg", train_curve, val_curve);
  };

  const bool tty = writes_files && isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int64_t step = start_step, tokens_done = 0;
  double last_val = NAN;
  while (step < std::min(stop_at, max_steps)) {
    bool out_of_time = max_time > 0 && elapsed() >= max_time;
    if (fsdp && max_time > 0) out_of_time = mean_over_ranks(out_of_time ? 1.0 : 0.0) > 0;  // stop together
    if (out_of_time) break;
    const double step_lr = learning_rate(step, warmup, max_steps, lr, min_lr);
    for (auto& group : optimizer.param_groups()) group.options().set_lr(step_lr);
    const StepResult result = train_step(
        model, optimizer, accum,
        [&](int64_t micro) {
          return rows_of(
              data::sample_batch(streams.train, batch, seq_len, seed, static_cast<uint64_t>(step * accum + micro)));
        },
        clip, loss_options, sharded ? &*sharded : nullptr);
    const double step_loss = result.loss, grad_norm = result.grad_norm;
    ++step;
    tokens_done += batch * seq_len * accum;
    const double secs = elapsed(), tokens_per_s = static_cast<double>(tokens_done) / secs;
    train_curve.push_back({step, step_loss});
    nlohmann::json line = {{"step", step}, {"loss", step_loss}, {"lr", step_lr}, {"grad_norm", grad_norm},
                           {"tokens_per_s", tokens_per_s}, {"elapsed_s", secs}};
    if (step % eval_every == 0 || step == max_steps) {
      last_val = evaluate();
      val_curve.push_back({step, last_val});
      line["val_loss"] = last_val;
    }
    metrics << line.dump() << "\n" << std::flush;
    const double eta = max_time > 0 ? std::max(0.0, max_time - secs)
                                    : secs / static_cast<double>(step - start_step) * static_cast<double>(max_steps - step);
    if (tty) {
      const int width = 30, filled = static_cast<int>(width * step / max_steps);
      std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] step " << step << "/"
                << max_steps << " loss " << step_loss << " " << static_cast<int64_t>(tokens_per_s) << " tok/s ETA "
                << format_seconds(eta) << "   " << std::flush;
    } else if (writes_files && (step % 10 == 0 || line.contains("val_loss"))) {
      std::cerr << line.dump() << "\n";
    }
    if (step % ckpt_every == 0) checkpoint(step);
  }
  if (tty) std::cerr << "\n";
  if (val_curve.empty() || val_curve.back().step != step) {
    last_val = evaluate();
    val_curve.push_back({step, last_val});
    metrics << nlohmann::json({{"step", step}, {"val_loss", last_val}}).dump() << "\n";
  }
  checkpoint(step);
  if (writes_files)
    std::cout << "step " << step << " val_loss " << last_val << " nats/token, checkpoint "
              << (fsdp ? sharded_dir + "/step_" + std::to_string(step) : ckpt_path) << "\n";
  if (fsdp) distributed::destroy_process_group();
  return 0;
}

}  // namespace ember::cli
