#include "cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/profiler.h"

namespace ember::cpu {
namespace {

thread_local bool t_in_parallel = false;

int default_num_threads() {
  if (const char* env = std::getenv("EMBER_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && n > 0) return static_cast<int>(std::min<long>(n, 1024));
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// A job is one parallel_for call: workers and the caller pull chunk indices from `next`.
struct Job {
  const ChunkFn* fn = nullptr;
  int64_t begin = 0, end = 0, grain = 1, chunks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  // A worker's share of the job is one pool task on its lane; the caller's share is already
  // inside the op that called parallel_for.
  void run_chunks(bool on_worker) {
    t_in_parallel = true;
#ifndef EMBER_RT_CPU  // ember-rt has no profiler (ember/profiler.h)
    profiler::RecordFunction task;
    if (on_worker && profiler::is_enabled()) task.begin("pool_task", profiler::Category::PoolTask);
#endif
    int64_t ran = 0;
    for (int64_t c; (c = next.fetch_add(1)) < chunks; ++ran) {
      if (!failed.load(std::memory_order_relaxed)) {
        int64_t lo = begin + c * grain;
        int64_t hi = std::min(end, lo + grain);
        try {
          (*fn)(lo, hi);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      }
      done.fetch_add(1, std::memory_order_acq_rel);
    }
#ifndef EMBER_RT_CPU
    if (task.active() && ran == 0) task.cancel();
#else
    (void)on_worker;
    (void)ran;
#endif
    t_in_parallel = false;
  }
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return threads_; }

  void resize(int threads) {
    stop_workers();
    threads_ = std::max(1, threads);
    stopping_ = false;
    for (int i = 0; i + 1 < threads_; ++i)
      workers_.emplace_back([this, i] {
#ifndef EMBER_RT_CPU  // ember-rt has no profiler (ember/profiler.h)
        profiler::set_thread_name("pool worker " + std::to_string(i + 1));
#endif
        worker_loop();
      });
  }

  void run(Job& job) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleeping_ > 0;
    }
    if (wake) wake_.notify_all();
    job.run_chunks(false);
    // Wait for chunks still running on workers (spinning first: a yield returns microseconds
    // after the chunk ended, and a decoding step joins a hundred jobs), then detach the job.
    spin_until([&job] { return job.done.load(std::memory_order_acquire) >= job.chunks; });
    while (job.done.load(std::memory_order_acquire) < job.chunks) std::this_thread::yield();
    spin_until([this] { return active_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;
    idle_.wait(lock, [this] { return active_.load(std::memory_order_acquire) == 0; });
  }

 private:
  // Note [Pool wake-ups]
  // A training step runs hundreds of parallel_for calls, many of a few microseconds. A
  // worker asleep on the condition variable takes tens of microseconds to wake, so between
  // jobs it first spins for up to kSpinTime watching the generation counter, and the caller
  // signals the condition variable only when some worker really sleeps.
  static constexpr auto kSpinTime = std::chrono::microseconds(50);

  template <typename Ready>
  static bool spin_until(const Ready& ready) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (int i = 0;; ++i) {
      if (ready()) return true;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
      cpu_relax();
    }
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] {
        return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
      });
      std::unique_lock<std::mutex> lock(mutex_);
      auto ready = [&] { return stopping_ || (job_ != nullptr && generation_ != seen); };
      if (!ready()) {
        ++sleeping_;
        wake_.wait(lock, ready);
        --sleeping_;
      }
      if (stopping_) return;
      seen = generation_;
      Job* job = job_;
      active_.fetch_add(1, std::memory_order_acq_rel);
      lock.unlock();
      job->run_chunks(true);
      lock.lock();
      if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};
  std::atomic<bool> stopping_{false};
  int sleeping_ = 0;
};

std::mutex g_pool_mutex;  // serialises jobs from different user threads and resizes

ThreadPool& pool() {
  static ThreadPool instance(default_num_threads());
  return instance;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (n != pool().size()) pool().resize(n);
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t begin, int64_t end, int64_t grain, ChunkFn fn) {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = num_chunks(begin, end, grain);
  if (chunks == 1 || t_in_parallel || pool().size() == 1) {
    for (int64_t lo = begin; lo < end; lo += grain) fn(lo, std::min(end, lo + grain));
    return;
  }
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  Job job;
  job.fn = &fn;
  job.begin = begin;
  job.end = end;
  job.grain = grain;
  job.chunks = chunks;
  pool().run(job);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace ember::cpu
