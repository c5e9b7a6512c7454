// `ember info [--json]`: what ember runs on here.
#include "info.h"

#include <iostream>

#include "args.h"
#include "ember/backends.h"
#include "ember/ember.h"

namespace ember::cli {
namespace {

std::string bytes_text(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

void print_text(const nlohmann::json& m) {
  const auto& cpu = m["cpu"];
  std::cout << "cpu:        " << cpu["model"].get<std::string>() << " (" << cpu["vendor"].get<std::string>() << ")\n"
            << "extensions: ";
  for (const auto& e : cpu["extensions"]) std::cout << e.get<std::string>() << " ";
  std::cout << "\nvector isa: " << cpu["vector_isa"].get<std::string>()
            << "; ember's kernels use " << cpu["dispatch_isa"].get<std::string>() << "\n"
            << "cpus:       " << cpu["logical_cpus"] << " (caches L1d " << bytes_text(cpu["l1d_bytes"]) << ", L2 "
            << bytes_text(cpu["l2_bytes"]) << ", L3 " << bytes_text(cpu["l3_bytes"]) << ")\n"
            << "threads:    " << m["threads"] << " in ember's pool\n\n"
            << "GEMM backends (EMBER_GEMM_BACKEND=" << m["gemm_backend"].get<std::string>() << "):\n";
  for (const auto& b : m["gemm_backends"]) {
    std::cout << "  " << b["name"].get<std::string>() << " " << b["version"].get<std::string>() << ": "
              << (b["fits_cpu"].get<bool>() ? "fits this CPU" : "DOES NOT FIT this CPU") << "\n"
              << "    kernel: " << b["kernel"].get<std::string>() << " [" << b["kernel_isa"].get<std::string>() << "]\n"
              << "    dtypes: ";
    for (const auto& d : b["dtypes"]) std::cout << d.get<std::string>() << " ";
    std::cout << "\n    why:    " << b["why"].get<std::string>() << "\n";
  }
  const auto& table = m["autotune"];
  std::cout << "\nautotune table: " << table["path"].get<std::string>() << " (" << table["entries"].size()
            << " entries)\n";
  for (const auto& e : table["entries"]) {
    std::cout << "  " << e["key"].get<std::string>() << " -> " << e["backend"].get<std::string>() << " (";
    bool first = true;
    for (const auto& [name, gflops] : e["gflops"].items()) {
      std::cout << (first ? "" : ", ") << name << " " << static_cast<int>(gflops.get<double>()) << " GFLOP/s";
      first = false;
    }
    std::cout << ")\n";
  }
}

}  // namespace

nlohmann::json machine_json() {
  const backends::CpuInfo cpu = backends::cpu_info();
  nlohmann::json gemm = nlohmann::json::array();
  for (const backends::GemmBackendInfo& b : backends::gemm_backends()) {
    nlohmann::json dtypes = nlohmann::json::array();
    for (ScalarType d : b.dtypes) dtypes.push_back(dtype_name(d));
    gemm.push_back({{"name", b.name},
                    {"available", b.available},
                    {"version", b.version},
                    {"kernel", b.kernel},
                    {"kernel_isa", b.kernel_isa},
                    {"fits_cpu", b.fits_cpu},
                    {"why", b.why},
                    {"dtypes", dtypes}});
  }
  nlohmann::json entries = nlohmann::json::array();
  for (const backends::AutotuneEntry& e : backends::autotune_table()) {
    nlohmann::json gflops = nlohmann::json::object();
    for (const auto& [name, value] : e.gflops) gflops[name] = value;
    entries.push_back({{"key", e.key}, {"backend", e.backend}, {"gflops", gflops}});
  }
  return {{"cpu",
           {{"vendor", cpu.vendor},
            {"model", cpu.model},
            {"extensions", cpu.extensions},
            {"vector_isa", cpu.vector_isa},
            {"dispatch_isa", cpu.dispatch_isa},
            {"logical_cpus", cpu.logical_cpus},
            {"l1d_bytes", cpu.l1d_bytes},
            {"l2_bytes", cpu.l2_bytes},
            {"l3_bytes", cpu.l3_bytes}}},
          {"threads", get_num_threads()},
          {"gemm_backend", backends::gemm_backend()},
          {"gemm_backends", gemm},
          {"autotune", {{"path", backends::autotune_table_path()}, {"entries", entries}}}};
}

int run_info(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"json"});
  const nlohmann::json machine = machine_json();
  if (args.get_switch("json")) std::cout << machine.dump() << std::endl;
  else print_text(machine);
  return 0;
}

}  // namespace ember::cli
