// nn::utils beyond clipping: parameters to and from one vector, the packing of padded
// sequences (values derived by hand), and the compile-time helpers of nn/static.h.
#include <string>
#include <type_traits>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace rnn = ember::nn::utils::rnn;
using Vec = std::vector<double>;

TEST(ParameterVector, FlattensAndCopiesBack) {
  std::vector<Tensor> parameters = {ember::arange(3, kFloat64), ember::arange(4, kFloat64).view({2, 2})};
  const Tensor vec = nn::utils::parameters_to_vector(parameters);
  EXPECT_TRUE(all_close(vec, {0, 1, 2, 0, 1, 2, 3}, {0, 0}));
  std::vector<Tensor> targets = {ember::zeros({3}, kFloat64), ember::zeros({2, 2}, kFloat64)};
  nn::utils::vector_to_parameters(ember::arange(7, kFloat64), targets);
  EXPECT_TRUE(all_close(targets[0], {0, 1, 2}, {0, 0}));
  EXPECT_TRUE(all_close(targets[1], {3, 4, 5, 6}, {0, 0}));
  EXPECT_TRUE(throws_error([&] { nn::utils::vector_to_parameters(ember::arange(6, kFloat64), targets); },
                           {"vector_to_parameters", "6", "7"}));
}

TEST(PackedSequence, PacksStepByStepAndUnpacksInTheOriginalOrder) {
  const Tensor a = ember::tensor({1.0, 2.0, 3.0}), b = ember::tensor({4.0, 5.0}), c = ember::tensor({6.0});
  // Steps: (a0, b0, c0), (a1, b1), (a2) once sorted by decreasing length.
  auto packed = rnn::pack_sequence({b, c, a}, /*enforce_sorted=*/false);
  EXPECT_TRUE(all_close(packed.data(), {1, 4, 6, 2, 5, 3}, {0, 0}));
  EXPECT_EQ(values(packed.batch_sizes()), (Vec{3, 2, 1}));
  EXPECT_EQ(values(packed.sorted_indices()), (Vec{2, 0, 1}));
  EXPECT_EQ(values(packed.unsorted_indices()), (Vec{1, 2, 0}));
  auto [padded, lengths] = rnn::pad_packed_sequence(packed, /*batch_first=*/true, /*padding_value=*/-1, 4);
  EXPECT_TRUE(all_close(padded, {4, 5, -1, -1, 6, -1, -1, -1, 1, 2, 3, -1}, {0, 0}));
  EXPECT_EQ(values(lengths), (Vec{2, 1, 3}));
  EXPECT_TRUE(throws_error([&] { rnn::pad_packed_sequence(packed, false, 0, 2); },
                           {"Expected total_length to be at least the length of the longest sequence"}));
  EXPECT_TRUE(throws_error([&] { rnn::pack_sequence({b, c, a}, /*enforce_sorted=*/true); },
                           {"must be sorted in decreasing order", "You can pass `enforce_sorted=False`"}));
  EXPECT_TRUE(throws_error([] { rnn::pack_padded_sequence(ember::randn({0, 0}), ember::tensor(std::vector<int64_t>{})); },
                           {"Cannot pack empty tensors"}));
}

TEST(PackedSequence, PadSequenceAndGradientsFlowBackToTheSteps) {
  const Tensor a = leaf(ember::tensor({1.0, 2.0, 3.0})), b = leaf(ember::tensor({4.0}));
  const Tensor padded = rnn::pad_sequence({a, b}, /*batch_first=*/false, /*padding_value=*/9);
  EXPECT_TRUE(all_close(padded, {1, 4, 2, 9, 3, 9}, {0, 0}));
  auto packed = rnn::pack_padded_sequence(padded, ember::tensor({3, 1}));
  EXPECT_TRUE(all_close(packed.data(), {1, 4, 2, 3}, {0, 0}));
  (packed.data() * ember::tensor({1.0, 2.0, 3.0, 4.0})).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {1, 3, 4}, {0, 0}));
  EXPECT_TRUE(all_close(b.grad(), {2}, {0, 0}));
  EXPECT_FALSE(packed.sorted_indices().defined());
}

struct WithForward : nn::Module {
  int forward(const Tensor&) { return 1; }
};
struct WithoutForward : nn::Module {};

TEST(StaticHelpers, TraitsAndApply) {
  static_assert(all_of<>::value && all_of<true, true>::value && !all_of<true, false>::value);
  static_assert(!any_of<>::value && any_of<false, true>::value);
  static_assert(ember::detail::is_module<WithForward&>::value && !ember::detail::is_module<int>::value);
  static_assert(std::is_same_v<ember::detail::return_type_of_forward<WithForward, Tensor>::type, int>);
  static_assert(std::is_same_v<ember::detail::return_type_of_forward<WithoutForward>::type, void>);
  static_assert(ember::detail::check_not_lvalue_references<int, float&&>() &&
                !ember::detail::check_not_lvalue_references<int&>());
  std::string joined;
  ember::apply([&](int x) { joined += std::to_string(x); }, 1, 2, 3);
  EXPECT_EQ(joined, "123");
}

}  // namespace
}  // namespace ember::nntest
