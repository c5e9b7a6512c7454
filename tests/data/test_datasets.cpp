// Datasets and transforms: MNIST and Digits read from files the tests write byte by byte,
// TensorDataset, MapDataset with Lambda / Normalize / Stack against hand-computed values.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/testing.h"
#include "data/idx_files.h"
#include "ember/data.h"
#include "ember/ember.h"

namespace ember::data {
namespace {

using testutil::element;

std::string fresh_dir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir = ::testing::TempDir() + "/ember_data_" + std::to_string(::getpid()) + "_" + test->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}


// Three 2x3 images whose pixels are 40 * image + 7 * position, labels 7, 0, 9.
std::vector<uint8_t> three_images() {
  std::vector<uint8_t> pixels;
  for (int image = 0; image < 3; ++image)
    for (int position = 0; position < 6; ++position) pixels.push_back(static_cast<uint8_t>(40 * image + 7 * position));
  return pixels;
}

TEST(MNIST, ReadsImagesAndLabelsOfEitherMode) {
  const std::string dir = fresh_dir();
  testing::write_mnist(dir, /*train=*/true, 2, 3, three_images(), {7, 0, 9});
  testing::write_mnist(dir, /*train=*/false, 2, 3, {255, 0, 1, 2, 3, 128}, {4});

  datasets::MNIST train(dir);
  EXPECT_TRUE(train.is_train());
  ASSERT_EQ(train.size().value(), 3u);
  EXPECT_EQ(train.images().sizes(), (std::vector<int64_t>{3, 1, 2, 3}));
  EXPECT_EQ(train.images().scalar_type(), kFloat32);
  EXPECT_EQ(train.targets().scalar_type(), kInt64);
  const int64_t labels[] = {7, 0, 9};
  for (int image = 0; image < 3; ++image) {
    Example<> example = train.get(static_cast<size_t>(image));
    EXPECT_EQ(example.data.sizes(), (std::vector<int64_t>{1, 2, 3}));
    for (int position = 0; position < 6; ++position)
      EXPECT_EQ(element(example.data, position), static_cast<float>(40 * image + 7 * position) / 255.0f);
    EXPECT_EQ(element(example.target, 0), labels[image]);
  }

  datasets::MNIST test(dir, datasets::MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  ASSERT_EQ(test.size().value(), 1u);
  EXPECT_EQ(element(test.get(0).data, 0), 1.0);
  EXPECT_EQ(element(test.get(0).data, 5), 128.0f / 255.0f);
  EXPECT_EQ(element(test.get(0).target, 0), 4);
  EXPECT_TRUE(testutil::throws_error([&] { test.get(1); }, {"[MNIST]", "index 1", "1 examples"}));
}

TEST(MNIST, RejectsBadFilesNamingTheFileAndValues) {
  const std::string dir = fresh_dir();
  const std::string images = dir + "/train-images-idx3-ubyte";
  const std::string labels = dir + "/train-labels-idx1-ubyte";
  EXPECT_TRUE(testutil::throws_error([&] { datasets::MNIST{dir}; }, {"[MNIST]", images}));

  testing::write_mnist(dir, true, 2, 3, three_images(), {7, 0, 9});
  // The labels' magic number where the images' belongs.
  testing::write_bytes(images, testing::idx_bytes(2049, {3, 2, 3}, three_images()));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::MNIST{dir}; }, {images, "expected magic number 2051, found 2049"}));

  std::vector<uint8_t> short_pixels = three_images();
  short_pixels.pop_back();
  testing::write_bytes(images, testing::idx_bytes(2051, {3, 2, 3}, short_pixels));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::MNIST{dir}; }, {images, "[3, 2, 3]", "need 18 bytes", "has 17"}));

  std::vector<uint8_t> long_pixels = three_images();
  long_pixels.push_back(1);
  testing::write_bytes(images, testing::idx_bytes(2051, {3, 2, 3}, long_pixels));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::MNIST{dir}; }, {"need 18 bytes", "has 19"}));

  testing::write_bytes(images, std::string("\0\0\x08", 3));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::MNIST{dir}; }, {images, "truncated header (3 bytes, need 16)"}));

  testing::write_bytes(images, testing::idx_bytes(2051, {3, 2, 3}, three_images()));
  testing::write_bytes(labels, testing::idx_bytes(2049, {2}, {1, 2}));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::MNIST{dir}; }, {"holds 3 images", "holds 2 labels"}));
}

