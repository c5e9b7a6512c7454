// The oneDNN backend: its matmul primitive on strided operands (transposes without copies),
// float32/bf16/f16 with float32 accumulation, alpha as output scale and beta as a sum
// post-op, primitives cached per thread, run as tiles on ember's pool.
//
// Note [oneDNN threads]
// Debian's oneDNN runs on OpenMP. Each call sets the calling thread's OpenMP thread count to
// 1 for its duration (omp_set_num_threads acts on the calling thread only), so oneDNN never starts
// an OpenMP team that would spin against the pool; parallelism comes from the tiles
// (Note [GEMM tiles] in gemm.cpp). The scratchpad is the caller's: one buffer per thread.
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "cpu/dispatch.h"
#include "cpu/gemm_backend.h"
#include "cpu/gemm_blocks.h"
#include "cpu/onednn.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

using dnnl::memory;

memory::data_type dnnl_type(ScalarType dtype) {
  switch (dtype) {
    case kFloat32: return memory::data_type::f32;
    case kBFloat16: return memory::data_type::bf16;
    case kFloat16: return memory::data_type::f16;
    default: return memory::data_type::undef;
  }
}

struct PrimitiveKey {
  ScalarType dtype;
  bool c_float32;
  bool trans_a, trans_b;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  // Scales compare by their bits: NaN must key its own primitive, not break the ordering.
  auto tie() const {
    return std::make_tuple(dtype, c_float32, trans_a, trans_b, m, n, k, lda, ldb, ldc, bits(alpha), bits(beta));
  }
  static uint32_t bits(float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  }
  bool operator<(const PrimitiveKey& other) const { return tie() < other.tie(); }
};

struct Primitive {
  dnnl::matmul matmul;
  memory::desc a, b, c;
  size_t scratchpad_bytes = 0;
  bool reference = false;  // oneDNN's reference implementation: correct, far from the machine
  std::string impl;
};

Primitive make_primitive(const PrimitiveKey& key) {
  const memory::data_type type = dnnl_type(key.dtype);
  Primitive p;
  p.a = memory::desc({key.m, key.k}, type, key.trans_a ? memory::dims{1, key.lda} : memory::dims{key.lda, 1});
  p.b = memory::desc({key.k, key.n}, type, key.trans_b ? memory::dims{1, key.ldb} : memory::dims{key.ldb, 1});
  p.c = memory::desc({key.m, key.n}, key.c_float32 ? memory::data_type::f32 : type, memory::dims{key.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(key.beta);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), attr, onednn_engine());
  p.impl = pd.impl_info_str();
  p.reference = p.impl.rfind("ref", 0) == 0;
  p.scratchpad_bytes = pd.scratchpad_desc().get_size();
  p.matmul = dnnl::matmul(pd);
  return p;
}

// Per-thread primitive cache; a training run has a few dozen shapes, so it stays small.
const Primitive& cached_primitive(const PrimitiveKey& key) {
  constexpr size_t kMaxCached = 512;
  thread_local std::map<PrimitiveKey, Primitive> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCached) cache.clear();
  return cache.emplace(key, make_primitive(key)).first->second;
}

// oneDNN wants ld >= cols even for one row, where the stride is unused; ld 0 broadcasts and
// overlapping rows are not matrices it takes.
bool usable_ld(int64_t rows, int64_t cols, int64_t& ld) {
  if (rows == 1) ld = std::max<int64_t>(ld, cols);
  return ld >= cols;
}

void run_one(const PrimitiveKey& key, const void* a, const void* b, void* c) {
  OneDnnSingleThreaded single_threaded;
  const Primitive& p = cached_primitive(key);
  if (p.reference)
    warn_once("oneDNN runs its reference kernel (" + p.impl + ") for a " + dtype_name(key.dtype) +
                          " product: correct, but far from this CPU's speed");
  uint8_t* scratchpad = workspace<uint8_t>(0, static_cast<int64_t>(p.scratchpad_bytes));
  memory a_mem(p.a, onednn_engine(), const_cast<void*>(a)), b_mem(p.b, onednn_engine(), const_cast<void*>(b)),
      c_mem(p.c, onednn_engine(), c);
  memory scratch_mem(memory::desc({static_cast<int64_t>(p.scratchpad_bytes)}, memory::data_type::u8, {1}), onednn_engine(),
                     scratchpad);
  p.matmul.execute(onednn_stream(), {{DNNL_ARG_SRC, a_mem},
                            {DNNL_ARG_WEIGHTS, b_mem},
                            {DNNL_ARG_DST, c_mem},
                            {DNNL_ARG_SCRATCHPAD, scratch_mem}});
  onednn_stream().wait();
}

