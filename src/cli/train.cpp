// `ember train`: trains the GPT on a text corpus, with validation, checkpoints and resume.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "args.h"
#include "ember/ember.h"
#include "run_files.h"
#include "train/train_step.h"

namespace ember::cli {

int run_finetune(const std::vector<std::string>& argv);  // src/cli/finetune.cpp

namespace {

const char* kTrainHelp =
    "usage: ember train [flags]\n"
    "       ember train --init DIR --data FILE [flags]   fine-tune a Hugging Face model (ember train --init DIR --help)\n"
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
    "  --profile STEPS      profile STEPS training steps (after the first, which warms caches up):\n"
    "                       writes DIR/trace.json (trace_rank<R>.json per rank with --fsdp) for\n"
    "                       chrome://tracing or Perfetto, and prints the table of its events\n"
    "  --config FILE.json   flags as a JSON object (command-line flags win)\n";

const std::set<std::string> kFlags = {
    "data", "tokenizer", "val-every", "dim", "layers", "heads", "kv-heads", "hidden", "seq-len", "window",
    "batch-size", "accum", "lr", "min-lr", "warmup", "weight-decay", "clip", "label-smoothing", "z-loss", "dtype",
    "max-steps", "max-time", "stop-at", "eval-every", "eval-batches", "ckpt-every", "out", "seed", "threads",
    "comm-timeout", "profile"};

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

// The flags of a run, read and checked.
struct TrainOptions {
  std::string out_dir, ckpt_path, sharded_dir, data_path, tokenizer, dtype;
  bool fsdp = false, resume = false, auto_resume = false;
  int64_t batch = 0, seq_len = 0, accum = 0, max_steps = 0, stop_at = 0, warmup = 0;
  int64_t eval_every = 0, eval_batches = 0, ckpt_every = 0, val_every = 0, profile_steps = 0;
  uint64_t seed = 0;
  double lr = 0, min_lr = 0, max_time = 0, clip = 0, weight_decay = 0, comm_timeout_s = 0;
  models::LossOptions loss_options;
  std::optional<int64_t> dim, layers, heads, kv_heads, hidden, window;

  // Model flags override the defaults, or on --resume must agree with the checkpoint.
  models::GPTConfig model_config(models::GPTConfig c) const {
    c.dim = dim.value_or(c.dim);
    c.n_layers = layers.value_or(c.n_layers);
    c.n_heads = heads.value_or(c.n_heads);
    c.n_kv_heads = kv_heads.value_or(c.n_kv_heads);
    c.hidden_dim = hidden.value_or(c.hidden_dim);
    c.window = window.value_or(c.window);
    return c;
  }