void write_gzipped(const std::string& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(file);
}

// Row r: pixel p = (r + p) % 17, label r % 10.
std::string digits_csv(int rows) {
  std::string text;
  for (int r = 0; r < rows; ++r) {
    for (int p = 0; p < 64; ++p) text += std::to_string((r + p) % 17) + ",";
    text += std::to_string(r % 10) + "\n";
  }
  return text;
}

TEST(Digits, SplitsTheLastFifthOffAsTestAndReadsGzip) {
  const std::string dir = fresh_dir();
  write_gzipped(dir + "/digits.csv.gz", digits_csv(11));
  datasets::Digits train(dir + "/digits.csv.gz");
  datasets::Digits test(dir + "/digits.csv.gz", datasets::Digits::Mode::kTest);
  // ceil(11 / 5) = 3 test rows, as train_test_split(test_size=0.2, shuffle=False).
  ASSERT_EQ(train.size().value(), 8u);
  ASSERT_EQ(test.size().value(), 3u);
  EXPECT_EQ(train.images().sizes(), (std::vector<int64_t>{8, 1, 8, 8}));
  for (int r = 0; r < 11; ++r) {
    Example<> example = r < 8 ? train.get(static_cast<size_t>(r)) : test.get(static_cast<size_t>(r - 8));
    for (int p = 0; p < 64; ++p) EXPECT_EQ(element(example.data, p), ((r + p) % 17) / 16.0) << r << " " << p;
    EXPECT_EQ(element(example.target, 0), r % 10);
  }
  testing::write_bytes(dir + "/plain.csv", digits_csv(5));
  EXPECT_EQ(datasets::Digits(dir + "/plain.csv").size().value(), 4u);
}

TEST(Digits, RejectsMalformedRows) {
  const std::string dir = fresh_dir();
  const std::string path = dir + "/digits.csv";
  std::string good = digits_csv(1);
  testing::write_bytes(path, good.substr(0, good.rfind(',')) + "\n");  // 64 values
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{path}; }, {"[Digits]", path, "line 1", "64 values, expected 65"}));
  testing::write_bytes(path, "17" + good.substr(good.find(',')));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{path}; }, {"line 1 column 1", "[0, 16]", "'17'"}));
  testing::write_bytes(path, good + good.substr(0, good.rfind(',')) + ",10\n");
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{path}; }, {"line 2 column 65", "[0, 9]", "'10'"}));
  testing::write_bytes(path, good.substr(0, good.size() - 1) + ",3\n");
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{path}; }, {"more than 65 values"}));
  testing::write_bytes(path, "x" + good);
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{path}; }, {"'x0'"}));
  testing::write_bytes(path, "");
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{path}; }, {"holds no rows"}));
  EXPECT_TRUE(testutil::throws_error([&] { datasets::Digits{dir + "/missing.csv.gz"}; }, {"[Digits]", "missing.csv.gz"}));
}

TEST(TensorDataset, YieldsRows) {
  datasets::TensorDataset dataset(arange(12, kFloat64).view({4, 3}));
  ASSERT_EQ(dataset.size().value(), 4u);
  TensorExample row = dataset.get(2);
  const Tensor& data = row;  // an example without target converts to its data
  for (int i = 0; i < 3; ++i) EXPECT_EQ(element(data, i), 6 + i);
  EXPECT_TRUE(testutil::throws_error([&] { dataset.get(4); }, {"[TensorDataset]", "index 4", "4 examples"}));
  EXPECT_TRUE(testutil::throws_error([] { datasets::TensorDataset(scalar_tensor(1.0)); }, {"[TensorDataset]", "0 dimensions"}));
  datasets::TensorDataset stacked(std::vector<Tensor>{tensor({1.0, 2.0}), tensor({3.0, 4.0})});
  EXPECT_EQ(stacked.tensor.sizes(), (std::vector<int64_t>{2, 2}));
}

