// ember::save / ember::load: each kind round-trips, and a file of one kind is refused by
// another with both kinds named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/testing.h"
#include "ember/ember.h"
#include "ember/io/checkpoint.h"
#include "ember/io/module_io.h"

namespace ember {
namespace {

std::string temp_path(const std::string& name) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/ember_serialize_" + std::to_string(::getpid()) + "_" + test->name() + "_" + name;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}


struct NetImpl : nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", nn::Linear(3, 4));
    fc2 = register_module("fc2", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
EMBER_MODULE(Net);

TEST(Serialize, ModuleHolderAndModuleRoundTrip) {
  manual_seed(1);
  Net saved;
  const std::string path = temp_path("net");
  save(saved, path);
  Net loaded;  // other random weights
  ASSERT_FALSE(same_bytes(loaded->fc1->weight, saved->fc1->weight));
  load(loaded, path);
  for (const auto& item : saved->named_parameters())
    EXPECT_TRUE(same_bytes(item.value(), loaded->named_parameters()[item.key()])) << item.key();

  // A plain module (not a holder) and a shared_ptr take the same path.
  nn::LinearImpl plain(3, 4);
  save(static_cast<const nn::Module&>(plain), path);
  auto shared = std::make_shared<nn::LinearImpl>(3, 4);
  load(shared, path);
  EXPECT_TRUE(same_bytes(shared->weight, plain.weight));

  nn::Linear wrong(5, 4);
  EXPECT_TRUE(testutil::throws_error([&] { load(wrong, path); }, {"[ember::load]", path, "weight"}));
}

TEST(Serialize, OptimizerRoundTripContinuesTheSameSteps) {
  manual_seed(2);
  nn::Linear model(3, 2);
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(0.1));
  const Tensor x = randn({4, 3});
  auto step = [&](optim::Optimizer& opt, nn::Linear& m) {
    opt.zero_grad();
    m(x).square().sum().backward();
    opt.step();
  };
  step(optimizer, model);
  const std::string model_path = temp_path("model"), optim_path = temp_path("optim");
  save(model, model_path);
  save(optimizer, optim_path);
  step(optimizer, model);  // the reference's second step

  nn::Linear restored(3, 2);
  optim::Adam restored_optimizer(restored->parameters(), optim::AdamOptions(0.5));
  load(restored, model_path);
  load(restored_optimizer, optim_path);
  step(restored_optimizer, restored);
  EXPECT_TRUE(same_bytes(restored->weight, model->weight));
  EXPECT_TRUE(same_bytes(restored->bias, model->bias));
}

TEST(Serialize, TensorAndTensorVectorRoundTrip) {
  const std::string path = temp_path("tensor");
  Tensor t = arange(6, kFloat64).view({2, 3}).t();  // non-contiguous
  save(t, path);
  Tensor back;
  load(back, path);
  EXPECT_TRUE(same_bytes(back, t.contiguous()));
  back.add_(1);  // a copy, writable, not a view of the file

  std::vector<Tensor> tensors;
  for (int i = 0; i < 12; ++i) tensors.push_back(full({i % 3 + 1}, i, i % 2 ? kInt64 : kFloat32));
  tensors.push_back(tensor({true, false}));
  save(tensors, path);
  std::vector<Tensor> loaded = {ones({1})};
  load(loaded, path);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) EXPECT_TRUE(same_bytes(loaded[i], tensors[i])) << i;

