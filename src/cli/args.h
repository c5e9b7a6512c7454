// Flag parsing for the ember subcommands: --name value pairs, boolean switches, and a
// --config FILE.json whose keys are flag names (flags on the command line win).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember/dtype.h"

namespace ember::cli {

// Thrown for a bad command line; main prints "ember CMD: message" and exits 2.
struct UsageError {
  std::string message;
};

// Whether the command line asks for the subcommand's help (--help or -h anywhere).
bool asks_for_help(const std::vector<std::string>& argv);

class Args {
 public:
  // `switches` take no value. Unknown flags are errors.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& flags, const std::set<std::string>& switches);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  bool get_switch(const std::string& name) const { return values_.count(name) > 0; }

 private:
  std::map<std::string, std::string> values_;
};

// --dtype: float32 (the default) or bfloat16, the compute dtypes of pretrained models.
ScalarType parse_dtype(const Args& args);
// --quantize: "" (absent), "int8" or "int4"; anything else is a UsageError.
std::string parse_quantize(const Args& args);

}  // namespace ember::cli
