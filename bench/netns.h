// Network namespaces for `ember bench fsdp`'s _netem rows: ranks on one machine that talk
// as if over a network. Each rank gets a namespace whose eth0 is a port of a switch emulated
// in user space (bench/link_emulator.h): 1 Gbit/s, 1 ms from rank to rank. tc's netem would
// add the delay in the kernel, but kernels may lack it (this machine's kernel does), and one
// mechanism everywhere keeps the rows comparable between machines. Namespaces are named
// ember-bench-<pid>-..., so that a later run can remove those of a run that crashed.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "link_emulator.h"

namespace ember::bench {

// Why rank namespaces cannot be made here (not root, `ip` or /dev/net/tun missing), or "" if they can.
std::string rank_network_unavailable();

// Removes the namespaces of earlier runs whose process is gone.
void remove_stale_rank_networks();

class RankNetwork {
 public:
  // Creates the namespaces and the switch of `ranks` ranks; throws ember::Error naming
  // the command that failed (what was made so far is removed).
  explicit RankNetwork(int ranks);
  ~RankNetwork();
  RankNetwork(const RankNetwork&) = delete;
  RankNetwork& operator=(const RankNetwork&) = delete;

  // An open descriptor of rank `rank`'s namespace, for setns(2).
  int namespace_fd(int rank) const { return namespace_fds_[static_cast<size_t>(rank)]; }
  // The address rank `rank` listens on in its namespace.
  static std::string address(int rank);
  // What a link between two ranks is, for the rows' `link` field.
  std::string link() const;

 private:
  void add_namespace(const std::string& name);
  void open_rank_namespace(const std::string& name);

  std::vector<std::string> namespaces_;  // rank r's at r
  std::vector<int> namespace_fds_;
  std::unique_ptr<LinkEmulator> emulator_;
};

}  // namespace ember::bench