  save(std::vector<Tensor>{}, path);
  load(loaded, path);
  EXPECT_TRUE(loaded.empty());
  EXPECT_TRUE(testutil::throws_error([&] { save(Tensor(), path); }, {"[ember::save]", "undefined"}));
}

TEST(Serialize, AFileOfOneKindIsRefusedByAnother) {
  const std::string module_path = temp_path("module"), optim_path = temp_path("optim"),
                    tensor_path = temp_path("tensor"), vector_path = temp_path("vector");
  nn::Linear model(2, 2);
  optim::SGD optimizer(model->parameters(), 0.1);
  save(model, module_path);
  save(optimizer, optim_path);
  save(ones({2}), tensor_path);
  save(std::vector<Tensor>{ones({2})}, vector_path);

  Tensor t;
  std::vector<Tensor> v;
  EXPECT_TRUE(testutil::throws_error([&] { load(model, tensor_path); }, {"[ember::load]", tensor_path, "holds a tensor, not a module"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(optimizer, module_path); }, {"holds a module, not an optimizer"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(t, optim_path); }, {"holds an optimizer, not a tensor"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(v, tensor_path); }, {"holds a tensor, not a vector of tensors"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(t, vector_path); }, {"holds a vector of tensors, not a tensor"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(model, vector_path); }, {"holds a vector of tensors, not a module"}));

  // Files of io::save (a plain state_dict) and training checkpoints are named as such.
  const std::string plain_path = temp_path("plain"), checkpoint_path = temp_path("checkpoint");
  io::save(*model, plain_path);
  io::save_checkpoint(checkpoint_path, *model, optimizer, 3);
  EXPECT_TRUE(testutil::throws_error([&] { load(model, plain_path); }, {"no recorded kind", "io::load", "not a module"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(optimizer, checkpoint_path); }, {"training checkpoint", "not an optimizer"}));
  // The optimizer rejects state of another shape without changing.
  nn::Linear bigger(3, 3);
  optim::Adam adam(bigger->parameters(), optim::AdamOptions(0.1));
  EXPECT_TRUE(testutil::throws_error([&] { load(adam, optim_path); }, {"[ember::load]", optim_path}));
}

// libtorch's other targets: a stream, a writer function, a buffer. Each holds the very bytes
// of the file that save(value, path) writes.
TEST(Serialize, StreamsWritersAndBuffersHoldTheFileBytes) {
  manual_seed(3);
  Net saved;
  const std::string path = temp_path("net");
  save(saved, path);
  std::ifstream file(path, std::ios::binary);
  const std::string file_bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());

  std::ostringstream out;
  save(saved, out);
  EXPECT_EQ(out.str(), file_bytes);
  std::string written;
  save(saved, [&](const void* data, size_t n) {
    written.append(static_cast<const char*>(data), n);
    return n;
  });
  EXPECT_EQ(written, file_bytes);

  Net from_stream, from_buffer;
  std::istringstream in(file_bytes);
  load(from_stream, in);
  load(from_buffer, written.data(), written.size(), Device(kCPU));
  for (const auto& item : saved->named_parameters()) {
    EXPECT_TRUE(same_bytes(item.value(), from_stream->named_parameters()[item.key()])) << item.key();
    EXPECT_TRUE(same_bytes(item.value(), from_buffer->named_parameters()[item.key()])) << item.key();
  }

  // Every kind goes through a stream; the kind check names the stream.
  std::stringstream tensor_stream, vector_stream, optim_stream;
  const Tensor t = arange(5, kFloat64);
  save(t, tensor_stream);
  save(std::vector<Tensor>{t, t.to(kInt64)}, vector_stream);
  optim::SGD sgd(saved->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  save(sgd, optim_stream);
  Tensor back;
  load(back, tensor_stream);
  EXPECT_TRUE(same_bytes(back, t));
  std::vector<Tensor> vector_back;
  load(vector_back, vector_stream);
  ASSERT_EQ(vector_back.size(), 2u);
  EXPECT_TRUE(same_bytes(vector_back[1], t.to(kInt64)));
  optim::SGD sgd_back(from_stream->parameters(), optim::SGDOptions(0.5));
  load(sgd_back, optim_stream);
  EXPECT_DOUBLE_EQ(sgd_back.param_groups()[0].options().get_lr(), 0.1);
  std::istringstream module_again(file_bytes);
  EXPECT_TRUE(testutil::throws_error([&] { load(back, module_again); }, {"[ember::load]", "'stream' holds a module, not a tensor"}));
}

TEST(Serialize, BadStreamsBuffersAndDevicesAreErrors) {
  Net net;
  std::ostringstream failed;
  failed.setstate(std::ios::badbit);
  EXPECT_TRUE(testutil::throws_error([&] { save(net, failed); }, {"stream", "failed"}));
  // A writer that stops short: libtorch's contract is the count of bytes written.
  EXPECT_TRUE(testutil::throws_error(
      [&] { save(net, [](const void*, size_t n) { return n / 2; }); }, {"writer function", "failed"}));
  EXPECT_TRUE(testutil::throws_error([&] { save(net, SaveTarget::Writer()); }, {"[ember::save]", "empty"}));

  std::ostringstream out;
  save(net, out);
  const std::string bytes = out.str();
  Net other;
  EXPECT_TRUE(testutil::throws_error([&] { load(other, bytes.data(), bytes.size() - 3); }, {"buffer"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(other, nullptr, 8); }, {"buffer", "null"}));
  std::istringstream empty("");
  EXPECT_TRUE(testutil::throws_error([&] { load(other, empty); }, {"stream"}));
  EXPECT_TRUE(testutil::throws_error([&] { load(other, bytes.data(), bytes.size(), Device("cuda:0")); },
                                     {"[ember::load]", "cuda:0", "not available"}));
}

}  // namespace
}  // namespace ember
