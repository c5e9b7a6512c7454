// The 0-dim torch::tensor(value) factories the libtorch examples call.
#include "core/testing.h"

namespace ember {
namespace {

TEST(Tensor, ScalarFactoriesAreZeroDimensional) {
  Tensor d = tensor(2.5);
  EXPECT_EQ(d.dim(), 0);
  EXPECT_EQ(d.scalar_type(), kFloat32);
  EXPECT_EQ(d.item<float>(), 2.5f);
  Tensor l = tensor(int64_t{7}, kLong);
  EXPECT_EQ(l.dim(), 0);
  EXPECT_EQ(l.scalar_type(), kInt64);
  EXPECT_EQ(l.item<int64_t>(), 7);
  EXPECT_EQ(tensor(3).scalar_type(), kInt64);
  EXPECT_EQ(tensor(3, kFloat64).item<double>(), 3.0);
  EXPECT_EQ(tensor(true).scalar_type(), kBool);
  Tensor leaf = tensor(1.5, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(leaf.is_leaf());
  EXPECT_TRUE(leaf.requires_grad());
  EXPECT_TRUE(testutil::throws_error([] { tensor(1.0, kCUDA); }, {"[tensor]", "cuda"}));
}

}  // namespace
}  // namespace ember
