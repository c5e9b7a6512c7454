// The choice of GEMM backend per product: forced, or autotuned per shape key with a table
// persisted in $XDG_CACHE_HOME/ember (Note [GEMM backends] in gemm_backend.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cpu/cpu_info.h"
#include "cpu/dispatch.h"
#include "cpu/gemm_backend.h"
#include "cpu/parallel.h"
#include "ember/atomic_file.h"
#include "ember/error.h"
#include "ember/parallel.h"

namespace ember::cpu {
namespace {

constexpr const char* kFormat = "ember-gemm-autotune";
constexpr int kFormatVersion = 1;
// Candidates are timed in rounds, one run each per round, so that a burst of load on a
// shared machine hits all of them alike; each scores its fastest run. Rounds go on until
// kMinRounds have run and kMinSeconds have passed (at most kMaxRounds).
constexpr int kMinRounds = 5;
constexpr int kMaxRounds = 50;
constexpr double kMinSeconds = 0.02;
// The scratch output of a timed run holds at most this many elements (rows are capped).
constexpr int64_t kMaxScratchElements = int64_t{1} << 24;

// Warns on stderr once per distinct message.
void warn_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(message).second) std::fprintf(stderr, "ember: %s\n", message.c_str());
}

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

std::string key_of(const GemmArgs& g) {
  std::ostringstream key;
  key << short_dtype(g.dtype) << (g.c_float32 ? ">f32" : "") << ' ' << (g.trans_a ? 'T' : 'N') << (g.trans_b ? 'T' : 'N') << ' ' << bucket(g.m)
      << 'x' << bucket(g.k) << 'x' << bucket(g.n) << ' ';
  // Deterministic mode leaves the thread count out of the key: one choice for every count.
  if (are_deterministic_algorithms_enabled()) key << "any";
  else key << 't' << (in_parallel_region() ? 1 : num_threads());
  return key.str();
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
  std::string identity = std::string("ember-") + EMBER_VERSION_STRING + "-" + capability_name(cpu_capability());
  for (GemmBackend backend : kGemmBackends) {
    const GemmBackendReport& report = gemm_backend_report(backend);
    if (backend != GemmBackend::Ember) identity += "-" + std::string(gemm_backend_name(backend)) + report.version;
    if (backend == GemmBackend::OpenBLAS) identity += "-" + report.kernel;
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

struct Table {
  std::mutex mutex;
  bool loaded = false;
  std::string path;
  std::map<std::string, AutotuneEntry> entries;

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

  // Requires the mutex.
  void save() const {
    if (path.empty()) return;
    nlohmann::json all = nlohmann::json::object();
    for (const auto& [key, entry] : entries) all[key] = entry_json(entry);
    const nlohmann::json doc = {{"format", kFormat},
                                {"version", kFormatVersion},
                                {"cpu", cpu_identity()},
                                {"libraries", library_identity()},
                                {"entries", all}};
    try {
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      write_file_atomically(path, doc.dump(1), "gemm autotune");
    } catch (const std::exception& e) {
      warn_once("cannot write the GEMM autotune table " + path + " (" + e.what() + "); tuning results stay in memory");
    }
  }
};

Table& table() {
  static Table instance;
  return instance;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

AutotuneEntry tune(const std::string& key, const GemmArgs& g, const std::vector<GemmBackend>& candidates) {
  GemmArgs timed = g;
  timed.m = std::min(g.m, std::max<int64_t>(1, kMaxScratchElements / g.n));
  timed.beta = 0.0;
  timed.ldc = g.n;
  const size_t bytes = static_cast<size_t>(timed.m * g.n) * (g.c_float32 ? 4 : element_size(g.dtype));
  std::unique_ptr<char[]> scratch(new char[bytes]);
  timed.c = scratch.get();
  const double flops = 2.0 * static_cast<double>(timed.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  std::vector<GemmBackend> timing;
  for (GemmBackend backend : candidates) {
    try {
      gemm_run(backend, timed);  // warm-up: primitives, packing buffers, page faults
      timing.push_back(backend);
    } catch (const std::exception& e) {
      warn_once(std::string("GEMM backend ") + gemm_backend_name(backend) + " failed while tuning " + key + ": " +
                e.what());
    }
  }
  std::vector<double> best(timing.size(), 1e30);
  const double start = seconds_now();
  for (int round = 0; round < kMaxRounds && (round < kMinRounds || seconds_now() - start < kMinSeconds); ++round) {
    for (size_t i = 0; i < timing.size(); ++i) {
      const double t0 = seconds_now();
      gemm_run(timing[i], timed);
      best[i] = std::min(best[i], seconds_now() - t0);
    }
  }
  AutotuneEntry entry{key, timing.empty() ? candidates.front() : timing.front(), {}};
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

GemmBackend auto_backend(const GemmArgs& args) {
  std::vector<GemmBackend> candidates;
  for (GemmBackend backend : kGemmBackends)
    if (gemm_backend_report(backend).fits_cpu && gemm_can_run(backend, args)) candidates.push_back(backend);
  if (candidates.empty()) {
    const GemmBackendReport& report = gemm_backend_report(GemmBackend::OpenBLAS);
    warn_once(std::string("no GEMM backend with a kernel that fits this CPU runs ") + dtype_name(args.dtype) +
              " products; they run on OpenBLAS's " + report.kernel + " kernel (" + report.why + ")");
    return GemmBackend::OpenBLAS;
  }
  if (candidates.size() == 1) return candidates.front();
  const std::string key = key_of(args);
  Table& t = table();
  {
    std::lock_guard lock(t.mutex);
    t.load();
    auto it = t.entries.find(key);
    if (it != t.entries.end()) {
      // An entry whose choice cannot run this product (its strides, say) still ranks the others.
      std::vector<std::pair<GemmBackend, double>> ranked = it->second.gflops;
      ranked.insert(ranked.begin(), {it->second.backend, 0.0});
      std::stable_sort(ranked.begin() + 1, ranked.end(), [](auto& x, auto& y) { return x.second > y.second; });
      for (const auto& [backend, gflops] : ranked)
        if (std::find(candidates.begin(), candidates.end(), backend) != candidates.end()) return backend;
      return candidates.front();
    }
  }
  // Tuned without the lock: tuning runs products on the pool, whose threads may be waiting
  // for this lock in another caller's region. Two threads may tune one key; the first kept wins.
  AutotuneEntry entry = tune(key, args, candidates);
  std::lock_guard lock(t.mutex);
  auto [it, inserted] = t.entries.emplace(key, std::move(entry));
  if (inserted) t.save();
  return it->second.backend;
}

}  // namespace

GemmBackend choose_gemm_backend(const GemmArgs& args) {
  if (const std::optional<GemmBackend> forced = forced_gemm_backend(); forced && gemm_can_run(*forced, args)) {
    const GemmBackendReport& report = gemm_backend_report(*forced);
    if (!report.fits_cpu)
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
}

}  // namespace ember::cpu
