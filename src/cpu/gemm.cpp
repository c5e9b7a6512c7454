// cpu::gemm's front end: argument checks, the tile grid every backend runs on, and the
// dispatch to the backend chosen for each product (Note [GEMM backends]).
#include "cpu/gemm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <type_traits>

#include "cpu/gemm_backend.h"
#include "cpu/parallel.h"
#include "ember/error.h"
#include "ember/parallel.h"
#include "ember/profiler.h"

namespace ember::cpu {
namespace {

// Batches of products up to this size run in parallel over the batch, in chunks of about
// kBatchChunkWork multiply-adds; larger products run one by one on all threads (measured).
constexpr double kBatchParallelWork = 1 << 22;
constexpr double kBatchChunkWork = 1 << 18;

// Note [GEMM tiles]
// Backends run single-threaded inside; ember's pool runs a product as tiles of C, each one
// backend call. Two reasons: OpenBLAS's and oneDNN's (OpenMP) own threads spin for a while
// after every threaded call and fought the pool for the cores (a quarter of a 2-core
// training step went to that spinning, perf). Under use_deterministic_algorithms(true) the
// tiles depend on the shape alone (enough of them for a large pool), so products are bitwise
// identical for any thread count. Otherwise a product that would make more tiles than the pool
// has threads runs as one tile per thread (one, from inside a parallel region): each tile packs
// its rows of A and columns of B again, and on 2 cores the shape-only grid's 6-8 tiles of the
// GPT's products cost the float32 training step 3% (7% under EMBER_CPU_CAPABILITY=avx2).
// The backends sum each element of C the same way in any tile (ember's kernels by design; the
// Gemm tests check all three at 1, 2 and 3 threads), so results still match across thread
// counts for a given backend, but only deterministic mode promises it, as only it fixes the
// backend choice (Note [GEMM backends]).
constexpr int64_t kTileAlign = 16;
constexpr int64_t kMinTileExtent = 64;
constexpr double kMinTileWork = 1 << 25;  // multiply-adds: below this a tile costs more than it gains
// Products of at least this many multiply-adds (~0.15 ms on one core) still run as two tiles:
// on two cores one tile leaves the other idle (the training step's 2048x64x192 products).
constexpr double kMinSplitWork = 1 << 22;
constexpr int64_t kMaxTiles = 32;

// C = beta * C (zeros when beta == 0, without reading C), in the accumulation type.
template <typename T>
void scale_c(int64_t m, int64_t n, double beta, void* c, int64_t ldc) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  if (beta == 1.0) return;
  for (int64_t i = 0; i < m; ++i) {
    T* row = static_cast<T*>(c) + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      row[j] = beta == 0.0 ? T(Acc(0)) : T(static_cast<Acc>(beta) * static_cast<Acc>(row[j]));
  }
}

void check_args(const char* op, ScalarType dtype, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                int64_t ldc) {
  EMBER_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kBFloat16 || dtype == kFloat16, op,
              "unsupported dtype ", dtype);
  EMBER_CHECK(m >= 0 && n >= 0 && k >= 0, op, "negative size m=", m, " n=", n, " k=", k);
  EMBER_CHECK(lda >= 0 && ldb >= 0 && ldc >= 0, op, "negative leading dimension lda=", lda, " ldb=", ldb, " ldc=", ldc);
  EMBER_CHECK(m <= 1 || ldc >= n, op, "rows of C overlap: ldc=", ldc, " < n=", n);
}

}  // namespace

namespace {

// `extent` rounded up to whole kTileAlign.
int64_t tile_aligned(int64_t extent) { return (extent + kTileAlign - 1) / kTileAlign * kTileAlign; }

// The shape-only grid: halve the longer side until there are `wanted` tiles. Each tile
// repacks its rows of A and columns of B, so tiles are kept near square.
GemmTileShape halved_tiles(int64_t m, int64_t n, int64_t wanted) {
  int64_t tile_m = m, tile_n = n;
  while (num_chunks(0, m, tile_m) * num_chunks(0, n, tile_n) < wanted) {
    int64_t& longer = tile_m >= tile_n ? tile_m : tile_n;
    const int64_t next = tile_aligned(longer / 2);
    if (next < kMinTileExtent || next >= longer) break;
    longer = next;
  }
  return {tile_m, tile_n};
}

// The grid for a pool of `count` threads: `count` tiles, the rows cut into p parts and the
// columns into count / p, with p giving the squarest tiles. Nothing where no such cut keeps
// tiles of kMinTileExtent.
std::optional<GemmTileShape> pool_tiles(int64_t m, int64_t n, int64_t count) {
  auto extent = [](int64_t size, int64_t parts) { return parts == 1 ? size : tile_aligned((size + parts - 1) / parts); };
  std::optional<GemmTileShape> best;
  double best_skew = 0;
  for (int64_t row_parts = 1; row_parts <= count; ++row_parts) {
    if (count % row_parts != 0) continue;
    const int64_t tile_m = extent(m, row_parts), tile_n = extent(n, count / row_parts);
    if (num_chunks(0, m, tile_m) * num_chunks(0, n, tile_n) != count) continue;
    if ((tile_m < m && tile_m < kMinTileExtent) || (tile_n < n && tile_n < kMinTileExtent)) continue;
    const double skew = static_cast<double>(std::max(tile_m, tile_n)) / static_cast<double>(std::min(tile_m, tile_n));
    if (!best || skew <= best_skew) best = GemmTileShape{tile_m, tile_n}, best_skew = skew;  // ties: cut the rows
  }
  return best;
}

}  // namespace