  // Settings that define the run: a resumed run must use the same ones.
  nlohmann::json settings() const {
    return {{"batch_size", batch}, {"seq_len", seq_len}, {"accum", accum}, {"max_steps", max_steps},
            {"warmup", warmup}, {"lr", lr}, {"min_lr", min_lr}, {"seed", seed}, {"val_every", val_every},
            {"dtype", dtype}, {"data", data_path}};
  }
};

TrainOptions parse_options(const std::vector<std::string>& argv) {
  Args args(argv, kFlags, {"resume", "auto-resume", "fsdp"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  TrainOptions o;
  o.out_dir = args.get("out", "runs/default");
  o.ckpt_path = o.out_dir + "/checkpoint.safetensors";
  o.sharded_dir = o.out_dir + "/checkpoints";
  o.fsdp = args.get_switch("fsdp");
  o.resume = args.get_switch("resume");
  o.auto_resume = args.get_switch("auto-resume");
  if (o.auto_resume && o.resume) throw UsageError{"--resume and --auto-resume exclude each other"};
  o.dtype = args.get("dtype", "float32");
  if (o.dtype != "float32" && o.dtype != "bfloat16")
    throw UsageError{"--dtype must be float32 or bfloat16, got '" + o.dtype + "'"};
  o.data_path = args.get("data", data::default_corpus_path());
  o.tokenizer = args.get("tokenizer", "byte");
  o.batch = args.get_int("batch-size", 16), o.seq_len = args.get_int("seq-len", 128);
  o.accum = args.get_int("accum", 1), o.max_steps = args.get_int("max-steps", 1000);
  o.stop_at = args.get_int("stop-at", o.max_steps), o.warmup = args.get_int("warmup", 50);
  o.eval_every = args.get_int("eval-every", 100), o.eval_batches = args.get_int("eval-batches", 8);
  o.ckpt_every = args.get_int("ckpt-every", 100), o.val_every = args.get_int("val-every", 20);
  o.seed = static_cast<uint64_t>(args.get_int("seed", 1337));
  o.lr = args.get_double("lr", 2e-3), o.min_lr = args.get_double("min-lr", 2e-4);
  o.max_time = args.get_double("max-time", 0), o.clip = args.get_double("clip", 1.0);
  o.weight_decay = args.get_double("weight-decay", 0.1);
  o.loss_options = {args.get_double("label-smoothing", 0), args.get_double("z-loss", 0)};
  for (auto [name, v] : {std::pair{"batch-size", o.batch}, {"seq-len", o.seq_len}, {"accum", o.accum},
                         {"max-steps", o.max_steps}, {"eval-every", o.eval_every}, {"eval-batches", o.eval_batches},
                         {"ckpt-every", o.ckpt_every}})
    if (v <= 0) throw UsageError{std::string("--") + name + " must be positive, got " + std::to_string(v)};
  for (auto [flag, field] : {std::pair{"dim", &o.dim}, {"layers", &o.layers}, {"heads", &o.heads},
                             {"kv-heads", &o.kv_heads}, {"hidden", &o.hidden}, {"window", &o.window}})
    if (args.has(flag)) *field = args.get_int(flag, 0);
  if (!o.fsdp && args.has("comm-timeout")) throw UsageError{"--comm-timeout needs --fsdp"};
  o.comm_timeout_s = args.get_double("comm-timeout", 1800);
  o.profile_steps = args.get_int("profile", 0);
  if (o.profile_steps < 0) throw UsageError{"--profile must not be negative, got " + std::to_string(o.profile_steps)};
  if (o.comm_timeout_s <= 0) throw UsageError{"--comm-timeout must be positive, got " + args.get("comm-timeout", "")};
  return o;
}

// Where this process stands: its rank (with --fsdp, after joining the process group) and the
// checkpoint it continues from, empty for a fresh start.
struct Placement {
  int rank = 0, world_size = 1;
  std::string resume_from;
  bool resuming() const { return !resume_from.empty(); }
  bool writes_files() const { return rank == 0; }  // metrics, plot and progress: one rank writes them
};

Placement place(const TrainOptions& o) {
  // The latest complete checkpoint: --resume needs one, --auto-resume takes one if there is one.
  const std::string latest =
      o.fsdp ? latest_sharded_checkpoint(o.sharded_dir) : (std::filesystem::exists(o.ckpt_path) ? o.ckpt_path : "");
  if (o.resume)
    EMBER_CHECK(!latest.empty(), "train", "--resume: no ",
                o.fsdp ? "complete sharded checkpoint in '" + o.sharded_dir + "'"
                       : "checkpoint at '" + o.ckpt_path + "'");
  Placement p;
  if (o.resume || o.auto_resume) p.resume_from = latest;
  if (o.fsdp) {
    distributed::init_process_group(
        {.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(o.comm_timeout_s * 1000)))});
    // Every rank must resume from the same checkpoint (they read one shared directory).
    const int64_t resume_step =
        p.resuming() ? distributed::fsdp::read_sharded_checkpoint_info(p.resume_from).step : -1;
    EMBER_CHECK(train::same_on_all_ranks(resume_step), "train",
                "the ranks found different checkpoints to resume from in '", o.sharded_dir, "' (this rank: '",
                p.resume_from, "'); do they share one file system?");
    p.rank = distributed::get_rank();
    p.world_size = distributed::get_world_size();
  }
  if (o.batch % p.world_size != 0)
    throw UsageError{"--batch-size " + std::to_string(o.batch) + " does not divide by the " +
                     std::to_string(p.world_size) + " ranks"};
  return p;
}

// The corpus as token streams, with the tokenizer and model config that go with them (the
// checkpoint's on resume).
struct RunData {
  models::GPTConfig config;
  std::unique_ptr<data::Tokenizer> tokenizer;
  data::SplitStreams streams;
};

RunData load_data(const TrainOptions& o, const Placement& p) {
  const std::string text = data::read_corpus(o.data_path);
  const std::vector<std::string> documents = data::split_documents(text);
  EMBER_CHECK(documents.size() >= 2, "data", "the corpus has ", documents.size(), " document(s); need at least 2");
  RunData d;
  if (p.resuming()) {
    const RunInfo info =
        o.fsdp ? run_info_from(distributed::fsdp::read_sharded_checkpoint_info(p.resume_from).metadata, p.resume_from)
               : read_run_info(p.resume_from);
    d.config = info.config;
    EMBER_CHECK(o.model_config(d.config) == d.config, "train", "--resume: the checkpoint's model is ",
                d.config.to_json(), ", not the one the flags ask for");
    d.tokenizer = data::make_tokenizer(info.tokenizer_kind, info.tokenizer_state);
    EMBER_CHECK(nlohmann::json::parse(info.train_json) == o.settings(), "train",
                "--resume: the checkpoint was trained with different settings: ", info.train_json);
  } else {
    d.tokenizer = o.tokenizer == "char" ? data::make_tokenizer("char", text) : data::make_tokenizer(o.tokenizer, "");
    d.config = o.model_config(d.config);
    d.config.vocab_size = d.tokenizer->vocab_size();
    d.config.max_seq_len = std::max<int64_t>(o.seq_len, 256);
    d.config.validate();
  }
  EMBER_CHECK(o.seq_len <= d.config.max_seq_len, "train", "--seq-len ", o.seq_len,
              " exceeds the model's max_seq_len ", d.config.max_seq_len);
  d.streams = data::tokenize_split(documents, *d.tokenizer, o.val_every);
  return d;
}

models::GPT seeded_model(const TrainOptions& o, const models::GPTConfig& config) {
  manual_seed(o.seed);
  models::GPT model(config);
  model->set_compute_dtype(o.dtype == "bfloat16" ? kBFloat16 : kFloat32);
  return model;
}

// The model, sharded with --fsdp, and its optimizer (built after sharding, over the shards).
struct RunModel {
  models::GPT model;
  std::optional<train::ShardedTraining> sharded;
  optim::AdamW optimizer;

