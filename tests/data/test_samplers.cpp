// Samplers: orders derived by hand for small cases, the random ones against an independent
// Fisher-Yates over the same random stream, and their argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "ember/data.h"
#include "ember/ember.h"

namespace ember::data::samplers {
namespace {

using Batches = std::vector<std::vector<size_t>>;

template <typename S>
Batches drain(S& sampler, size_t batch_size) {
  Batches out;
  while (auto batch = sampler.next(batch_size)) out.push_back(*batch);
  return out;
}

std::vector<size_t> flat(const Batches& batches) {
  std::vector<size_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

TEST(SequentialSampler, YieldsIndicesInOrder) {
  SequentialSampler sampler(5);
  EXPECT_EQ(drain(sampler, 2), (Batches{{0, 1}, {2, 3}, {4}}));
  EXPECT_FALSE(sampler.next(2).has_value());
  sampler.reset();
  EXPECT_EQ(drain(sampler, 3), (Batches{{0, 1, 2}, {3, 4}}));
  sampler.reset(2);
  EXPECT_EQ(drain(sampler, 5), (Batches{{0, 1}}));
  EXPECT_EQ(sampler.index(), 2u);
}

TEST(RandomSampler, IsRandpermOfTheDefaultGenerator) {
  manual_seed(7);
  Tensor expected = randperm(10);
  manual_seed(7);
  RandomSampler sampler(10);
  const std::vector<size_t> first = flat(drain(sampler, 4));
  ASSERT_EQ(first.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(first[i], static_cast<size_t>(expected[i].item<int64_t>()));
  std::vector<size_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> identity(10);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);

  // A new epoch draws the generator's next permutation.
  const GeneratorState before_reset = default_generator().get_state();
  sampler.reset();
  default_generator().set_state(before_reset);
  Tensor second_expected = randperm(10);
  const std::vector<size_t> second = flat(drain(sampler, 10));
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(second[i], static_cast<size_t>(second_expected[i].item<int64_t>()));
  EXPECT_NE(second, first);

  RandomSampler int32_indices(3, kInt32);
  int32_indices.reset(6);
  EXPECT_EQ(flat(drain(int32_indices, 4)).size(), 6u);
}

TEST(DistributedSequentialSampler, SplitsContiguouslyAndWrapsThePadding) {
  // size 5 over 2 replicas: ceil(5 / 2) = 3 each, the last replica's third index wraps to 0.
  DistributedSequentialSampler rank0(5, 2, 0), rank1(5, 2, 1);
  EXPECT_EQ(drain(rank0, 2), (Batches{{0, 1}, {2}}));
  EXPECT_EQ(drain(rank1, 2), (Batches{{3, 4}, {0}}));
  // Without duplicates: floor(5 / 2) = 2 each, index 4 is left out.
  DistributedSequentialSampler strict0(5, 2, 0, false), strict1(5, 2, 1, false);
  EXPECT_EQ(flat(drain(strict0, 8)), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(flat(drain(strict1, 8)), (std::vector<size_t>{2, 3}));
  strict1.reset(8);  // 4 each now
  EXPECT_EQ(flat(drain(strict1, 8)), (std::vector<size_t>{4, 5, 6, 7}));
}

// The shuffle the sampler documents, written out again: Fisher-Yates from the back with
// j = random_bits(epoch, i) mod (i + 1).
std::vector<size_t> shuffled(std::vector<size_t> values, uint64_t epoch) {
  for (size_t i = values.size() - 1; i > 0; --i) std::swap(values[i], values[random_bits(epoch, i) % (i + 1)]);
  return values;
}

TEST(DistributedRandomSampler, SharesOneEpochSeededShuffle) {
  // size 5, 2 replicas, duplicates: the list 0 1 2 3 4 0 shuffled, rank r takes [3r, 3r + 3).
  for (uint64_t epoch : {0u, 1u, 9u}) {
    const std::vector<size_t> order = shuffled({0, 1, 2, 3, 4, 0}, epoch);
    DistributedRandomSampler rank0(5, 2, 0), rank1(5, 2, 1);
    rank0.set_epoch(epoch);
    rank1.set_epoch(epoch);
    rank0.reset();
    rank1.reset();
    EXPECT_EQ(flat(drain(rank0, 2)), std::vector<size_t>(order.begin(), order.begin() + 3));
    EXPECT_EQ(flat(drain(rank1, 2)), std::vector<size_t>(order.begin() + 3, order.end()));
    rank0.reset();  // the same epoch gives the same order
    EXPECT_EQ(flat(drain(rank0, 3)), std::vector<size_t>(order.begin(), order.begin() + 3));
  }
  // Without duplicates only 0..3 take part: 2 each.
  DistributedRandomSampler strict1(5, 2, 1, false);
  const std::vector<size_t> order = shuffled({0, 1, 2, 3}, 0);
  EXPECT_EQ(flat(drain(strict1, 5)), std::vector<size_t>(order.begin() + 2, order.end()));
  // One replica: a permutation of everything; another epoch, another permutation.
  DistributedRandomSampler single(20);
  const std::vector<size_t> epoch0 = flat(drain(single, 7));
  single.set_epoch(1);
  single.reset();
  const std::vector<size_t> epoch1 = flat(drain(single, 7));
  EXPECT_NE(epoch0, epoch1);
  std::vector<size_t> sorted = epoch1;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(single.epoch(), 1u);
}

TEST(DistributedSampler, RejectsBadReplicaArguments) {
  try {
    DistributedRandomSampler(10, 2, 2);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank must be < num_replicas, got rank 2 and num_replicas 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(DistributedSequentialSampler(10, 0, 0), Error);
  EXPECT_THROW(DistributedSequentialSampler(10, 3, 7), Error);
}

}  // namespace
}  // namespace ember::data::samplers
