// distributed_worker: runs the GoogleTest cases of tests/distributed/worker as one rank.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
