// Devices as libtorch spells them: a libtorch program that picks its device with
// cuda::is_available() runs unchanged on the CPU; any other device is a clear error.
#include <gtest/gtest.h>

#include <sstream>

#include "ember/ember.h"
#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

TEST(Device, ParsesAndPrintsLikeLibtorch) {
  EXPECT_EQ(Device("cpu").type(), kCPU);
  EXPECT_FALSE(Device("cpu").has_index());
  EXPECT_EQ(Device("cuda:1").type(), kCUDA);
  EXPECT_EQ(Device("cuda:1").index(), 1);
  EXPECT_EQ(Device("mps").type(), kMPS);
  EXPECT_EQ(Device("cpu:0").str(), "cpu:0");
  EXPECT_EQ(Device(kCUDA, 3).str(), "cuda:3");
  EXPECT_EQ(Device(kCPU), Device("cpu"));
  EXPECT_NE(Device(kCPU), Device(kCPU, 0));
  EXPECT_TRUE(Device(kCPU).is_cpu());
  EXPECT_TRUE(Device(kCUDA).is_cuda());
  std::ostringstream out;
  out << Device("xpu:2") << " " << kMeta;
  EXPECT_EQ(out.str(), "xpu:2 meta");
  EXPECT_EQ(DeviceTypeName(kCUDA, false), "CUDA");
}

TEST(Device, RejectsMalformedStringsAndIndices) {
  EXPECT_TRUE(throws_error([] { Device("gpu"); }, {"[Device]", "'gpu'"}));
  EXPECT_TRUE(throws_error([] { Device("cuda:"); }, {"[Device]", "non-negative integer"}));
  EXPECT_TRUE(throws_error([] { Device("cuda:-1"); }, {"[Device]", "non-negative integer"}));
  EXPECT_TRUE(throws_error([] { Device("cuda:01"); }, {"[Device]", "non-negative integer"}));
  EXPECT_TRUE(throws_error([] { Device("cuda:1x"); }, {"[Device]", "non-negative integer"}));
  EXPECT_TRUE(throws_error([] { Device("cuda:128"); }, {"[Device]", "index 128 is out of range"}));
  EXPECT_TRUE(throws_error([] { Device("cuda:99999999999"); }, {"[Device]", "out of range"}));
  EXPECT_TRUE(throws_error([] { Device("cpu:1"); }, {"[Device]", "CPU device index must be -1 or zero, got 1"}));
  EXPECT_TRUE(throws_error([] { Device(kCUDA, -2); }, {"[Device]", "got -2"}));
}

TEST(Device, CpuOnlyAsLibtorchWithoutCuda) {
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0u);
  EXPECT_FALSE(cuda::cudnn_is_available());
  // The idiom of PyTorch's C++ examples picks the CPU.
  Device device(cuda::is_available() ? kCUDA : kCPU);
  Tensor x = randn({2, 3}, TensorOptions().dtype(kFloat64).device(device));
  EXPECT_EQ(x.device(), Device(kCPU));
  EXPECT_TRUE(x.is_cpu());
  EXPECT_FALSE(x.is_cuda());
  EXPECT_EQ(x.options().device(), Device(kCPU));
  EXPECT_EQ(x.options().dtype(), kFloat64);
}

TEST(Device, ToKeepsTheTensorOnTheCpuAndTheDtypeUnlessNamed) {
  Tensor x = arange(6, kFloat64).reshape({2, 3});
  Tensor same = x.to(kCPU);
  EXPECT_EQ(same.scalar_type(), kFloat64);
  EXPECT_EQ(same.data_ptr(), x.data_ptr());  // no copy, as libtorch when nothing changes
  EXPECT_EQ(x.to(Device("cpu")).data_ptr(), x.data_ptr());
  EXPECT_EQ(x.cpu().data_ptr(), x.data_ptr());
  EXPECT_NE(x.to(kCPU, false, true).data_ptr(), x.data_ptr());  // copy=true copies
  Tensor as_float = x.to(Device(kCPU), kFloat32);
  EXPECT_EQ(as_float.scalar_type(), kFloat32);
  EXPECT_EQ(as_float.to(x).scalar_type(), kFloat64);
  EXPECT_EQ(x.to(TensorOptions().dtype(kInt64)).scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(as_float.to(kFloat64), values(x)));
}

TEST(Device, OtherDevicesAreErrorsNamingTheOpAndDevice) {
  Tensor x = ones({2});
  EXPECT_TRUE(throws_error([&] { x.to(kCUDA); }, {"[to]", "device cuda is not available: ember runs on the CPU only"}));
  EXPECT_TRUE(throws_error([&] { x.to(Device("cuda:1"), kFloat64); }, {"[to]", "cuda:1"}));
  EXPECT_TRUE(throws_error([&] { x.cuda(); }, {"[to]", "cuda"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, kCUDA); }, {"[zeros]", "device cuda"}));
  EXPECT_TRUE(throws_error([] { empty({2}, TensorOptions().device(kMPS)); }, {"[empty]", "device mps"}));
  EXPECT_TRUE(throws_error([] { full({2}, 1.0, TensorOptions().device(kCUDA)); }, {"[full]", "cuda"}));
  EXPECT_TRUE(throws_error([] { arange(3, TensorOptions().device(kCUDA)); }, {"[arange]", "cuda"}));
  EXPECT_TRUE(throws_error([] { randn({2}, TensorOptions().device(kCUDA)); }, {"[randn]", "cuda"}));
  EXPECT_TRUE(throws_error([] { randint(0, 5, {2}, TensorOptions().device(kCUDA)); }, {"[randint]", "cuda"}));
  EXPECT_TRUE(throws_error([] { tensor({1.0, 2.0}, TensorOptions().device(kCUDA)); }, {"[tensor]", "cuda"}));
  nn::Linear linear(2, 3);
  linear->to(kCPU);
  linear->to(Device(kCPU), kFloat64);
  EXPECT_EQ(linear->weight.scalar_type(), kFloat64);
  EXPECT_TRUE(throws_error([&] { linear->to(kCUDA); }, {"[Module::to]", "device cuda"}));
}

}  // namespace
}  // namespace ember
