#include "bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "ember/ember.h"

namespace ember::bench {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::map<std::string, Suite>& registry() {
  static std::map<std::string, Suite> suites;
  return suites;
}

std::map<std::string, std::string>& aliases() {
  static std::map<std::string, std::string> old_names;
  return old_names;
}

StepTimes time_step(const std::function<void()>& fn, int reps) {
  auto process_cpu_ms = [] {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
  };
  fn();
  std::vector<double> wall, cpu;
  for (int i = 0; i < std::max(reps, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_ms();
    fn();
    cpu.push_back(process_cpu_ms() - cpu_start);
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return {median(wall), median(cpu)};
}

double time_ms(const std::function<void()>& fn, int reps) { return time_step(fn, reps).wall_ms; }

constexpr int kOpenBlasSpinMs = 300;

double blas_sgemm_ms(int64_t m, int64_t k, int64_t n, int reps) {
  Tensor a = randn({m, k}), b = randn({k, n}), c = empty({m, n});
  // ember keeps OpenBLAS single-threaded (its pool runs the tiles); the reference gets them all.
  openblas_set_num_threads(get_num_threads());
  const double ms = time_ms(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0f, a.data_ptr<float>(), static_cast<int>(k), b.data_ptr<float>(),
                    static_cast<int>(n), 0.0f, c.data_ptr<float>(), static_cast<int>(n));
      },
      reps);
  openblas_set_num_threads(1);
  // OpenBLAS's worker threads spin for a while after a threaded call before they sleep (2^28
  // cycles by default, about 0.1 s), and take cores from whatever runs next: a bf16 flex
  // attention forward timed right after this ran at half its speed for about 100 ms (2 cores).
  // Waiting longer than that keeps the reference out of the next timing.
  std::this_thread::sleep_for(std::chrono::milliseconds(kOpenBlasSpinMs));
  return ms;
}

namespace {

// A shell command's standard output ("" when it cannot start).
std::string command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

}  // namespace

namespace {

// Whether `python` runs and imports `modules` (a comma-separated import list).
bool python_imports(const std::string& python, const std::string& modules) {
  const std::string probe = command_output("'" + python + "' -c 'import " + modules + "; print(1)' 2>/dev/null");
  return probe.rfind("1", 0) == 0;
}

}  // namespace

std::string torch_python() {
  const char* configured = std::getenv("EMBER_TORCH_PYTHON");
  const std::string python = configured && *configured ? configured : "python3";
  return python_imports(python, "torch") ? python : "";
}

std::string llamacpp_python() {
  const char* configured = std::getenv("EMBER_LLAMACPP_PYTHON");
  if (configured && *configured) return python_imports(configured, "llama_cpp, gguf") ? configured : "";
  const std::string python = torch_python();
  return !python.empty() && python_imports(python, "llama_cpp, gguf") ? python : "";
}

std::vector<nlohmann::json> run_peer(const std::string& python, const std::string& script,
                                     const std::string& arguments) {
  const std::string command = "'" + python + "' '" + EMBER_PEERS_DIR + "/" + script + "' --threads " +
                              std::to_string(get_num_threads()) + " " + arguments + " 2>/dev/null";
  std::vector<nlohmann::json> rows;
  std::istringstream lines(command_output(command));
  for (std::string line; std::getline(lines, line);) {
    try {
      rows.push_back(nlohmann::json::parse(line));
      note(script + ": " + line);
    } catch (const nlohmann::json::exception&) {
      note(script + " printed: " + line);
    }
  }
  return rows;
}

void note(const std::string& line) { std::cerr << line << std::endl; }

}  // namespace ember::bench
