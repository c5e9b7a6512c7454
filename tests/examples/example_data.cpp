// Writes the data files PyTorch's C++ examples read, so the tests can run them unchanged:
//   example_data mnist DIR          generated MNIST IDX files in DIR/data (learnable classes)
//   example_data digits CSV DIR     scikit-learn's digits (CSV or CSV.GZ, read by
//                                   data::datasets::Digits) in MNIST's layout in DIR/data
//   example_data custom DIR         generated PPM images in DIR/dataset and DIR/info.txt
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "data/idx_files.h"
#include "ember/ember.h"

namespace {

namespace fs = std::filesystem;
using ember::testing::write_mnist;

// Class k of 10: a bright 8x8 block at cell (k / 4, k % 4) of a 3x4 grid over 28x28, on
// noise, so that a small CNN separates the classes in a few epochs.
void generated_mnist(const std::string& dir, bool train, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(0, 60), jitter(-1, 1);
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < count; ++i) {
    const int label = i % 10;
    const int top = 2 + 8 * (label / 4) + jitter(rng), left = 1 + 7 * (label % 4) + jitter(rng);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const bool on = r >= top && r < top + 8 && c >= left && c < left + 6;
        pixels.push_back(static_cast<uint8_t>(on ? 200 + noise(rng) / 2 : noise(rng)));
      }
    labels.push_back(static_cast<uint8_t>(label));
  }
  write_mnist(dir, train, 28, 28, pixels, labels);
}

// An 8x8 digit (values in [0, 1]) scaled 3x by pixel repetition to 24x24 and centred in
// 28x28, as MNIST's digits sit in a 20x20 box inside 28x28.
void digits_as_mnist(const std::string& csv, const std::string& dir, bool train) {
  using ember::data::datasets::Digits;
  Digits digits(csv, train ? Digits::Mode::kTrain : Digits::Mode::kTest);
  const ember::Tensor images = digits.images().contiguous();
  const ember::Tensor targets = digits.targets().contiguous();
  const float* image = images.data_ptr<float>();
  const int64_t* target = targets.data_ptr<int64_t>();
  std::vector<uint8_t> pixels, labels;
  for (int64_t n = 0; n < images.size(0); ++n) {
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const bool inside = r >= 2 && r < 26 && c >= 2 && c < 26;
        const float value = inside ? image[n * 64 + ((r - 2) / 3) * 8 + (c - 2) / 3] : 0.0f;
        pixels.push_back(static_cast<uint8_t>(std::lround(value * 255)));
      }
    labels.push_back(static_cast<uint8_t>(target[n]));
  }
  write_mnist(dir, train, 28, 28, pixels, labels);
}

// Image i of class i % 3: a solid colour per class with noise; 8 train and 4 test images of
// sizes around 224x224 (the example resizes each to 224x224 with OpenCV).
void custom_dataset(const std::string& dir) {
  fs::create_directories(dir + "/dataset");
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> noise(0, 40);
  std::ofstream info(dir + "/info.txt");
  for (int i = 0; i < 12; ++i) {
    const int label = i % 3;
    const std::string name = "image_" + std::to_string(i) + ".ppm";
    std::ofstream image(dir + "/dataset/" + name, std::ios::binary);
    const int width = 192 + 16 * (i % 4), height = 240 - 8 * (i % 3);
    image << "P6\n" << width << " " << height << "\n255\n";
    for (int p = 0; p < width * height; ++p)
      for (int c = 0; c < 3; ++c) image.put(static_cast<char>((c == label ? 180 : 20) + noise(rng)));
    // No newline after the last line: the example's reading loop stops at end of file.
    info << (i ? "\n" : "") << name << " " << label << " " << (i < 8 ? "train" : "test");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "mnist") {
      fs::create_directories(args[1] + "/data");
      generated_mnist(args[1] + "/data", true, 1920, 1);
      generated_mnist(args[1] + "/data", false, 500, 2);
    } else if (args.size() == 3 && args[0] == "digits") {
      fs::create_directories(args[2] + "/data");
      digits_as_mnist(args[1], args[2] + "/data", true);
      digits_as_mnist(args[1], args[2] + "/data", false);
    } else if (args.size() == 2 && args[0] == "custom") {
      custom_dataset(args[1]);
    } else {
      std::cerr << "usage: example_data mnist DIR | digits CSV DIR | custom DIR\n";
      return 2;
    }
  } catch (const ember::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
