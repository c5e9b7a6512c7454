// The choice of GEMM backend per product: forced, or autotuned per shape key with a table
// persisted in $XDG_CACHE_HOME/ember (Note [GEMM backends] in gemm_backend.h).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cpu/cpu_info.h"
#include "cpu/dispatch.h"
#include "cpu/gemm_backend.h"
#include "cpu/parallel.h"
#include "ember/atomic_file.h"
#include "ember/error.h"
#include "ember/parallel.h"

namespace ember::cpu {

void warn_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(message).second) std::fprintf(stderr, "ember: %s\n", message.c_str());
}

namespace {

constexpr const char* kFormat = "ember-gemm-autotune";
constexpr int kFormatVersion = 1;
// Raised whenever one of ember's own GEMM kernels, or its way of running a library's (the
// OpenBLAS backend's bf16/f16 tiles), changes speed, so that tables timed with the old code are
// not trusted (their choices were made against the old timings).
constexpr int kEmberKernelsRevision = 14;
// Candidates are timed in rounds, one run each per round, so that a burst of load on a
// shared machine hits all of them alike; each scores its fastest run. Rounds go on until
// kMinRounds have run and kMinSeconds have passed (at most kMaxRounds).
constexpr int kMinRounds = 5;
constexpr int kMaxRounds = 50;
constexpr double kMinSeconds = 0.02;
// The scratch output of a timed run holds at most this many elements (rows are capped).
constexpr int64_t kMaxScratchElements = int64_t{1} << 24;

// Sizes up to 16 are their own bucket (few-rows kernels switch there); above, the next of
// 2^p and 3 * 2^(p-1): products within a bucket are close enough in shape to share a choice.
int64_t bucket(int64_t x) {
  if (x <= 16) return x;
  int64_t power = 1;
  while (power < x) power <<= 1;
  const int64_t three_quarters = power / 4 * 3;
  return x <= three_quarters ? three_quarters : power;
}

const char* short_dtype(ScalarType dtype) {
  switch (dtype) {
    case kFloat32: return "f32";
    case kFloat64: return "f64";
    case kBFloat16: return "bf16";
    default: return "f16";
  }
}

// What a choice is made for. threads 0: any thread count (deterministic mode leaves it out,
// so every thread count makes the same choice).
struct TuneKey {
  ScalarType dtype;
  bool c_float32, trans_a, trans_b;
  int64_t m, k, n;
  int threads;
  auto tie() const { return std::tie(dtype, c_float32, trans_a, trans_b, m, k, n, threads); }
  bool operator<(const TuneKey& other) const { return tie() < other.tie(); }

