// The emulated network of `ember bench fsdp`'s _netem rows: the switch's timing against
// hand-computed delivery times, and (as root) a TCP connection across it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "ember/error.h"

#include "link_emulator.h"
#include "netns.h"

namespace ember::bench {
namespace {

constexpr int64_t kMs = 1'000'000;
// 125,000 bytes take 1 ms at 1 Gbit/s.
constexpr size_t kOneMsOfBytes = 125'000;

TEST(SwitchSchedule, PacketCrossesTwoPortsAndTheDelay) {
  SwitchSchedule schedule(2, LinkSpec{});
  // Sent by 1 ms, at the switch 1 ms later, received by 3 ms.
  EXPECT_EQ(schedule.admit(0, 1, kOneMsOfBytes, 0), 3 * kMs);
  // Queued behind the first on the sender's port: sent by 2 ms, received by 4 ms.
  EXPECT_EQ(schedule.admit(0, 1, kOneMsOfBytes, 0), 4 * kMs);
  // A packet later than the queue drains starts at once.
  EXPECT_EQ(schedule.admit(0, 1, kOneMsOfBytes, 10 * kMs), 13 * kMs);
}

TEST(SwitchSchedule, DirectionsAndSendersHaveTheirOwnPorts) {
  SwitchSchedule schedule(3, LinkSpec{});
  EXPECT_EQ(schedule.admit(0, 1, kOneMsOfBytes, 0), 3 * kMs);
  EXPECT_EQ(schedule.admit(1, 0, kOneMsOfBytes, 0), 3 * kMs);  // full duplex
  // Another sender to rank 1: its own port is free, rank 1's port is busy until 3 ms.
  EXPECT_EQ(schedule.admit(2, 1, kOneMsOfBytes, 0), 4 * kMs);
}

TEST(SwitchSchedule, BacklogIsTheSendersQueuedWireTime) {
  SwitchSchedule schedule(2, LinkSpec{});
  EXPECT_EQ(schedule.backlog_ns(0, 0), 0);
  schedule.admit(0, 1, kOneMsOfBytes, 0);
  schedule.admit(0, 1, kOneMsOfBytes, 0);
  EXPECT_EQ(schedule.backlog_ns(0, 0), 2 * kMs);
  EXPECT_EQ(schedule.backlog_ns(0, kMs / 2), 3 * kMs / 2);
  EXPECT_EQ(schedule.backlog_ns(0, 5 * kMs), 0);
  EXPECT_EQ(schedule.backlog_ns(1, 0), 0);  // the receiver's own link is idle
}

TEST(SwitchSchedule, OnlyFullSwitchBuffersDropPackets) {
  LinkSpec spec;  // 20 ms switch buffers
  // One sender cannot fill a port as fast as its own: packet k arrives at the switch just as
  // packet k-1 leaves it, so nothing waits or drops there however long the burst.
  SwitchSchedule sender(2, spec);
  for (int k = 0; k < 30; ++k) EXPECT_EQ(sender.admit(0, 1, kOneMsOfBytes, 0), (3 + k) * kMs) << k;

  // 30 senders at once to one rank: all reach the switch at 2 ms, where the k-th waits k ms.
  SwitchSchedule incast(31, spec);
  int delivered = 0;
  for (size_t source = 1; source <= 30; ++source) delivered += incast.admit(source, 0, kOneMsOfBytes, 0).has_value();
  EXPECT_EQ(delivered, 21);
}

// ---- across the emulated network, as root --------------------------------------------------

// Runs `body` on a thread in the network namespace `netns_fd`.
std::thread in_namespace(int netns_fd, std::function<void()> body) {
  return std::thread([netns_fd, body = std::move(body)] {
    if (::setns(netns_fd, CLONE_NEWNET) != 0) {
      ADD_FAILURE() << "setns: " << std::strerror(errno);
      return;
    }
    body();
  });
}

sockaddr_in address_of(int rank, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  ::inet_pton(AF_INET, RankNetwork::address(rank).c_str(), &address.sin_addr);
  return address;
}

// A broken network fails the test in seconds instead of hanging it: connect, accept, recv
// and send give up after 10 s.
void set_timeouts(int fd) {
  const timeval ten_seconds{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof(ten_seconds));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &ten_seconds, sizeof(ten_seconds));
}

bool transfer(int fd, char* data, size_t size, bool sending) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = sending ? ::send(fd, data + done, size - done, 0) : ::recv(fd, data + done, size - done, 0);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

TEST(LinkEmulator, TcpAcrossTheSwitchIsDelayedAndRateLimited) {
  if (const std::string missing = rank_network_unavailable(); !missing.empty()) GTEST_SKIP() << missing;
  remove_stale_rank_networks();
  std::unique_ptr<RankNetwork> made;
  try {
    made = std::make_unique<RankNetwork>(2);
  } catch (const Error& e) {
    // Root in a container without CAP_SYS_ADMIN / CAP_NET_ADMIN cannot make namespaces.
    const std::string what = e.what();
    if (what.find("Operation not permitted") != std::string::npos || what.find("Permission denied") != std::string::npos)
      GTEST_SKIP() << what;
    throw;
  }
  const RankNetwork& network = *made;
  constexpr uint16_t kPort = 29500;
  constexpr size_t kBytes = 4'000'000;  // 32 ms at 1 Gbit/s
  constexpr int kPings = 5;

  std::vector<char> received(kBytes);
  int listener = -1;
  std::thread server = in_namespace(network.namespace_fd(1), [&] {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    set_timeouts(listener);
    const int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address = address_of(1, kPort);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
    ASSERT_EQ(::listen(listener, 1), 0);
    const int peer = ::accept(listener, nullptr, nullptr);
    ASSERT_GE(peer, 0) << std::strerror(errno);
    set_timeouts(peer);
    ::setsockopt(peer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char byte = 0;
    for (int i = 0; i < kPings; ++i) ASSERT_TRUE(transfer(peer, &byte, 1, false) && transfer(peer, &byte, 1, true));
    EXPECT_TRUE(transfer(peer, received.data(), kBytes, false));
    EXPECT_TRUE(transfer(peer, &byte, 1, true));
    ::close(peer);
  });

  double fastest_round_trip_ms = 1e9, bulk_ms = 0;
  std::vector<char> sent(kBytes);
  std::iota(sent.begin(), sent.end(), 0);
  std::thread client = in_namespace(network.namespace_fd(0), [&] {
    // Refused until the server listens: a fresh socket each try, for 10 s at most.
    sockaddr_in address = address_of(1, kPort);
    int fd = -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fd < 0 && std::chrono::steady_clock::now() < deadline) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      set_timeouts(fd);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) break;
      const int error = errno;
      ::close(fd);
      fd = -1;
      ASSERT_EQ(error, ECONNREFUSED) << std::strerror(error);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_GE(fd, 0) << "no connection within 10 s";
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char byte = 1;
    for (int i = 0; i < kPings; ++i) {
      const auto start = std::chrono::steady_clock::now();
      ASSERT_TRUE(transfer(fd, &byte, 1, true) && transfer(fd, &byte, 1, false));
      fastest_round_trip_ms = std::min(
          fastest_round_trip_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(transfer(fd, sent.data(), kBytes, true));
    EXPECT_TRUE(transfer(fd, &byte, 1, false));  // the server has it all
    bulk_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ::close(fd);
  });
  client.join();
  server.join();
  if (listener >= 0) ::close(listener);

  EXPECT_EQ(received, sent);
  // Lower bounds the emulator enforces whatever the load: 1 ms each way, and 4 MB at
  // 1 Gbit/s (plus the reply's 1 ms).
  EXPECT_GE(fastest_round_trip_ms, 2.0);
  EXPECT_GE(bulk_ms, 32.0 + 1.0);
}

}  // namespace
}  // namespace ember::bench
