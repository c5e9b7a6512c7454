// `ember profile TRACE.json [--sort KEY] [--limit N]`: the table of a trace that `ember train
// --profile` (or Profile::export_chrome_trace) wrote.
#include <iostream>
#include <string>
#include <vector>

#include "args.h"
#include "ember/profiler.h"

namespace ember::cli {

int run_profile(const std::vector<std::string>& argv) {
  const char* usage =
      "usage: ember profile TRACE.json [--sort self|total|calls|flops|memory] [--limit N]\n"
      "  prints the table of a trace written by `ember train --profile` (limit 0: every row)\n";
  if (asks_for_help(argv)) {
    std::cout << usage;
    return 0;
  }
  if (argv.empty() || argv[0].empty() || argv[0][0] == '-') {
    std::cerr << usage;
    return 2;
  }
  const std::string path = argv[0];
  Args args(std::vector<std::string>(argv.begin() + 1, argv.end()), {"sort", "limit"}, {});
  const profiler::Trace trace = profiler::load_chrome_trace(path);
  std::cout << profiler::table(trace, args.get("sort", "self"), static_cast<int>(args.get_int("limit", 20)));
  return 0;
}

}  // namespace ember::cli
