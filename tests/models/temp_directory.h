// A scratch directory per test for the model tests, removed with it.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ember::testutil {

// A test name as a file name part.
inline std::string sanitized(std::string name) {
  for (char& c : name)
    if (c == '/') c = '_';
  return name;
}

// A fresh directory under the test temp dir, removed with the fixture.
class TempDirectory {
 public:
  explicit TempDirectory(const std::string& name) {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "/ember_test_" + std::to_string(static_cast<long>(::getpid())) + "_" +
            sanitized(test->name()) + "_" + name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ember::testutil