// Example i: data [2, 2] filled with values 4i .. 4i + 3, target i.
struct Squares : datasets::Dataset<Squares> {
  Example<> get(size_t index) override {
    const double base = 4.0 * static_cast<double>(index);
    return {tensor({base, base + 1, base + 2, base + 3}, kFloat64).view({2, 2}),
            tensor(static_cast<int64_t>(index))};
  }
  std::optional<size_t> size() const override { return 5; }
};

TEST(Transforms, NormalizeFollowsItsFormula) {
  transforms::Normalize<> normalize(0.5, 2.0);
  Example<> out = normalize.apply(Squares().get(1));
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(element(out.data, i), (4.0 + i - 0.5) / 2.0);
  EXPECT_EQ(element(out.target, 0), 1);

  // One mean and stddev per channel (dim 0) of a [C, H, W] image, as libtorch's [C, 1, 1].
  transforms::Normalize<> per_channel(std::vector<double>{1.0, -3.0}, std::vector<double>{4.0, 0.25});
  Tensor x = tensor({0.0, 1.0, 2.0, 3.0}, kFloat64).view({2, 1, 2});
  Tensor y = per_channel(x);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 1, 2}));
  const double expected[] = {(0 - 1.0) / 4, (1 - 1.0) / 4, (2 + 3.0) / 0.25, (3 + 3.0) / 0.25};
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(element(y, i), expected[i]);
  // Three values on a 2-d [H, W] sample broadcast to [3, H, W]; one value to [1, H, W].
  transforms::Normalize<> rgb({0.5, 0.25, 0.0}, {0.5, 0.5, 1.0});
  Tensor gray = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat32).view({2, 3});
  Tensor spread = rgb(gray);
  EXPECT_EQ(spread.sizes(), (std::vector<int64_t>{3, 2, 3}));
  EXPECT_DOUBLE_EQ(element(spread[1], 5), (6.0 - 0.25) / 0.5);
  EXPECT_DOUBLE_EQ(element(spread[2], 0), 1.0);
  EXPECT_EQ(normalize(gray).sizes(), (std::vector<int64_t>{1, 2, 3}));
  // float32 images stay float32, as with libtorch's float32 mean and stddev.
  EXPECT_EQ(normalize(ones({2}, kFloat32)).scalar_type(), kFloat32);
  EXPECT_TRUE(testutil::throws_error([] { transforms::Normalize<>(0.0, 0.0); }, {"[Normalize]", "stddev must be non-zero"}));
}

TEST(Transforms, MapStackAndLambdas) {
  auto dataset = Squares()
                     .map(transforms::Lambda<Example<>>([](Example<> e) {
                       e.data = e.data * 10;
                       return e;
                     }))
                     .map(transforms::TensorLambda<>([](Tensor t) { return t + 1; }))
                     .map(transforms::Stack<>());
  EXPECT_EQ(dataset.size().value(), 5u);
  std::vector<size_t> indices = {3, 0};
  Example<> batch = dataset.get_batch(indices);
  ASSERT_EQ(batch.data.sizes(), (std::vector<int64_t>{2, 2, 2}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(element(batch.data, i), (12 + i) * 10 + 1);
    EXPECT_EQ(element(batch.data, 4 + i), i * 10 + 1);
  }
  EXPECT_EQ(element(batch.target, 0), 3);
  EXPECT_EQ(element(batch.target, 1), 0);

  // A batch lambda sees the whole stacked batch; a collation makes a batch of examples.
  auto summed = Squares()
                    .map(transforms::Collate<Example<>>([](std::vector<Example<>> examples) {
                      Example<> first = examples.front();
                      for (size_t i = 1; i < examples.size(); ++i) first.data = first.data + examples[i].data;
                      return first;
                    }))
                    .map(transforms::BatchLambda<Example<>, Tensor>([](Example<> e) { return e.data.sum(); }));
  std::vector<size_t> all = {0, 1, 2};
  EXPECT_EQ(element(summed.get_batch(all), 0), 66.0);  // 0 + 1 + ... + 11

  datasets::TensorDataset rows(arange(6, kFloat64).view({3, 2}));
  Tensor stacked = rows.map(transforms::Stack<TensorExample>()).get_batch(std::vector<size_t>{2, 1}).data;
  EXPECT_EQ(element(stacked, 0), 4);
  EXPECT_EQ(element(stacked, 3), 3);
}

}  // namespace
}  // namespace ember::data