GemmTileShape gemm_tile_shape(int64_t m, int64_t n, int64_t k) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t wanted =
      work < kMinSplitWork ? 1 : std::clamp<int64_t>(static_cast<int64_t>(work / kMinTileWork), 2, kMaxTiles);
  if (!are_deterministic_algorithms_enabled()) {
    const int64_t threads = in_parallel_region() ? 1 : num_threads();
    if (threads < wanted)
      if (const std::optional<GemmTileShape> tiles = pool_tiles(m, n, threads)) return *tiles;
  }
  return halved_tiles(m, n, wanted);
}

void for_each_gemm_tile(int64_t m, int64_t n, int64_t k, FunctionRef<void(const GemmTile&)> fn) {
  const auto [tile_m, tile_n] = gemm_tile_shape(m, n, k);
  const int64_t tiles_n = num_chunks(0, n, tile_n);
  parallel_for(0, num_chunks(0, m, tile_m) * tiles_n, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t i0 = t / tiles_n * tile_m, j0 = t % tiles_n * tile_n;
      fn(GemmTile{i0, j0, std::min(tile_m, m - i0), std::min(tile_n, n - j0)});
    }
  });
}

const char* gemm_backend_name(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::OpenBLAS: return "openblas";
    case GemmBackend::OneDNN: return "onednn";
    default: return "ember";
  }
}

std::optional<GemmBackend> parse_gemm_backend(std::string_view name) {
  for (GemmBackend backend : kGemmBackends)
    if (name == gemm_backend_name(backend)) return backend;
  return std::nullopt;
}

bool gemm_can_run(GemmBackend backend, const GemmArgs& args) {
  switch (backend) {
    case GemmBackend::OpenBLAS: return openblas_can_run(args);
    case GemmBackend::OneDNN: return onednn_can_run(args);
    default: return ember_gemm_can_run(args);
  }
}

void gemm_run(GemmBackend backend, const GemmArgs& args) {
  switch (backend) {
    case GemmBackend::OpenBLAS: return openblas_run(args);
    case GemmBackend::OneDNN: return onednn_run(args);
    default: return ember_gemm_run(args);
  }
}

namespace {

#ifndef EMBER_RT_CPU
// Fills a recording product's event: backend, FLOPs of m x columns x k, and its shapes as
// `shapes()` spells them where the profile records shapes.
template <typename Shapes>
void describe_product(profiler::RecordFunction& record, GemmBackend backend, ScalarType dtype, int64_t m,
                      int64_t columns, int64_t k, const Shapes& shapes) {
  if (!record.active()) return;
  profiler::Event& e = *record.event();
  e.backend = gemm_backend_name(backend);
  e.flops = 2.0 * static_cast<double>(m) * static_cast<double>(columns) * static_cast<double>(k);
  if (record.record_shapes()) {
    e.input_shapes = shapes();
    e.input_dtypes = dtype_name(dtype);
  }
}
#endif

// One product on the profiler's timeline: its backend, shape ("[m, k] x [k, n]") and FLOPs.
// The event covers the choice too: a product's first run may autotune.
void run_recorded(const GemmArgs& args) {
#ifdef EMBER_RT_CPU
  // ember-rt's build (cmake/runtime.cmake): one backend, so no autotune table, no oneDNN and no
  // profiler are linked; eager under EMBER_GEMM_BACKEND=openblas runs the same tiles.
  openblas_run(args);
#else
  profiler::RecordFunction record("gemm", profiler::Category::Gemm);
  const GemmBackend backend = choose_gemm_backend(args);
  describe_product(record, backend, args.dtype, args.m, args.n, args.k, [&] {
    return "[" + std::to_string(args.m) + ", " + std::to_string(args.k) + "] x [" + std::to_string(args.k) + ", " +
           std::to_string(args.n) + "]";
  });
  gemm_run(backend, args);
#endif
}

}  // namespace

const GemmBackendReport& gemm_backend_report(GemmBackend backend) {
  static const GemmBackendReport reports[] = {openblas_report(), onednn_report(), ember_gemm_report()};
  return reports[static_cast<int>(backend)];
}

