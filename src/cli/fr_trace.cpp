// `ember fr-trace DIR`: reads the flight-recorder dumps of all ranks (rank_*.json, written
// on CommError and SIGUSR1 to EMBER_FR_DUMP_DIR) and names the ranks that never reached
// the collective the others wait in.
#include <iostream>
#include <string>
#include <vector>

#include "ember/distributed/flight_recorder.h"
#include "ember/error.h"

namespace ember::cli {

int run_fr_trace(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    std::cerr << "usage: ember fr-trace DIR\n";
    return 2;
  }
  const auto report = distributed::analyze_flight_recorder_dumps(args[0]);
  std::cout << report.text;
  if (!report.culprits.empty()) {
    std::cout << "ranks at fault:";
    for (size_t i = 0; i < report.culprits.size(); ++i) std::cout << (i ? ", " : " ") << report.culprits[i];
    std::cout << "\n";
  }
  return 0;
}

}  // namespace ember::cli