// The implementation oneDNN picks for a square product of this dtype, "" when none.
std::string probe_impl(ScalarType dtype) {
  try {
    return make_primitive({dtype, false, false, false, 512, 512, 512, 512, 512, 512, 1.0f, 0.0f}).impl;
  } catch (const dnnl::error&) {
    return "";
  }
}

const char* dnnl_isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

struct Fit {
  bool f32 = false, bf16 = false, f16 = false;
};

const Fit& fit() {
  static const Fit value = [] {
    const GemmBackendReport& report = gemm_backend_report(GemmBackend::OneDNN);
    Fit f;
    for (ScalarType dtype : report.dtypes) {
      if (dtype == kFloat32) f.f32 = true;
      if (dtype == kBFloat16) f.bf16 = true;
      if (dtype == kFloat16) f.f16 = true;
    }
    return f;
  }();
  return value;
}

}  // namespace

// EMBER_CPU_CAPABILITY=avx2|baseline also caps oneDNN, so the other code paths can be
// tried on this machine; it must be set before oneDNN's first primitive.
// Never destroyed: pool threads' streams may outlive any static destructor order.
dnnl::engine& onednn_engine() {
  static dnnl::engine* instance = [] {
    switch (kernel_build(cpu_capability())) {
      case Capability::AVX2: dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2); break;
      case Capability::Baseline: dnnl::set_max_cpu_isa(dnnl::cpu_isa::sse41); break;
      default: break;
    }
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *instance;
}

dnnl::stream& onednn_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

bool onednn_can_run(const GemmArgs& g) {
  const Fit& f = fit();
  const bool dtype_ok = (g.dtype == kFloat32 && f.f32) || (g.dtype == kBFloat16 && f.bf16) ||
                        (g.dtype == kFloat16 && f.f16);
  int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  if (!dtype_ok || !usable_ld(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, lda) ||
      !usable_ld(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, ldb) || !usable_ld(g.m, g.n, ldc))
    return false;
  // The implementation for this layout, scales and output type (cached per thread): a
  // reference kernel is no candidate (tiles share all but their sizes).
  try {
    return !cached_primitive({g.dtype, g.c_float32, g.trans_a, g.trans_b, g.m, g.n, g.k, lda, ldb, ldc,
                              static_cast<float>(g.alpha), static_cast<float>(g.beta)})
                .reference;
  } catch (const dnnl::error&) {
    return false;
  }
}

void onednn_run(const GemmArgs& g) {
  int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  usable_ld(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, lda);
  usable_ld(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, ldb);
  usable_ld(g.m, g.n, ldc);
  const int64_t item = static_cast<int64_t>(element_size(g.dtype));
  const int64_t c_item = g.c_float32 ? 4 : item;
  const char* a = static_cast<const char*>(g.a);
  const char* b = static_cast<const char*>(g.b);
  char* c = static_cast<char*>(g.c);
  try {
    for_each_gemm_tile(g.m, g.n, g.k, [&](const GemmTile& t) {
      const PrimitiveKey key{g.dtype, g.c_float32, g.trans_a, g.trans_b, t.rows, t.cols, g.k, lda, ldb, ldc,
                             static_cast<float>(g.alpha), static_cast<float>(g.beta)};
      run_one(key, a + (g.trans_a ? t.i0 : t.i0 * lda) * item, b + (g.trans_b ? t.j0 * ldb : t.j0) * item,
              c + (t.i0 * ldc + t.j0) * c_item);
    });
  } catch (const dnnl::error& e) {
    EMBER_FAIL("gemm", "oneDNN matmul ", g.m, "x", g.k, "x", g.n, " ", g.dtype, " failed: ", e.what());
  }
}

GemmBackendReport onednn_report() {
  GemmBackendReport report;
  report.backend = GemmBackend::OneDNN;
  const dnnl_version_t* v = dnnl_version();
  report.version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  try {
    onednn_engine();
  } catch (const dnnl::error& e) {
    report.why = std::string("oneDNN did not start: ") + e.what() + "; not used";
    return report;
  }
  report.kernel_isa = dnnl_isa_name(dnnl::get_effective_cpu_isa());
  std::string kernels;
  for (ScalarType dtype : {kFloat32, kBFloat16, kFloat16}) {
    const std::string impl = probe_impl(dtype);
    const bool fits = !impl.empty() && impl.rfind("ref", 0) != 0;
    if (fits) report.dtypes.push_back(dtype);
    kernels += std::string(kernels.empty() ? "" : ", ") + dtype_name(dtype) + " " + (impl.empty() ? "none" : impl);
  }
  report.kernel = kernels;
  report.available = !report.dtypes.empty();
  report.fits_cpu = report.available;
  report.why = "effective ISA " + report.kernel_isa + "; " + kernels +
               (report.available ? "" : ": only reference kernels here; not used by auto") +
               "; dtypes whose kernel is a reference implementation are not used";
  return report;
}

}  // namespace ember::cpu
