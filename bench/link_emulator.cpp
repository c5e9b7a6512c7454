#include "link_emulator.h"

#include <endian.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <sstream>
#include <system_error>
#include <cstdio>

#include "ember/error.h"

namespace ember::bench {
namespace {

constexpr const char* kOp = "bench fsdp";
constexpr size_t kMaxPacket = 65536;

int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Opens a TUN device named `device` in the network namespace `netns_fd`: setns changes only
// the calling thread's namespace, so a short-lived thread does it, and the descriptor keeps
// the device (in that namespace) after the thread is gone.
int open_tun(int netns_fd, const std::string& device) {
  int fd = -1;
  std::string failure;
  std::thread([&] {
    if (::setns(netns_fd, CLONE_NEWNET) != 0) {
      failure = std::string("setns: ") + std::strerror(errno);
      return;
    }
    fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      failure = std::string("cannot open /dev/net/tun: ") + std::strerror(errno);
      return;
    }
    ifreq request{};
    request.ifr_flags = IFF_TUN | IFF_NO_PI;
    std::strncpy(request.ifr_name, device.c_str(), IFNAMSIZ - 1);
    if (::ioctl(fd, TUNSETIFF, &request) != 0) {
      failure = std::string("TUNSETIFF: ") + std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }).join();
  EMBER_CHECK(fd >= 0, kOp, "cannot create TUN device ", device, " for the emulated network: ", failure);
  return fd;
}

void add_to_epoll(int epoll_fd, int fd, uint64_t tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = tag;
  EMBER_CHECK(::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) == 0, kOp, "epoll_ctl failed: ", std::strerror(errno));
}

struct Packet {
  int64_t due_ns = 0;
  uint64_t order = 0;  // arrival order among packets due at the same time
  size_t destination = 0;
  std::vector<uint8_t> bytes;
  bool operator>(const Packet& other) const {
    return due_ns != other.due_ns ? due_ns > other.due_ns : order > other.order;
  }
};

}  // namespace

SwitchSchedule::SwitchSchedule(size_t ports, const LinkSpec& spec)
    : ns_per_byte_(8e9 / spec.bits_per_second),
      delay_ns_(spec.delay.count()),
      buffer_ns_(spec.switch_buffer.count()),
      up_free_(ports, 0),
      down_free_(ports, 0) {}

std::optional<int64_t> SwitchSchedule::admit(size_t source, size_t destination, size_t bytes, int64_t now_ns) {
  const auto wire_ns = static_cast<int64_t>(static_cast<double>(bytes) * ns_per_byte_);
  up_free_[source] = std::max(now_ns, up_free_[source]) + wire_ns;
  const int64_t at_switch = up_free_[source] + delay_ns_;
  const int64_t down_start = std::max(at_switch, down_free_[destination]);
  if (down_start - at_switch > buffer_ns_) return std::nullopt;  // sent, then dropped at the switch
  down_free_[destination] = down_start + wire_ns;
  return down_free_[destination];
}

int64_t SwitchSchedule::backlog_ns(size_t source, int64_t now_ns) const {
  return std::max<int64_t>(0, up_free_[source] - now_ns);
}

LinkEmulator::LinkEmulator(const std::vector<int>& namespace_fds, const std::string& device, uint32_t first_address,
                           const LinkSpec& spec)
    : first_address_(first_address), spec_(spec) {
  try {
    for (int netns_fd : namespace_fds) tun_fds_.push_back(open_tun(netns_fd, device));
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    EMBER_CHECK(epoll_fd_ >= 0 && timer_fd_ >= 0 && stop_fd_ >= 0, kOp,
                "cannot create the emulated network's descriptors: ", std::strerror(errno));
    for (size_t r = 0; r < tun_fds_.size(); ++r) add_to_epoll(epoll_fd_, tun_fds_[r], r);
    add_to_epoll(epoll_fd_, timer_fd_, tun_fds_.size());
    add_to_epoll(epoll_fd_, stop_fd_, tun_fds_.size() + 1);
    try {
      thread_ = std::thread([this] { forward(); });
    } catch (const std::system_error& e) {
      EMBER_CHECK(false, kOp, "cannot start the emulated network's thread: ", e.what());
    }
  } catch (...) {
    for (int fd : tun_fds_) ::close(fd);
    for (int fd : {epoll_fd_, timer_fd_, stop_fd_})
      if (fd >= 0) ::close(fd);
    throw;
  }
  sched_param priority{};
  priority.sched_priority = 10;
  realtime_ = ::pthread_setschedparam(thread_.native_handle(), SCHED_FIFO, &priority) == 0;
}

LinkEmulator::~LinkEmulator() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(stop_fd_, &one, sizeof(one));  // an eventfd write of 1 cannot fail
  thread_.join();
  for (int fd : tun_fds_) ::close(fd);
  for (int fd : {epoll_fd_, timer_fd_, stop_fd_}) ::close(fd);
}

