#include "args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ember::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
           const std::set<std::string>& switches) {
  std::map<std::string, std::string> from_command_line;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0) throw UsageError{"unexpected argument '" + a + "'"};
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (switches.count(name)) {
      value = "1";
    } else {
      if (i + 1 >= argv.size()) throw UsageError{"--" + name + " needs a value"};
      value = argv[++i];
    }
    if (!flags.count(name) && !switches.count(name) && name != "config") throw UsageError{"unknown flag --" + name};
    from_command_line[name] = value;
  }
  if (auto it = from_command_line.find("config"); it != from_command_line.end()) {
    std::ifstream in(it->second);
    if (!in) throw UsageError{"cannot open config file '" + it->second + "'"};
    nlohmann::json j;
    try {
      in >> j;
    } catch (const nlohmann::json::exception& e) {
      throw UsageError{"config file '" + it->second + "' is not valid JSON: " + e.what()};
    }
    if (!j.is_object()) throw UsageError{"config file '" + it->second + "' must hold a JSON object"};
    for (auto& [key, value] : j.items()) {
      if (!flags.count(key) && !switches.count(key)) throw UsageError{"unknown key '" + key + "' in config file"};
      if (switches.count(key)) {
        if (value.is_boolean() && value.get<bool>()) values_[key] = "1";
        continue;
      }
      values_[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  for (auto& [k, v] : from_command_line)
    if (k != "config") values_[k] = v;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError{"--" + name + " expects an integer, got '" + it->second + "'"};
  return v;
}

double Args::get_double(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v))
    throw UsageError{"--" + name + " expects a number, got '" + it->second + "'"};
  return v;
}

bool asks_for_help(const std::vector<std::string>& argv) {
  for (const auto& a : argv)
    if (a == "--help" || a == "-h") return true;
  return false;
}

ScalarType parse_dtype(const Args& args) {
  const std::string name = args.get("dtype", "float32");
  if (name == "float32") return kFloat32;
  if (name == "bfloat16") return kBFloat16;
  throw UsageError{"--dtype must be float32 or bfloat16, got '" + name + "'"};
}

std::string parse_quantize(const Args& args) {
  const std::string type = args.get("quantize", "");
  if (!type.empty() && type != "int8" && type != "int4")
    throw UsageError{"--quantize must be int8 or int4, got '" + type + "'"};
  return type;
}

}  // namespace ember::cli
