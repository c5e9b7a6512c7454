// `ember info` and the machine facts every benchmark report carries.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::cli {

// CPU, ISA extensions, cores, caches, GEMM backends with their kernels, threads and the
// autotune table in use: the "machine" object of `ember bench --json` and `ember info --json`.
nlohmann::json machine_json();

int run_info(const std::vector<std::string>& args);

}  // namespace ember::cli