  RunModel(const TrainOptions& o, const models::GPTConfig& config)
      : model(seeded_model(o, config)),
        sharded(o.fsdp ? std::optional(train::shard_for_training(model, /*separate_reduce_scatter=*/true))
                       : std::nullopt),
        optimizer(train::make_optimizer(model, o.lr, o.weight_decay)) {}
};

// The training loop's state and its named steps: resume, step, evaluate, log, checkpoint.
class TrainingRun {
 public:
  TrainingRun(const TrainOptions& o, const Placement& p, const RunData& d, RunModel& m)
      : o_(o), p_(p), data_(d), m_(m),
        run_meta_(run_metadata({d.config, d.tokenizer->kind(), d.tokenizer->state(), o.settings().dump()})) {}

  int64_t step() const { return step_; }

  // Loads the checkpoint when resuming, then opens the metrics and starts the clock.
  void resume() {
    if (p_.resuming()) {
      step_ = o_.fsdp ? distributed::fsdp::load_sharded_checkpoint(p_.resume_from, *m_.model, m_.optimizer).step
                      : io::load_checkpoint(p_.resume_from, *m_.model, m_.optimizer);
      if (p_.writes_files()) std::cerr << "resuming from " << p_.resume_from << " at step " << step_ << "\n";
    }
    start_step_ = step_;
    saved_step_ = p_.resuming() ? step_ : -1;
    // The first step tunes GEMMs and fills the allocator's cache: skip it when there are more.
    const int64_t remaining = std::min(o_.stop_at, o_.max_steps) - step_;
    profile_first_ = step_ + (remaining > o_.profile_steps ? 1 : 0);
    std::filesystem::create_directories(o_.out_dir);
    const std::string metrics_path = o_.out_dir + "/metrics.jsonl";
    if (p_.resuming() && p_.writes_files()) keep_metrics_until(metrics_path, step_);
    if (p_.writes_files()) metrics_.open(metrics_path, p_.resuming() ? std::ios::app : std::ios::trunc);
    tty_ = p_.writes_files() && isatty(STDERR_FILENO);
    start_ = std::chrono::steady_clock::now();
  }

  // With --max-time: whether the time is up (on any rank, so that the ranks stop together).
  bool out_of_time() const {
    bool out = o_.max_time > 0 && elapsed() >= o_.max_time;
    if (o_.fsdp && o_.max_time > 0) out = train::mean_over_ranks(out ? 1.0 : 0.0) > 0;
    return out;
  }

