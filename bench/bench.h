// The benchmark suites behind `ember bench SUITE [--quick] [--json]`.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::bench {

struct Options {
  bool quick = false;
  bool json = false;
  // --only TEXT: suites that honour it run only the rows whose names contain TEXT (empty: all).
  std::string only;
};

// A suite returns its result rows; the driver wraps them as
// {"suite": ..., "machine": {...}, "results": rows}.
using Suite = std::function<nlohmann::json(const Options&)>;

// The suites by name, and the names some had before (old name -> suite), which `ember bench`
// still accepts.
std::map<std::string, Suite>& registry();
std::map<std::string, std::string>& aliases();

struct Register {
  Register(const std::string& name, Suite suite, const std::vector<std::string>& old_names = {}) {
    registry()[name] = std::move(suite);
    for (const std::string& old_name : old_names) aliases()[old_name] = name;
  }
};

// The upper median of `values` (always one of them; 0 when there are none): robust to the odd
// slow run on a shared machine.
double median(std::vector<double> values);
// Median wall time in milliseconds of `fn` over `reps` runs after one warm-up run.
double time_ms(const std::function<void()>& fn, int reps);
// Median wall and process CPU milliseconds of fn over reps runs (after one warm-up). On a
// loaded machine wall time swings with the scheduler while CPU time at one thread does not.
struct StepTimes {
  double wall_ms, cpu_ms;
};
StepTimes time_step(const std::function<void()>& fn, int reps);

// Median milliseconds of the raw BLAS sgemm C[m,n] = A[m,k] B[k,n] on OpenBLAS's own threads
// (as many as the ember pool): the reference ember's products are compared with. Returns 300 ms
// after the last, once OpenBLAS's threads have stopped spinning (at their default timeout).
double blas_sgemm_ms(int64_t m, int64_t k, int64_t n, int reps);

// The Python that has PyTorch (EMBER_TORCH_PYTHON, else python3), or "" when there is none:
// then a suite leaves out its torch columns.
std::string torch_python();

// The Python that has llama-cpp-python and gguf (EMBER_LLAMACPP_PYTHON, else torch_python()), or
// "" when there is none: then a suite leaves out its llama.cpp columns.
std::string llamacpp_python();

// Runs bench/peers/SCRIPT with `arguments` and --threads (the pool's size) under `python` and
// returns the JSON rows it printed, one per line; lines that are not JSON go to note().
std::vector<nlohmann::json> run_peer(const std::string& python, const std::string& script,
                                     const std::string& arguments);

// Prints a progress line on stderr (the JSON on stdout stays clean).
void note(const std::string& line);

}  // namespace ember::bench
