// `ember bench safetensors`: a float32 file of 64 tensors (1 GiB; 64 MiB with --quick).
// open_ms: open + validate + zero-copy views of every tensor; copy_load_ms: the same tensors
// read into owned memory; touch_gbps: summing every element of the zero-copy tensors after
// the file was dropped from the page cache.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"

namespace ember::bench {
namespace {

// Asks the kernel to forget the file's cached pages (clean pages only, hence the fsync).
void drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

nlohmann::json run(const Options& options) {
  const int64_t tensors = 64;
  const int64_t rows = options.quick ? 128 : 2048;  // 2048 x 2048 float32 = 16 MiB per tensor
  const int64_t cols = 2048;
  const int reps = options.quick ? 3 : 5;
  const std::string path = (std::filesystem::temp_directory_path() / ("ember_bench_" + std::to_string(::getpid()) +
                                                                      ".safetensors")).string();
  {
    io::TensorList list;
    manual_seed(0);
    for (int64_t i = 0; i < tensors; ++i) list.emplace_back("layers." + std::to_string(i) + ".weight", randn({rows, cols}));
    io::save_safetensors(path, list);
  }
  const double bytes = static_cast<double>(tensors * rows * cols * 4);

  const double open_ms = time_ms([&] { io::LoadedTensors loaded = io::load_safetensors(path); }, reps);
  const double copy_load_ms = time_ms(
      [&] {
        io::LoadedTensors loaded = io::load_safetensors(path);
        for (auto& [name, tensor] : loaded.tensors) tensor = tensor.clone();
      },
      reps);

  // Timed once by hand: time_ms's warm-up run would refill the page cache.
  drop_page_cache(path);
  double checksum = 0;
  const auto start = std::chrono::steady_clock::now();
  {
    io::LoadedTensors loaded = io::load_safetensors(path);
    for (const auto& [name, tensor] : loaded.tensors) checksum += tensor.sum().item<float>();
  }
  const double touch_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::remove(path.c_str());

  const std::string name = options.quick ? "64mib_f32" : "1gib_f32";
  note(name + ": open " + std::to_string(open_ms) + " ms, copy load " + std::to_string(copy_load_ms) + " ms");
  return nlohmann::json::array({{{"name", name},
                                 {"tensors", tensors},
                                 {"bytes", bytes},
                                 {"open_ms", open_ms},
                                 {"copy_load_ms", copy_load_ms},
                                 {"ratio", copy_load_ms / open_ms},
                                 {"touch_gbps", bytes / touch_ms / 1e6},
                                 {"checksum", checksum}}});
}

Register reg("safetensors", run);

}  // namespace
}  // namespace ember::bench
