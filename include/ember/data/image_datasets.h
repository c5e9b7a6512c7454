// Image datasets read from files: MNIST (the IDX files of yann.lecun.com/exdb/mnist) and
// scikit-learn's 8x8 digits (digits.csv or digits.csv.gz), as torch::data::datasets::MNIST.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "ember/data/datasets.h"
#include "ember/data/example.h"
#include "ember/tensor.h"

namespace ember::data::datasets {

namespace detail {
// Example `index` of a labeled image set, checked against its size (errors name `op`).
Example<> labeled_image(const Tensor& images, const Tensor& targets, size_t index, const char* op);
}  // namespace detail

// A labeled image set in memory: images [N, 1, H, W] float32 in [0, 1], targets [N] int64,
// read for one of two modes.
template <typename Self>
class LabeledImages : public Dataset<Self> {
 public:
  enum class Mode { kTrain, kTest };

  Example<> get(size_t index) override { return detail::labeled_image(images_, targets_, index, Self::kName); }
  std::optional<size_t> size() const override { return static_cast<size_t>(images_.size(0)); }
  bool is_train() const noexcept { return mode_ == Mode::kTrain; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 protected:
  explicit LabeledImages(Mode mode) : mode_(mode) {}

  Mode mode_;
  Tensor images_, targets_;
};

// Images [N, 1, rows, cols] (bytes / 255) and targets [N] from train-images-idx3-ubyte /
// train-labels-idx1-ubyte (kTrain) or t10k-images-idx3-ubyte / t10k-labels-idx1-ubyte
// (kTest) in `root`.
// Differences from libtorch: any image count and size in the IDX header is accepted (libtorch
// requires 60000/10000 images of 28x28); the file must hold exactly what its header says, and
// every problem (missing file, wrong magic number, truncated or oversized file, image and
// label counts that differ) is an ember::Error naming the file and the values.
class MNIST : public LabeledImages<MNIST> {
 public:
  static constexpr const char* kName = "MNIST";
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
};

// scikit-learn's handwritten digits (sklearn/datasets/data/digits.csv.gz: 1,797 rows of 64
// pixel values in 0..16 and a label): images [N, 1, 8, 8] (values / 16), targets [N]. The
// split is fixed, as train_test_split(test_size=0.2, shuffle=False): the first
// N - ceil(N / 5) rows are kTrain, the rest kTest (1,437 / 360 of the 1,797). A path ending
// in ".gz" is gunzipped while read. Malformed rows are an ember::Error naming the file, the
// line and the value.
class Digits : public LabeledImages<Digits> {
 public:
  static constexpr const char* kName = "Digits";
  explicit Digits(const std::string& path, Mode mode = Mode::kTrain);
};

}  // namespace ember::data::datasets
