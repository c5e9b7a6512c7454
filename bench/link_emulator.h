// A network of ranks emulated in user space (tc's netem is missing from some kernels): each
// rank's namespace has a TUN device, and one thread of the bench forwards the IPv4 packets
// between them as a switch whose ports run at a fixed rate, after a fixed one-way delay. A
// packet from rank s to rank d is serialized on s's link, travels `delay`, then is serialized
// on the switch's port towards d (store and forward), so both a sender and a receiver are
// limited to the rate. A sender's link takes a packet only when less than `host_queue` of data
// waits for it (the TUN device is not read meanwhile), so the sending host's own queueing
// stays in its kernel, where TCP small queues interleave the flows, as with a real NIC. A
// switch port whose queue would hold more than `switch_buffer` drops the packet (tail drop).
// The forwarding thread runs SCHED_FIFO where allowed, so that ranks computing on every core
// do not delay the packets.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ember::bench {

struct LinkSpec {
  double bits_per_second = 1e9;
  std::chrono::nanoseconds delay = std::chrono::milliseconds(1);
  std::chrono::nanoseconds host_queue = std::chrono::milliseconds(1);
  std::chrono::nanoseconds switch_buffer = std::chrono::milliseconds(20);
  // Packets as large as IPv4 allows: each costs the forwarder a few microseconds of CPU on
  // the ranks' cores, and at 1 Gbit/s a 64 KB packet is still 0.5 ms of wire time. (veth
  // with segmentation offload hands tc packets this large too.)
  int mtu = 65535;
};

// The switch's timing, apart from moving packets: when each packet is delivered.
class SwitchSchedule {
 public:
  SwitchSchedule(size_t ports, const LinkSpec& spec);
  // A packet of `bytes` from rank `source` to rank `destination`, put on the source's link at
  // `now_ns` (times non-decreasing): when it reaches its destination, or nullopt when the
  // switch's port towards the destination has a full buffer (it is dropped).
  std::optional<int64_t> admit(size_t source, size_t destination, size_t bytes, int64_t now_ns);
  // How long the data already on rank `source`'s link takes to leave it, from `now_ns`.
  int64_t backlog_ns(size_t source, int64_t now_ns) const;

 private:
  double ns_per_byte_;
  int64_t delay_ns_, buffer_ns_;
  // When each link is done sending what it holds: the ranks' links to the switch (up) and
  // the switch's ports towards the ranks (down).
  std::vector<int64_t> up_free_, down_free_;
};

class LinkEmulator {
 public:
  // Creates device `device` in each namespace (`namespace_fds[r]`, opened for setns) and
  // starts forwarding; the caller assigns addresses. Rank r's address must be
  // `first_address` + r (IPv4, host order). Throws ember::Error naming what failed.
  LinkEmulator(const std::vector<int>& namespace_fds, const std::string& device, uint32_t first_address,
               const LinkSpec& spec);
  ~LinkEmulator();  // stops forwarding; the devices go with their descriptors
  LinkEmulator(const LinkEmulator&) = delete;
  LinkEmulator& operator=(const LinkEmulator&) = delete;

  // "1 Gbit/s ports, 1 ms one way, ..." for the rows' `link` field; names the error if the
  // forwarding thread stopped on one.
  std::string describe() const;
  // Whether the forwarding thread got real-time priority.
  bool realtime() const { return realtime_; }

 private:
  void forward();

  std::vector<int> tun_fds_;
  uint32_t first_address_;
  LinkSpec spec_;
  int epoll_fd_ = -1, timer_fd_ = -1, stop_fd_ = -1;
  bool realtime_ = false;
  mutable std::mutex failure_mutex_;
  std::string failure_;  // why forwarding stopped, if it did
  std::thread thread_;
};

}  // namespace ember::bench