std::string LinkEmulator::describe() const {
  auto ms = [](std::chrono::nanoseconds t) { return std::chrono::duration<double, std::milli>(t).count(); };
  std::ostringstream text;
  text << "user-space switch over TUN: " << spec_.bits_per_second / 1e9 << " Gbit/s ports, " << ms(spec_.delay)
       << " ms one way plus serialization at both ends, " << spec_.mtu << "-byte MTU, " << ms(spec_.host_queue)
       << " ms host link queue, " << ms(spec_.switch_buffer) << " ms switch buffers";
  if (!realtime_) text << ", forwarder not real-time";
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failure_.empty()) text << "; forwarding stopped: " << failure_;
  return text.str();
}

void LinkEmulator::forward() {
  const size_t ranks = tun_fds_.size();
  SwitchSchedule schedule(ranks, spec_);
  std::priority_queue<Packet, std::vector<Packet>, std::greater<>> in_flight;
  uint64_t order = 0;

  auto admit = [&](size_t source, std::vector<uint8_t> bytes) {
    if (bytes.size() < 20 || (bytes[0] >> 4) != 4) return;  // IPv4 only (IPv6 neighbour chatter is dropped)
    uint32_t destination_address = 0;
    std::memcpy(&destination_address, bytes.data() + 16, 4);
    const int64_t destination = static_cast<int64_t>(be32toh(destination_address)) - first_address_;
    if (destination < 0 || destination >= static_cast<int64_t>(ranks) || static_cast<size_t>(destination) == source)
      return;
    const auto d = static_cast<size_t>(destination);
    if (const auto due = schedule.admit(source, d, bytes.size(), monotonic_ns()))
      in_flight.push(Packet{*due, order++, d, std::move(bytes)});
  };

  // A rank's link takes packets while less than host_queue waits on it; meanwhile its TUN
  // device is not read (out of the epoll set) and the rank's kernel queues.
  const int64_t host_queue_ns = spec_.host_queue.count();
  std::vector<bool> paused(ranks, false);
  std::vector<uint8_t> buffer(kMaxPacket);
  auto drain = [&](size_t rank) {
    while (schedule.backlog_ns(rank, monotonic_ns()) < host_queue_ns) {
      const ssize_t size = ::read(tun_fds_[rank], buffer.data(), buffer.size());
      if (size <= 0) break;
      admit(rank, std::vector<uint8_t>(buffer.begin(), buffer.begin() + size));
    }
    const bool busy = schedule.backlog_ns(rank, monotonic_ns()) >= host_queue_ns;
    if (busy == paused[rank]) return;
    epoll_event event{};
    event.events = busy ? 0u : static_cast<uint32_t>(EPOLLIN);
    event.data.u64 = rank;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, tun_fds_[rank], &event);
    paused[rank] = busy;
  };
  auto stop = [&](const char* what) {
    const int error = errno;
    std::lock_guard<std::mutex> lock(failure_mutex_);
    failure_ = std::string(what) + ": " + std::strerror(error);
    std::fprintf(stderr, "bench fsdp: the emulated network stopped (%s)\n", failure_.c_str());
  };

  int64_t timer_due = 0;  // what the timer is set to (0: disarmed)
  for (;;) {
    epoll_event events[16];
    const int n = ::epoll_wait(epoll_fd_, events, 16, -1);
    if (n < 0 && errno != EINTR) return stop("epoll_wait");
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == ranks + 1) return;
      if (tag == ranks) {
        uint64_t expirations = 0;
        [[maybe_unused]] const ssize_t ignored = ::read(timer_fd_, &expirations, sizeof(expirations));
        continue;
      }
      drain(tag);
    }
    const int64_t now = monotonic_ns();
    while (!in_flight.empty() && in_flight.top().due_ns <= now) {
      const Packet& packet = in_flight.top();
      [[maybe_unused]] const ssize_t written = ::write(tun_fds_[packet.destination], packet.bytes.data(), packet.bytes.size());
      in_flight.pop();
    }
    for (size_t rank = 0; rank < ranks; ++rank)
      if (paused[rank]) drain(rank);
    // Wake for the next delivery (packets just taken may be due before the earlier ones) or
    // for a paused link that has room again.
    int64_t due = in_flight.empty() ? 0 : in_flight.top().due_ns;
    for (size_t rank = 0; rank < ranks; ++rank) {
      if (!paused[rank]) continue;
      const int64_t at = monotonic_ns();
      const int64_t room_at = at + schedule.backlog_ns(rank, at) - host_queue_ns + 1;
      due = due == 0 ? room_at : std::min(due, room_at);
    }
    if (due == timer_due) continue;
    itimerspec next{};
    next.it_value = {static_cast<time_t>(due / 1'000'000'000), static_cast<long>(due % 1'000'000'000)};
    if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &next, nullptr) != 0) return stop("timerfd_settime");
    timer_due = due;
  }
}

}  // namespace ember::bench