  // One optimizer step at the schedule's learning rate; returns its metrics line.
  nlohmann::json train_one_step() {
    const double step_lr = train::learning_rate(step_, o_.warmup, o_.max_steps, o_.lr, o_.min_lr);
    for (auto& group : m_.optimizer.param_groups()) group.options().set_lr(step_lr);
    if (o_.profile_steps > 0 && step_ == profile_first_)
      profile_.emplace(profiler::ProfilerOptions{.record_shapes = true, .profile_memory = true});
    std::optional<profiler::Range> step_range;
    if (profile_) step_range.emplace("ProfilerStep#" + std::to_string(step_ + 1));
    reset_peak_memory_stats();
    const double waited_before = comm_wait_s();
    const auto step_start = std::chrono::steady_clock::now();
    const train::StepResult result = train::train_step(
        m_.model, m_.optimizer, o_.accum,
        [&](int64_t micro) {
          return rows_of(data::sample_batch(data_.streams.train, o_.batch, o_.seq_len, o_.seed,
                                            static_cast<uint64_t>(step_ * o_.accum + micro)));
        },
        o_.clip, o_.loss_options, m_.sharded ? &*m_.sharded : nullptr);
    const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    const double exposed_comm_s = comm_wait_s() - waited_before;
    ++step_;
    step_range.reset();
    if (profile_ && step_ == profile_first_ + o_.profile_steps) write_profile();
    tokens_done_ += tokens_per_step();
    const double secs = elapsed();
    train_curve_.push_back({step_, result.loss});
    throughput_curve_.push_back({step_, static_cast<double>(tokens_per_step()) / step_s});
    const MemoryStats memory = memory_stats();
    return {{"step", step_},
            {"loss", result.loss},
            {"lr", step_lr},
            {"grad_norm", result.grad_norm},
            {"tokens_per_s", static_cast<double>(tokens_done_) / secs},
            {"elapsed_s", secs},
            {"step_s", step_s},
            {"compute_s", step_s - exposed_comm_s},
            {"exposed_comm_s", exposed_comm_s},
            {"allocated_bytes", memory.allocated_bytes},
            {"peak_allocated_bytes", memory.peak_allocated_bytes},
            {"rss_bytes", resident_bytes()}};
  }

  bool evaluation_due() const { return step_ % o_.eval_every == 0 || step_ == o_.max_steps; }
  bool checkpoint_due() const { return step_ % o_.ckpt_every == 0; }

  // The validation loss (mean over the ranks), recorded on the curve.
  double evaluate() {
    NoGradGuard guard;
    m_.model->eval();
    double total = 0;
    for (int64_t i = 0; i < o_.eval_batches; ++i) {
      data::Batch b = rows_of(
          data::sample_batch(data_.streams.val, o_.batch, o_.seq_len, o_.seed ^ 0x5eedull, static_cast<uint64_t>(i)));
      total += m_.model.call(&models::GPTImpl::loss, b.inputs, b.targets, b.doc_ids, models::LossOptions{})
                   .item<double>();
    }
    m_.model->train();
    const double loss = total / static_cast<double>(o_.eval_batches);
    last_val_ = o_.fsdp ? train::mean_over_ranks(loss) : loss;
    val_curve_.push_back({step_, last_val_});
    return last_val_;
  }

  // Appends the step's line to metrics.jsonl and shows progress (a bar on a terminal).
  void log(const nlohmann::json& line) {
    metrics_ << line.dump() << "\n" << std::flush;
    const double secs = line["elapsed_s"], tokens_per_s = line["tokens_per_s"];
    const double eta = o_.max_time > 0 ? std::max(0.0, o_.max_time - secs)
                                       : secs / static_cast<double>(step_ - start_step_) *
                                             static_cast<double>(o_.max_steps - step_);
    if (tty_) {
      const int width = 30, filled = static_cast<int>(width * step_ / o_.max_steps);
      std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] step " << step_ << "/"
                << o_.max_steps << " loss " << line["loss"].get<double>() << " "
                << static_cast<int64_t>(tokens_per_s) << " tok/s ETA " << format_seconds(eta) << "   " << std::flush;
    } else if (p_.writes_files() && (step_ % 10 == 0 || line.contains("val_loss"))) {
      std::cerr << line.dump() << "\n";
    }
  }

  // Saves the current step (unless it is saved already: a complete checkpoint is never
  // rewritten in place) and redraws the loss plot.
  void checkpoint() {
    if (step_ != saved_step_ && o_.fsdp) {
      // A fresh directory per step; the others (older ones, and any left incomplete by a
      // killed run) go once this one is complete.
      distributed::fsdp::save_sharded_checkpoint(checkpoint_path(), *m_.model, m_.optimizer, step_, run_meta_);
      if (p_.writes_files())
        for (const auto& [other_step, directory] : sharded_checkpoint_directories(o_.sharded_dir))
          if (other_step != step_) remove_sharded_checkpoint(directory);
    } else if (step_ != saved_step_) {
      io::save_checkpoint(o_.ckpt_path, *m_.model, m_.optimizer, step_, run_meta_);
    }
    saved_step_ = step_;
    if (p_.writes_files()) write_loss_svg(o_.out_dir + "/loss.svg", train_curve_, val_curve_, throughput_curve_);
  }

