// The GEMM backends behind cpu::gemm (OpenBLAS, oneDNN, ember's own kernels), what each
// runs on this CPU, and the per-shape choice between them (Note [GEMM backends]).
//
// Note [GEMM backends]
// Every product goes through cpu::gemm, which validates it and asks choose_gemm_backend
// which backend runs it: the one EMBER_GEMM_BACKEND (or set_gemm_backend) forces, else the
// autotuned one. Autotuning times every eligible backend on the first product of a key
// (dtype, transposes, bucketed M/K/N, threads) on the caller's own operands into a scratch
// output, keeps the fastest, and persists the table (cpu/gemm_autotune.cpp). Processes share
// the table: an entry another process stored first wins over a fresh measurement (merged
// under a file lock), so the ranks of a job and a resumed run make the same choices. A
// backend whose kernel does not fit the CPU (OpenBLAS's generic "Prescott" kernel on an
// AVX-512 CPU, a oneDNN reference implementation) is never eligible for auto, and forcing
// one says so on stderr once. Every backend runs a product as tiles on ember's pool with one
// library thread per tile (Note [GEMM tiles]); under use_deterministic_algorithms(true) the
// tiles depend on the shape alone and the key leaves the thread count out, so every thread
// count makes the same choice and gets the same results (the same table; a fresh table may
// choose differently).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/function_ref.h"
#include "cpu/gemm.h"
#include "ember/dtype.h"

namespace ember::cpu {

enum class GemmBackend { OpenBLAS = 0, OneDNN = 1, Ember = 2 };
inline constexpr GemmBackend kGemmBackends[] = {GemmBackend::OpenBLAS, GemmBackend::OneDNN, GemmBackend::Ember};

const char* gemm_backend_name(GemmBackend backend);
std::optional<GemmBackend> parse_gemm_backend(std::string_view name);

// One validated product: m, n, k > 0, alpha != 0; C = alpha * op(A) op(B) + beta * C.
// C is float32 when c_float32 (A and B bf16/f16: gemm_float32_out), else in dtype.
struct GemmArgs {
  ScalarType dtype;
  bool trans_a, trans_b;
  int64_t m, n, k;
  double alpha;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  double beta;
  void* c;
  int64_t ldc;
  bool c_float32 = false;
};

// A tile of C: rows [i0, i0 + rows), columns [j0, j0 + cols).
struct GemmTile {
  int64_t i0, j0, rows, cols;
};

// Calls fn for every tile of an m x n product on the pool; tiles depend on (m, n, k) and, out
// of deterministic mode, the pool's size (Note [GEMM tiles] in gemm.cpp).
void for_each_gemm_tile(int64_t m, int64_t n, int64_t k, FunctionRef<void(const GemmTile&)> fn);

// The rows and columns of those tiles (the last ones in a row or column may be smaller).
struct GemmTileShape {
  int64_t rows, cols;
};
GemmTileShape gemm_tile_shape(int64_t m, int64_t n, int64_t k);

// What a backend runs here, for `ember info` and the choice.
struct GemmBackendReport {
  GemmBackend backend;
  bool available = false;   // usable for at least one dtype
  std::string version;      // "0.3.21"
  std::string kernel;       // OpenBLAS core name, oneDNN implementation ("brg:avx512_core")
  std::string kernel_isa;   // the instruction set that kernel uses
  bool fits_cpu = false;    // the kernel uses what the CPU has (no generic fallback)
  std::string why;          // one line: why it fits or not
  std::vector<ScalarType> dtypes;  // what it runs (oneDNN: only dtypes with a non-reference kernel)
};

// The backends. can_run: the backend takes this product (dtype, strides, sizes); whether its
// kernel fits the CPU is in its report. run: requires can_run. OpenBLAS runs everything (its
// blocked path takes every stride and dtype): the backend of last resort.
bool openblas_can_run(const GemmArgs& args);
void openblas_run(const GemmArgs& args);
// Products sharing A (gemm_group_nt) in bf16/f16 with k in one span, cut alike: args is the
// group's largest member; run: A widened once a band for all (Note [Grouped low-precision tiles]).
bool openblas_group_can_run(const GemmArgs& args, std::span<const GemmGroupMember> members);
void openblas_group_run(const GemmArgs& args, std::span<const GemmGroupMember> members);
GemmBackendReport openblas_report();

bool onednn_can_run(const GemmArgs& args);
void onednn_run(const GemmArgs& args);
GemmBackendReport onednn_report();

bool ember_gemm_can_run(const GemmArgs& args);
void ember_gemm_run(const GemmArgs& args);
// Products sharing A (gemm_group_nt): args is the group's largest member; run: one job.
bool ember_gemm_group_can_run(const GemmArgs& args);
void ember_gemm_group_run(const GemmArgs& args, std::span<const GemmGroupMember> members);
GemmBackendReport ember_gemm_report();

bool gemm_can_run(GemmBackend backend, const GemmArgs& args);
void gemm_run(GemmBackend backend, const GemmArgs& args);
const GemmBackendReport& gemm_backend_report(GemmBackend backend);  // computed once

// Prints "ember: MESSAGE" on stderr, once per distinct message in a process.
void warn_once(const std::string& message);

// The forced backend: EMBER_GEMM_BACKEND=auto|openblas|onednn|ember until set_gemm_backend
// is called; nullopt means auto.
std::optional<GemmBackend> forced_gemm_backend();
void set_forced_gemm_backend(std::optional<GemmBackend> backend);

// The backend for this product: the forced one if it can run it, else the tuned one.
GemmBackend choose_gemm_backend(const GemmArgs& args);

// The autotune table: where it lives and what it holds ("bf16 NT 2048x192x576 t2" -> backend,
// with the GFLOP/s each candidate measured).
struct AutotuneEntry {
  std::string key;
  GemmBackend backend;
  std::vector<std::pair<GemmBackend, double>> gflops;
};
std::string autotune_table_path();
std::vector<AutotuneEntry> autotune_entries();
// Forgets the in-memory table and reads the file again on the next product (tests).
void reload_autotune_table();

}  // namespace ember::cpu