  // "bf16>f32 NT 2048x192x576 t2": the table's key.
  std::string text() const {
    return std::string(short_dtype(dtype)) + (c_float32 ? ">f32" : "") + " " + (trans_a ? "T" : "N") +
           (trans_b ? "T" : "N") + " " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + " " +
           (threads == 0 ? std::string("any") : "t" + std::to_string(threads));
  }
};

TuneKey key_of(const GemmArgs& g) {
  const int threads = are_deterministic_algorithms_enabled() ? 0 : in_parallel_region() ? 1 : num_threads();
  return {g.dtype, g.c_float32, g.trans_a, g.trans_b, bucket(g.m), bucket(g.k), bucket(g.n), threads};
}

std::string lowercase_alnum(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (std::isalnum(static_cast<unsigned char>(ch))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

// What a table's choices depend on besides the CPU: each backend's version and kernel, and
// the instruction-set level ember dispatches to.
std::string library_identity() {
  std::string identity = std::string("ember-") + EMBER_VERSION_STRING + "-kernels" +
                         std::to_string(kEmberKernelsRevision) + "-" + capability_name(cpu_capability());
  for (GemmBackend backend : kGemmBackends) {
    const GemmBackendReport& report = gemm_backend_report(backend);
    if (backend != GemmBackend::Ember) identity.append("-").append(gemm_backend_name(backend)).append(report.version);
    if (backend == GemmBackend::OpenBLAS) identity.append("-").append(report.kernel);
  }
  return lowercase_alnum(identity);
}

std::string cpu_identity() {
  const CpuFeatures& cpu = cpu_features();
  std::string extensions;
  for (const std::string& name : cpu.extension_names()) extensions += name + " ";
  return cpu.model + " | " + extensions;
}

std::string default_path() {
  std::string dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) dir = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) dir = std::string(home) + "/.cache";
  else return "";
  return dir + "/ember/autotune-" + lowercase_alnum(cpu_features().model) + "-" + library_identity() + ".json";
}

nlohmann::json entry_json(const AutotuneEntry& entry) {
  nlohmann::json gflops = nlohmann::json::object();
  for (const auto& [backend, value] : entry.gflops) gflops[gemm_backend_name(backend)] = value;
  return {{"backend", gemm_backend_name(entry.backend)}, {"gflops", gflops}};
}

// Parses a table file; throws std::runtime_error saying what is wrong with it.
std::map<std::string, AutotuneEntry> parse_table(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text);
  if (!doc.is_object() || doc.value("format", "") != kFormat || doc.value("version", 0) != kFormatVersion)
    throw std::runtime_error("not an ember autotune table of version " + std::to_string(kFormatVersion));
  if (doc.value("cpu", "") != cpu_identity() || doc.value("libraries", "") != library_identity())
    throw std::runtime_error("written for another CPU or other library versions");
  std::map<std::string, AutotuneEntry> entries;
  for (const auto& [key, value] : doc.at("entries").items()) {
    AutotuneEntry entry;
    entry.key = key;
    const std::optional<GemmBackend> backend = parse_gemm_backend(value.at("backend").get<std::string>());
    if (!backend) throw std::runtime_error("entry '" + key + "' names an unknown backend");
    entry.backend = *backend;
    for (const auto& [name, gflops] : value.at("gflops").items()) {
      const std::optional<GemmBackend> timed = parse_gemm_backend(name);
      if (!timed || !gflops.is_number()) throw std::runtime_error("entry '" + key + "' has a bad gflops field");
      entry.gflops.emplace_back(*timed, gflops.get<double>());
    }
    entries.emplace(key, std::move(entry));
  }
  return entries;
}

// Holds an exclusive flock on PATH.lock for its lifetime (nothing when it cannot be taken:
// then the merge below may lose another process's entry, never corrupt the file).
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

struct Table {
  std::mutex mutex;
  bool loaded = false;
  std::string path;
  std::map<std::string, AutotuneEntry> entries;
  std::atomic<uint64_t> generation{0};  // bumped when entries may change meaning (reload)

  // Requires the mutex.
  void load() {
    if (loaded) return;
    loaded = true;
    path = default_path();
    entries.clear();
    if (path.empty()) return;
    if (::access(path.c_str(), F_OK) != 0) return;  // no table yet
    try {
      entries = parse_table(read_file(path, "gemm autotune"));
    } catch (const std::exception& e) {
      // Said at every load, not once: a table is loaded once per process (or per reload).
      std::fprintf(stderr, "ember: ignoring the GEMM autotune table %s: %s; it will be rewritten\n", path.c_str(),
                   e.what());
    }
  }

  // Adds a tuned entry and returns the one that stands for its key. Requires the mutex.
  // Processes tuning side by side (the ranks of a job, a restarted run) must agree: under a
  // lock on the file, its current entries are merged in first and an entry already there
  // wins over this process's own measurement.
  const AutotuneEntry& add(AutotuneEntry entry) {
    load();
    const std::string key = entry.key;
    if (!path.empty()) {
      try {
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        FileLock lock(path);
        if (::access(path.c_str(), F_OK) == 0) {
          try {
            for (auto& [stored_key, stored] : parse_table(read_file(path, "gemm autotune")))
              entries.insert_or_assign(stored_key, stored);
          } catch (const std::exception&) {
            // A corrupt file was reported when loaded; it is replaced below.
          }
        }
        entries.try_emplace(key, std::move(entry));
        write_file_atomically(path, document().dump(1), "gemm autotune");
      } catch (const std::exception& e) {
        warn_once("cannot write the GEMM autotune table " + path + " (" + e.what() + "); tuning results stay in memory");
      }
    }
    entries.try_emplace(key, std::move(entry));  // no-op when the key is there (entry then unused)
    return entries.at(key);
  }

