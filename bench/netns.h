// Network namespaces for `ember bench fsdp`'s _netem rows: ranks on one machine that talk
// as if over a network. Each rank gets a namespace with one veth link to a bridge in a
// namespace of the bench's own (a switch), both ends of every link shaped with tc to
// 1 Gbit/s (tbf) and, where the kernel has sch_netem, 0.5 ms of delay each way per end, so
// 1 ms from rank to rank. Namespaces are named ember-bench-<pid>-..., so that a later run can
// remove those of a run that crashed.
#pragma once
#include <string>
#include <vector>

namespace ember::bench {

// Why rank namespaces cannot be made here (not root, `ip` or `tc` missing), or "" if they can.
std::string rank_network_unavailable();

// Removes the namespaces of earlier runs whose process is gone.
void remove_stale_rank_networks();

class RankNetwork {
 public:
  // Creates the namespaces, links and shaping of `ranks` ranks; throws ember::Error naming
  // the command that failed (what was made so far is removed).
  explicit RankNetwork(int ranks);
  ~RankNetwork();
  RankNetwork(const RankNetwork&) = delete;
  RankNetwork& operator=(const RankNetwork&) = delete;

  // An open descriptor of rank `rank`'s namespace, for setns(2).
  int namespace_fd(int rank) const { return namespace_fds_[static_cast<size_t>(rank)]; }
  // The address rank `rank` listens on in its namespace.
  static std::string address(int rank);
  // What a link between two ranks is ("1gbit tbf, 1 ms netem delay", ...).
  const std::string& link() const { return link_; }

 private:
  void add_namespace(const std::string& name);
  void open_rank_namespace(const std::string& name);
  // Shapes the egress of `device` in namespace `ns`.
  void shape(const std::string& ns, const std::string& device);

  std::vector<std::string> namespaces_;  // the bridge's first
  std::vector<int> namespace_fds_;
  bool netem_ = false;
  std::string link_;
};

}  // namespace ember::bench
