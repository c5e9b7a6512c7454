// The public face of cpu_info.h, gemm_backend.h and the convolution algorithm (ember/backends.h).
#include "ember/backends.h"

#include <memory>

#include "cpu/conv_onednn.h"
#include "cpu/cpu_info.h"
#include "cpu/dispatch.h"
#include "cpu/gemm_backend.h"
#include "ember/error.h"

namespace ember::backends {
namespace {

cpu::GemmBackend parse_or_throw(const std::string& name) {
  const std::optional<cpu::GemmBackend> backend = cpu::parse_gemm_backend(name);
  EMBER_CHECK(backend.has_value(), "gemm_backend", "unknown backend '", name, "': expected openblas, onednn or ember");
  return *backend;
}

// A contiguous product of this shape on zero-filled scratch operands (C not read: beta 0).
struct ScratchProduct {
  std::unique_ptr<char[]> a, b, c;
  cpu::GemmArgs args;
  ScratchProduct(ScalarType dtype, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b) {
    EMBER_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kBFloat16 || dtype == kFloat16, "gemm_backend",
                "unsupported dtype ", dtype);
    EMBER_CHECK(m > 0 && k > 0 && n > 0, "gemm_backend", "sizes must be positive, got m=", m, " k=", k, " n=", n);
    // Scratch operands of this size are allocated: keep them to what a product may hold.
    constexpr int64_t kMaxElements = int64_t{1} << 31;
    EMBER_CHECK(m <= kMaxElements / k && k <= kMaxElements / n && m <= kMaxElements / n, "gemm_backend",
                "sizes m=", m, " k=", k, " n=", n, " need operands of more than 2^31 elements");
    const size_t item = element_size(dtype);
    a.reset(new char[m * k * item]());
    b.reset(new char[k * n * item]());
    c.reset(new char[m * n * item]);
    args = {dtype, trans_a, trans_b, m, n, k, 1.0, a.get(), trans_a ? m : k, b.get(), trans_b ? k : n, 0.0,
            c.get(), n};
  }
};

}  // namespace

CpuInfo cpu_info() {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  return {f.vendor,          f.model,     f.extension_names(), cpu::isa_name(f.best_vector_isa()),
          cpu::capability_name(cpu::cpu_capability()), f.logical_cpus, f.l1d_bytes, f.l2_bytes, f.l3_bytes};
}

std::vector<GemmBackendInfo> gemm_backends() {
  std::vector<GemmBackendInfo> out;
  for (cpu::GemmBackend backend : cpu::kGemmBackends) {
    const cpu::GemmBackendReport& r = cpu::gemm_backend_report(backend);
    out.push_back({cpu::gemm_backend_name(backend), r.available, r.version, r.kernel, r.kernel_isa, r.fits_cpu, r.why,
                   r.dtypes});
  }
  return out;
}

std::string gemm_backend() {
  const std::optional<cpu::GemmBackend> forced = cpu::forced_gemm_backend();
  return forced ? cpu::gemm_backend_name(*forced) : "auto";
}

void set_gemm_backend(const std::string& name) {
  cpu::set_forced_gemm_backend(name == "auto" ? std::nullopt : std::optional(parse_or_throw(name)));
}

bool gemm_backend_can_run(const std::string& backend, ScalarType dtype, int64_t m, int64_t k, int64_t n, bool trans_a,
                          bool trans_b) {
  const cpu::GemmBackend id = parse_or_throw(backend);
  EMBER_CHECK(m > 0 && k > 0 && n > 0, "gemm_backend", "sizes must be positive, got m=", m, " k=", k, " n=", n);
  const cpu::GemmArgs args{dtype, trans_a, trans_b, m, n, k, 1.0, nullptr, trans_a ? m : k, nullptr,
                           trans_b ? k : n, 0.0, nullptr, n};
  bool dtype_fits = false;
  for (ScalarType fitting : cpu::gemm_backend_report(id).dtypes) dtype_fits |= fitting == dtype;
  return dtype_fits && cpu::gemm_can_run(id, args);
}

std::string gemm_backend_for(ScalarType dtype, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b) {
  ScratchProduct product(dtype, m, k, n, trans_a, trans_b);
  return cpu::gemm_backend_name(cpu::choose_gemm_backend(product.args));
}

std::string autotune_table_path() { return cpu::autotune_table_path(); }

std::vector<AutotuneEntry> autotune_table() {
  std::vector<AutotuneEntry> out;
  for (const cpu::AutotuneEntry& entry : cpu::autotune_entries()) {
    AutotuneEntry e{entry.key, cpu::gemm_backend_name(entry.backend), {}};
    for (const auto& [backend, gflops] : entry.gflops) e.gflops.emplace_back(cpu::gemm_backend_name(backend), gflops);
    out.push_back(std::move(e));
  }
  return out;
}

std::string conv_algorithm() { return cpu::conv_winograd() ? "winograd" : "direct"; }

void set_conv_algorithm(const std::string& name) {
  EMBER_CHECK(name == "direct" || name == "winograd", "conv_algorithm", "unknown algorithm '", name,
              "': expected direct or winograd");
  cpu::set_conv_winograd(name == "winograd");
}

}  // namespace ember::backends
