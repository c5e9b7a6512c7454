// PyTorch's C++ MNIST example (github.com/pytorch/examples, cpp/mnist/mnist.cpp at 77f55b9),
// ported to ember. Differences from the original, line for line:
//   - namespace torch -> ember, <torch/torch.h> -> <ember/ember.h>;
//   - AT_ASSERT (c10's assertion macro) -> EMBER_ASSERT, as TORCH_MODULE -> EMBER_MODULE.
// Nothing else: it reads the MNIST IDX files from ./data as the original does. The tests run it
// in a directory of generated images (ctest examples.mnist) and of scikit-learn's 8x8 digits
// scaled into MNIST's 28x28 layout (examples.mnist_digits: ~86% after its 10 epochs; the digits
// example, digits.cpp, is the one tuned for those images).
#include <ember/ember.h>

#include <cstddef>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

// Where to find the MNIST dataset.
const char* kDataRoot = "./data";

// The batch size for training.
const int64_t kTrainBatchSize = 64;

// The batch size for testing.
const int64_t kTestBatchSize = 1000;

// The number of epochs to train.
const int64_t kNumberOfEpochs = 10;

// After how many batches to log a new update with the loss value.
const int64_t kLogInterval = 10;

struct Net : ember::nn::Module {
  Net()
      : conv1(ember::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(ember::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  ember::Tensor forward(ember::Tensor x) {
    x = ember::relu(ember::max_pool2d(conv1->forward(x), 2));
    x = ember::relu(
        ember::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = ember::relu(fc1->forward(x));
    x = ember::dropout(x, /*p=*/0.5, /*training=*/is_training());
    x = fc2->forward(x);
    return ember::log_softmax(x, /*dim=*/1);
  }

  ember::nn::Conv2d conv1;
  ember::nn::Conv2d conv2;
  ember::nn::Dropout2d conv2_drop;
  ember::nn::Linear fc1;
  ember::nn::Linear fc2;
};

template <typename DataLoader>
void train(
    size_t epoch,
    Net& model,
    ember::Device device,
    DataLoader& data_loader,
    ember::optim::Optimizer& optimizer,
    size_t dataset_size) {
  model.train();
  size_t batch_idx = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = ember::nll_loss(output, targets);
    EMBER_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();

    if (batch_idx++ % kLogInterval == 0) {
      std::printf(
          "\rTrain Epoch: %ld [%5ld/%5ld] Loss: %.4f",
          epoch,
          batch_idx * batch.data.size(0),
          dataset_size,
          loss.template item<float>());
    }
  }
}

template <typename DataLoader>
void test(
    Net& model,
    ember::Device device,
    DataLoader& data_loader,
    size_t dataset_size) {
  ember::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int32_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += ember::nll_loss(
                     output,
                     targets,
                     /*weight=*/{},
                     ember::Reduction::Sum)
                     .template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }

  test_loss /= dataset_size;
  std::printf(
      "\nTest set: Average loss: %.4f | Accuracy: %.3f\n",
      test_loss,
      static_cast<double>(correct) / dataset_size);
}

auto main() -> int {
  ember::manual_seed(1);

  ember::DeviceType device_type;
  if (ember::cuda::is_available()) {
    std::cout << "CUDA available! Training on GPU." << std::endl;
    device_type = ember::kCUDA;
  } else {
    std::cout << "Training on CPU." << std::endl;
    device_type = ember::kCPU;
  }
  ember::Device device(device_type);

  Net model;
  model.to(device);

  auto train_dataset = ember::data::datasets::MNIST(kDataRoot)
                           .map(ember::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(ember::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader =
      ember::data::make_data_loader<ember::data::samplers::SequentialSampler>(
          std::move(train_dataset), kTrainBatchSize);

  auto test_dataset = ember::data::datasets::MNIST(
                          kDataRoot, ember::data::datasets::MNIST::Mode::kTest)
                          .map(ember::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(ember::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader =
      ember::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  ember::optim::SGD optimizer(
      model.parameters(), ember::optim::SGDOptions(0.01).momentum(0.5));

  for (size_t epoch = 1; epoch <= kNumberOfEpochs; ++epoch) {
    train(epoch, model, device, *train_loader, optimizer, train_dataset_size);
    test(model, device, *test_loader, test_dataset_size);
  }
}