namespace {

std::optional<GemmBackend> forced_from_env() {
  const char* env = std::getenv("EMBER_GEMM_BACKEND");
  if (!env || !*env || std::string_view(env) == "auto") return std::nullopt;
  const std::optional<GemmBackend> backend = parse_gemm_backend(env);
  EMBER_CHECK(backend.has_value(), "gemm", "EMBER_GEMM_BACKEND=", env, ": expected auto, openblas, onednn or ember");
  return backend;
}

struct ForcedBackend {
  std::mutex mutex;
  bool from_env = true;
  std::optional<GemmBackend> backend;
};

ForcedBackend& forced_state() {
  static ForcedBackend state;
  return state;
}

}  // namespace

std::optional<GemmBackend> forced_gemm_backend() {
  ForcedBackend& state = forced_state();
  std::lock_guard lock(state.mutex);
  if (state.from_env) {
    state.backend = forced_from_env();
    state.from_env = false;
  }
  return state.backend;
}

void set_forced_gemm_backend(std::optional<GemmBackend> backend) {
  ForcedBackend& state = forced_state();
  std::lock_guard lock(state.mutex);
  state.backend = backend;
  state.from_env = false;
}

void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc) {
  check_args("gemm", dtype, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0) {
    switch (dtype) {
      case kFloat32: return scale_c<float>(m, n, beta, c, ldc);
      case kFloat64: return scale_c<double>(m, n, beta, c, ldc);
      case kBFloat16: return scale_c<BFloat16>(m, n, beta, c, ldc);
      default: return scale_c<Half>(m, n, beta, c, ldc);
    }
  }
  run_recorded(GemmArgs{dtype, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
}

void gemm_group_nt(ScalarType dtype, int64_t m, int64_t k, const void* a, int64_t lda,
                   std::span<const GemmGroupMember> members) {
  const GemmGroupMember* largest = nullptr;
  for (const GemmGroupMember& member : members) {
    check_args("gemm_group_nt", dtype, m, member.n, k, lda, member.ldb, member.ldc);
    if (!largest || member.n > largest->n) largest = &member;
  }
  if (m == 0 || !largest || largest->n == 0) return;
#ifndef EMBER_RT_CPU
  const GemmArgs shared{dtype, false, true, m, largest->n, k, 1.0, a, lda, largest->b, largest->ldb, 0.0, largest->c,
                        largest->ldc};
  if (members.size() > 1 && k > 0) {
    const GemmBackend backend = choose_gemm_backend(shared);
    const bool on_ember = backend == GemmBackend::Ember && ember_gemm_group_can_run(shared);
    if (on_ember || (backend == GemmBackend::OpenBLAS && openblas_group_can_run(shared, members))) {
      profiler::RecordFunction record("gemm", profiler::Category::Gemm);
      int64_t columns = 0;
      for (const GemmGroupMember& member : members) columns += member.n;
      describe_product(record, backend, dtype, m, columns, k, [&] {
        return "[" + std::to_string(m) + ", " + std::to_string(k) + "] x " + std::to_string(members.size()) +
               " x [" + std::to_string(k) + ", n] (" + std::to_string(columns) + " columns)";
      });
      return on_ember ? ember_gemm_group_run(shared, members) : openblas_group_run(shared, members);
    }
  }
#endif
  for (const GemmGroupMember& member : members)
    gemm(dtype, false, true, m, member.n, k, 1.0, a, lda, member.b, member.ldb, 0.0, member.c, member.ldc);
}

void gemm_float32_out(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                      const void* a, int64_t lda, const void* b, int64_t ldb, double beta, float* c, int64_t ldc) {
  check_args("gemm_float32_out", dtype, m, n, k, lda, ldb, ldc);
  EMBER_CHECK(dtype != kFloat64, "gemm_float32_out", "float64 operands");
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0) return scale_c<float>(m, n, beta, c, ldc);
  run_recorded(GemmArgs{dtype, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype != kFloat32});
}

void gemm_batched(ScalarType dtype, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                  double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                  int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c) {
  check_args("gemm_batched", dtype, m, n, k, lda, ldb, ldc);
  EMBER_CHECK(batch >= 0, "gemm_batched", "negative batch ", batch);
  EMBER_CHECK(batch <= 1 || stride_c != 0 || m == 0 || n == 0, "gemm_batched", "all ", batch,
              " outputs alias (stride_c 0)");
  const int64_t item_bytes = static_cast<int64_t>(ember::element_size(dtype));
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      gemm(dtype, trans_a, trans_b, m, n, k, alpha, static_cast<const char*>(a) + i * stride_a * item_bytes, lda,
           static_cast<const char*>(b) + i * stride_b * item_bytes, ldb, beta,
           static_cast<char*>(c) + i * stride_c * item_bytes, ldc);
    }
  };
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kBatchChunkWork / std::max(work, 1.0)));
  if (work <= kBatchParallelWork && num_chunks(0, batch, grain) > 1) {
    parallel_for(0, batch, grain, run);
  } else {
    run(0, batch);
  }
}

}  // namespace ember::cpu