  // The last validation (unless this step has one) and checkpoint, and the summary line.
  void finish() {
    if (tty_) std::cerr << "\n";
    if (profile_) write_profile();  // the run ended inside the profiled steps
    if (val_curve_.empty() || val_curve_.back().step != step_)
      metrics_ << nlohmann::json({{"step", step_}, {"val_loss", evaluate()}}).dump() << "\n";
    checkpoint();
    if (p_.writes_files())
      std::cout << "step " << step_ << " val_loss " << last_val_ << " nats/token, checkpoint " << checkpoint_path()
                << "\n";
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  int64_t tokens_per_step() const { return o_.batch * o_.seq_len * o_.accum; }

  // Seconds this process has spent blocked waiting for collectives: communication that
  // computation did not hide.
  static double comm_wait_s() {
    double ms = 0;
    for (const auto& [op, stats] : distributed::comm_wait_stats()) ms += stats.wait_ms;
    return ms / 1000;
  }

  // The resident set size, from /proc/self/statm (0 where there is none).
  static int64_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    int64_t pages = 0, resident = 0;
    if (!(statm >> pages >> resident)) return 0;
    return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  }

  // --profile: the trace of every rank, and rank 0's table of it on stdout.
  void write_profile() {
    const std::string path =
        o_.out_dir + (o_.fsdp ? "/trace_rank" + std::to_string(p_.rank) + ".json" : std::string("/trace.json"));
    profile_->export_chrome_trace(path);
    if (p_.writes_files()) {
      if (tty_) std::cerr << "\n";
      std::cout << "profile of " << step_ - profile_first_ << " step(s), trace in " << path << "\n"
                << profile_->table("self", 20) << std::flush;
    }
    profile_.reset();
  }

  std::string checkpoint_path() const {
    return o_.fsdp ? o_.sharded_dir + "/step_" + std::to_string(step_) : o_.ckpt_path;
  }

  // This rank's rows of a batch of the whole run.
  data::Batch rows_of(data::Batch b) const {
    if (p_.world_size == 1) return b;
    const int64_t rows = o_.batch / p_.world_size, first = p_.rank * rows;
    return data::Batch{b.inputs.narrow(0, first, rows), b.targets.narrow(0, first, rows),
                       b.doc_ids.defined() ? b.doc_ids.narrow(0, first, rows) : Tensor()};
  }

  // The curves of the metrics kept up to the checkpoint (see cli::keep_metrics_until).
  void keep_metrics_until(const std::string& metrics_path, int64_t last_step) {
    for (const auto& j : cli::keep_metrics_until(metrics_path, last_step)) {
      if (j.contains("loss")) train_curve_.push_back({j["step"], j["loss"]});
      if (j.contains("step_s"))
        throughput_curve_.push_back({j["step"], static_cast<double>(tokens_per_step()) / j["step_s"].get<double>()});
      if (j.contains("val_loss")) val_curve_.push_back({j["step"], j["val_loss"]});
    }
  }

  const TrainOptions& o_;
  const Placement& p_;
  const RunData& data_;
  RunModel& m_;
  const io::Metadata run_meta_;
  std::vector<MetricPoint> train_curve_, val_curve_, throughput_curve_;
  std::ofstream metrics_;
  int64_t start_step_ = 0, step_ = 0, saved_step_ = -1, tokens_done_ = 0, profile_first_ = 0;
  std::optional<profiler::Profile> profile_;
  double last_val_ = NAN;
  bool tty_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  const bool fine_tune =
      std::any_of(argv.begin(), argv.end(), [](const std::string& a) { return a == "--init" || a.starts_with("--init="); });
  if (fine_tune) return run_finetune(argv);
  if (asks_for_help(argv)) {
    std::cout << kTrainHelp;
    return 0;
  }
  const TrainOptions options = parse_options(argv);
  const Placement placement = place(options);
  const RunData run_data = load_data(options, placement);
  RunModel model(options, run_data.config);
  TrainingRun run(options, placement, run_data, model);
  run.resume();
  while (run.step() < std::min(options.stop_at, options.max_steps) && !run.out_of_time()) {
    nlohmann::json line = run.train_one_step();
    if (run.evaluation_due()) line["val_loss"] = run.evaluate();
    run.log(line);
    if (run.checkpoint_due()) run.checkpoint();
  }
  run.finish();
  if (options.fsdp) distributed::destroy_process_group();
  return 0;
}

}  // namespace ember::cli
