// PyTorch's C++ custom-dataset example (github.com/pytorch/examples,
// cpp/custom-dataset/custom-dataset.cpp at 77f55b9), ported to ember. Differences from the
// original:
//   - namespace torch -> ember, <torch/torch.h> -> <ember/ember.h>, TORCH_MODULE -> EMBER_MODULE;
//   - OpenCV is not a dependency of ember, so the three OpenCV calls (cv::imread, cv::resize,
//     cv::split) are replaced by read_ppm below, which reads a binary PPM (P6) image of
//     options.image_size squared pixels into the same three uint8 channel planes, and
//     <opencv2/opencv.hpp> (which brought in assert) becomes <cassert>;
//   - data paths: the images are ./dataset/*.ppm and ./info.txt lists them (the tests write
//     a few generated images there, tests/examples/).
// The network (AlexNet on 224x224 images, 102 classes), the data pipeline and the training
// loop are the original's.
#include <cassert>
#include <stdint.h>
#include <ember/ember.h>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>
#include <random>

struct Options {
  int image_size = 224;
  size_t train_batch_size = 8;
  size_t test_batch_size = 200;
  size_t iterations = 10;
  size_t log_interval = 20;
  // path must end in delimiter
  std::string datasetPath = "./dataset/";
  std::string infoFilePath = "info.txt";
  ember::DeviceType device = ember::kCPU;
};

static Options options;

// In place of OpenCV (see the top): the B, G, R planes of a binary PPM (P6) image of
// options.image_size squared pixels, as cv::split gives them for cv::imread's BGR image.
struct Plane {
  std::vector<uint8_t> bytes;
  uint8_t* ptr() { return bytes.data(); }
};

std::vector<Plane> read_ppm(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string magic;
  int width = 0, height = 0, max_value = 0;
  file >> magic >> width >> height >> max_value;
  file.get();  // the one whitespace byte before the pixels
  EMBER_CHECK(file && magic == "P6" && width == options.image_size && height == options.image_size &&
                  max_value == 255,
              "read_ppm", path, ": expected a binary PPM of ", options.image_size, "x", options.image_size,
              " pixels with values up to 255");
  const size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height);
  std::vector<Plane> channels(3, Plane{std::vector<uint8_t>(pixels)});
  for (size_t i = 0; i < pixels; ++i) {
    char rgb[3];
    file.read(rgb, 3);
    for (int c = 0; c < 3; ++c) channels[2 - c].bytes[i] = static_cast<uint8_t>(rgb[c]);
  }
  EMBER_CHECK(static_cast<bool>(file), "read_ppm", path, ": truncated after its header");
  return channels;
}

using Data = std::vector<std::pair<std::string, long>>;

class CustomDataset : public ember::data::datasets::Dataset<CustomDataset> {
  using Example = ember::data::Example<>;

  const Data data;

 public:
  CustomDataset(const Data& data) : data(data) {}

  Example get(size_t index) {
    std::string path = options.datasetPath + data[index].first;
    std::vector<Plane> channels = read_ppm(path);

    auto R = ember::from_blob(
        channels[2].ptr(),
        {options.image_size, options.image_size},
        ember::kUInt8);
    auto G = ember::from_blob(
        channels[1].ptr(),
        {options.image_size, options.image_size},
        ember::kUInt8);
    auto B = ember::from_blob(
        channels[0].ptr(),
        {options.image_size, options.image_size},
        ember::kUInt8);

    auto tdata = ember::cat({R, G, B})
                     .view({3, options.image_size, options.image_size})
                     .to(ember::kFloat);
    auto tlabel = ember::tensor(data[index].second, ember::kLong);
    return {tdata, tlabel};
  }

  ember::optional<size_t> size() const {
    return data.size();
  }
};

std::pair<Data, Data> readInfo() {
  std::random_device randomDevice;
  std::mt19937 mersenneTwisterGenerator(randomDevice());
  Data train, test;

  std::ifstream stream(options.infoFilePath);
  assert(stream.is_open());

  long label;
  std::string path, type;

  while (true) {
    stream >> path >> label >> type;

    if (type == "train")
      train.push_back(std::make_pair(path, label));
    else if (type == "test")
      test.push_back(std::make_pair(path, label));
    else
      assert(false);

    if (stream.eof())
      break;
  }

  std::shuffle(train.begin(), train.end(), mersenneTwisterGenerator);
  std::shuffle(test.begin(), test.end(), mersenneTwisterGenerator);
  return std::make_pair(train, test);
}

