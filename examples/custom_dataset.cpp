// PyTorch's C++ custom-dataset example (github.com/pytorch/examples,
// cpp/custom-dataset/custom-dataset.cpp at 77f55b9), ported to ember. The only difference
// from the original: namespace torch -> ember, <torch/torch.h> -> <ember/ember.h>,
// TORCH_MODULE -> EMBER_MODULE. It reads its images with OpenCV from ./dataset, listed in
// ./info.txt, as the original does; the tests write a few generated images there
// (tests/examples/) and compile it with tests/examples/stand_in/opencv2/opencv.hpp, which
// includes the two OpenCV modules it calls (Debian's opencv.hpp needs every module).
// The network (AlexNet on 224x224 images, 102 classes), the data pipeline and the training
// loop are the original's.
#include <opencv2/opencv.hpp>
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

using Data = std::vector<std::pair<std::string, long>>;

class CustomDataset : public ember::data::datasets::Dataset<CustomDataset> {
  using Example = ember::data::Example<>;

  const Data data;

 public:
  CustomDataset(const Data& data) : data(data) {}

  Example get(size_t index) {
    std::string path = options.datasetPath + data[index].first;
    auto mat = cv::imread(path);
    assert(!mat.empty());

    cv::resize(mat, mat, cv::Size(options.image_size, options.image_size));
    std::vector<cv::Mat> channels(3);
    cv::split(mat, channels);

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