 private:
  nlohmann::json document() const {
    nlohmann::json all = nlohmann::json::object();
    for (const auto& [key, entry] : entries) all[key] = entry_json(entry);
    return {{"format", kFormat},
            {"version", kFormatVersion},
            {"cpu", cpu_identity()},
            {"libraries", library_identity()},
            {"entries", all}};
  }
};

Table& table() {
  static Table instance;
  return instance;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Note [Tuning streamed products]
// A product of a few rows reads B once and is bound by memory: decoding a token streams every
// weight of the model from DRAM, where no later call finds it in cache. Timed again and again
// on one B that fits the last-level cache, such a product measures the cache instead, and
// the choice is the wrong one for decoding (a backend that wins on cached weights lost 8-15%
// of a Qwen2.5-0.5B decoding step). So B is flushed from the caches before each timed run;
// a B larger than kStreamedBytes no longer fits any cache and needs no flushing.
constexpr int64_t kStreamedRows = 16;
constexpr size_t kStreamedBytes = size_t{256} << 20;

void flush_from_caches(const void* data, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  const auto* bytes_of = static_cast<const char*>(data);
  for (size_t offset = 0; offset < bytes; offset += 64) __builtin_ia32_clflush(bytes_of + offset);
  __builtin_ia32_mfence();
#else
  (void)data;
  (void)bytes;
#endif
}

size_t b_bytes(const GemmArgs& g) {
  const int64_t rows = g.trans_b ? g.n : g.k, cols = g.trans_b ? g.k : g.n;
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<size_t>((rows - 1) * g.ldb + cols) * element_size(g.dtype);
}

// Times the candidates on the product's own operands into a scratch output. nullopt when
// none of them ran (nothing worth persisting).
std::optional<AutotuneEntry> tune(const std::string& key, const GemmArgs& g, const std::vector<GemmBackend>& candidates) {
  GemmArgs timed = g;
  timed.m = std::min(g.m, std::max<int64_t>(1, kMaxScratchElements / g.n));
  timed.beta = 0.0;
  timed.ldc = g.n;
  const size_t bytes = static_cast<size_t>(timed.m * g.n) * (g.c_float32 ? 4 : element_size(g.dtype));
  std::unique_ptr<char[]> scratch(new char[bytes]);
  timed.c = scratch.get();
  const double flops = 2.0 * static_cast<double>(timed.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  std::vector<GemmBackend> timing(candidates);
  std::vector<double> best(timing.size(), 1e30);
  auto failed = [&](size_t i, const std::exception& e) {
    warn_once(std::string("GEMM backend ") + gemm_backend_name(timing[i]) + " failed while tuning " + key + ": " +
              e.what());
    timing.erase(timing.begin() + static_cast<std::ptrdiff_t>(i));
    best.erase(best.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (size_t i = 0; i < timing.size();) {
    try {
      gemm_run(timing[i], timed);  // warm-up: primitives, packing buffers, page faults
      ++i;
    } catch (const std::exception& e) {
      failed(i, e);
    }
  }
  const size_t streamed_bytes = b_bytes(g);
  const bool flush = g.m <= kStreamedRows && streamed_bytes <= kStreamedBytes;
  const double start = seconds_now();
  for (int round = 0; round < kMaxRounds && (round < kMinRounds || seconds_now() - start < kMinSeconds); ++round) {
    for (size_t i = 0; i < timing.size();) {
      try {
        if (flush) flush_from_caches(g.b, streamed_bytes);
        const double t0 = seconds_now();
        gemm_run(timing[i], timed);
        best[i] = std::min(best[i], seconds_now() - t0);
        ++i;
      } catch (const std::exception& e) {
        failed(i, e);
      }
    }
  }
  if (timing.empty()) return std::nullopt;
  AutotuneEntry entry{key, timing.front(), {}};
  double best_gflops = 0;
  for (size_t i = 0; i < timing.size(); ++i) {
    const double gflops = flops / best[i] / 1e9;
    entry.gflops.emplace_back(timing[i], gflops);
    if (gflops > best_gflops) {
      best_gflops = gflops;
      entry.backend = timing[i];
    }
  }
  return entry;
}

// The backends of an entry from most to least preferred: its choice, then by speed.
std::vector<GemmBackend> preference(const AutotuneEntry& entry) {
  std::vector<std::pair<GemmBackend, double>> ranked = entry.gflops;
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& x, auto& y) { return x.second > y.second; });
  std::vector<GemmBackend> order = {entry.backend};
  for (const auto& [backend, gflops] : ranked)
    if (backend != entry.backend) order.push_back(backend);
  return order;
}

GemmBackend first_candidate(const std::vector<GemmBackend>& order, std::span<const GemmBackend> candidates) {
  // An entry whose choice cannot run this product (its strides, say) still ranks the others.
  for (GemmBackend backend : order)
    if (std::find(candidates.begin(), candidates.end(), backend) != candidates.end()) return backend;
  return candidates.front();
}

GemmBackend auto_backend(const GemmArgs& args) {
  // A product whose key this thread resolved before allocates nothing (libember_rt's runs).
  GemmBackend fitting[std::size(kGemmBackends)];
  size_t count = 0;
  for (GemmBackend backend : kGemmBackends)
    if (gemm_backend_report(backend).fits_cpu && gemm_can_run(backend, args)) fitting[count++] = backend;
  const std::span<const GemmBackend> candidates(fitting, count);
  if (candidates.empty()) {
    const GemmBackendReport& report = gemm_backend_report(GemmBackend::OpenBLAS);
    warn_once(std::string("no GEMM backend with a kernel that fits this CPU runs ") + dtype_name(args.dtype) +
              " products; they run on OpenBLAS's " + report.kernel + " kernel (" + report.why + ")");
    return GemmBackend::OpenBLAS;
  }
  if (candidates.size() == 1) return candidates.front();
  const TuneKey key = key_of(args);
  // Each thread remembers the keys it has resolved: most products skip the table's lock.
  struct Resolved {
    uint64_t generation = ~uint64_t{0};
    std::map<TuneKey, std::vector<GemmBackend>> order;
  };
  thread_local Resolved resolved;
  Table& t = table();
  const uint64_t generation = t.generation.load(std::memory_order_acquire);
  if (resolved.generation != generation) {
    resolved.order.clear();
    resolved.generation = generation;
  }
  if (auto it = resolved.order.find(key); it != resolved.order.end()) return first_candidate(it->second, candidates);
  {
    std::lock_guard lock(t.mutex);
    t.load();
    if (auto it = t.entries.find(key.text()); it != t.entries.end()) {
      const std::vector<GemmBackend>& order = resolved.order[key] = preference(it->second);
      return first_candidate(order, candidates);
    }
  }
  // Tuned without the lock: tuning runs products on the pool, whose threads may be waiting
  // for this lock in another caller's region. Two threads may tune one key; the first kept wins.
  std::optional<AutotuneEntry> entry = tune(key.text(), args, {candidates.begin(), candidates.end()});
  if (!entry) return candidates.front();
  std::lock_guard lock(t.mutex);
  const AutotuneEntry& kept = t.add(std::move(*entry));
  if (resolved.generation == t.generation.load(std::memory_order_relaxed)) resolved.order[key] = preference(kept);
  return first_candidate(preference(kept), candidates);
}

}  // namespace

GemmBackend choose_gemm_backend(const GemmArgs& args) {
  if (const std::optional<GemmBackend> forced = forced_gemm_backend(); forced && gemm_can_run(*forced, args)) {
    // The message is built once per backend: products after the first allocate nothing (a
    // warm program run must not: tests/runtime/standalone/no_allocation.cpp).
    static std::atomic<bool> warned[std::size(kGemmBackends)];
    const GemmBackendReport& report = gemm_backend_report(*forced);
    if (!report.fits_cpu && !warned[static_cast<size_t>(*forced)].exchange(true))
      warn_once(std::string("EMBER_GEMM_BACKEND=") + gemm_backend_name(*forced) + " runs a kernel that does not fit " +
                "this CPU: " + report.why);
    return *forced;
  }
  return auto_backend(args);
}

std::string autotune_table_path() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.load();
  return t.path;
}

std::vector<AutotuneEntry> autotune_entries() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.load();
  std::vector<AutotuneEntry> entries;
  for (const auto& [key, entry] : t.entries) entries.push_back(entry);
  return entries;
}

void reload_autotune_table() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.loaded = false;
  t.entries.clear();
  ++t.generation;
}

}  // namespace ember::cpu