struct NetworkImpl : ember::nn::SequentialImpl {
  NetworkImpl() {
    using namespace ember::nn;

    auto stride = ember::ExpandingArray<2>({2, 2});
    ember::ExpandingArray<2> shape({-1, 256 * 6 * 6});
    push_back(Conv2d(Conv2dOptions(3, 64, 11).stride(4).padding(2)));
    push_back(Functional(ember::relu));
    push_back(Functional(ember::max_pool2d, 3, stride, 0, 1, false));
    push_back(Conv2d(Conv2dOptions(64, 192, 5).padding(2)));
    push_back(Functional(ember::relu));
    push_back(Functional(ember::max_pool2d, 3, stride, 0, 1, false));
    push_back(Conv2d(Conv2dOptions(192, 384, 3).padding(1)));
    push_back(Functional(ember::relu));
    push_back(Conv2d(Conv2dOptions(384, 256, 3).padding(1)));
    push_back(Functional(ember::relu));
    push_back(Conv2d(Conv2dOptions(256, 256, 3).padding(1)));
    push_back(Functional(ember::relu));
    push_back(Functional(ember::max_pool2d, 3, stride, 0, 1, false));
    push_back(Functional(ember::reshape, shape));
    push_back(Dropout());
    push_back(Linear(256 * 6 * 6, 4096));
    push_back(Functional(ember::relu));
    push_back(Dropout());
    push_back(Linear(4096, 4096));
    push_back(Functional(ember::relu));
    push_back(Linear(4096, 102));
    push_back(Functional(
        [](ember::Tensor input) { return ember::log_softmax(input, 1); }));
  }
};
EMBER_MODULE(Network);

template <typename DataLoader>
void train(
    Network& network,
    DataLoader& loader,
    ember::optim::Optimizer& optimizer,
    size_t epoch,
    size_t data_size) {
  size_t index = 0;
  network->train();
  float Loss = 0, Acc = 0;

  for (auto& batch : loader) {
    auto data = batch.data.to(options.device);
    auto targets = batch.target.to(options.device).view({-1});

    auto output = network->forward(data);
    auto loss = ember::nll_loss(output, targets);
    assert(!std::isnan(loss.template item<float>()));
    auto acc = output.argmax(1).eq(targets).sum();

    optimizer.zero_grad();
    loss.backward();
    optimizer.step();

    Loss += loss.template item<float>();
    Acc += acc.template item<float>();

    if (index++ % options.log_interval == 0) {
      auto end = std::min(data_size, (index + 1) * options.train_batch_size);

      std::cout << "Train Epoch: " << epoch << " " << end << "/" << data_size
                << "\tLoss: " << Loss / end << "\tAcc: " << Acc / end
                << std::endl;
    }
  }
}

template <typename DataLoader>
void test(Network& network, DataLoader& loader, size_t data_size) {
  size_t index = 0;
  network->eval();
  ember::NoGradGuard no_grad;
  float Loss = 0, Acc = 0;

  for (const auto& batch : loader) {
    auto data = batch.data.to(options.device);
    auto targets = batch.target.to(options.device).view({-1});

    auto output = network->forward(data);
    auto loss = ember::nll_loss(output, targets);
    assert(!std::isnan(loss.template item<float>()));
    auto acc = output.argmax(1).eq(targets).sum();

    Loss += loss.template item<float>();
    Acc += acc.template item<float>();
  }

  if (index++ % options.log_interval == 0)
    std::cout << "Test Loss: " << Loss / data_size
              << "\tAcc: " << Acc / data_size << std::endl;
}

int main() {
  ember::manual_seed(1);

  if (ember::cuda::is_available())
    options.device = ember::kCUDA;
  std::cout << "Running on: "
            << (options.device == ember::kCUDA ? "CUDA" : "CPU") << std::endl;

  const auto data = readInfo();

  auto train_set =
      CustomDataset(data.first).map(ember::data::transforms::Stack<>());
  auto train_size = train_set.size().value();
  auto train_loader =
      ember::data::make_data_loader<ember::data::samplers::SequentialSampler>(
          std::move(train_set), options.train_batch_size);

  auto test_set =
      CustomDataset(data.second).map(ember::data::transforms::Stack<>());
  auto test_size = test_set.size().value();
  auto test_loader =
      ember::data::make_data_loader<ember::data::samplers::SequentialSampler>(
          std::move(test_set), options.test_batch_size);

  Network network;
  network->to(options.device);

  ember::optim::SGD optimizer(
      network->parameters(), ember::optim::SGDOptions(0.001).momentum(0.5));

  for (size_t i = 0; i < options.iterations; ++i) {
    train(network, *train_loader, optimizer, i + 1, train_size);
    std::cout << std::endl;
    test(network, *test_loader, test_size);
    std::cout << std::endl;
  }

  return 0;
}
