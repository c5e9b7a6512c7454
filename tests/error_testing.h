// Checks of the ember::Error a call throws, shared by the suites that test named errors.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/error.h"

namespace ember::testutil {

// The message of the ember::Error that `body` throws, "" when it throws none.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// `body` throws an ember::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& body, const std::vector<std::string>& parts) {
  const std::string message = error_of(body);
  ASSERT_FALSE(message.empty()) << "no error; expected one naming " << ::testing::PrintToString(parts);
  for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message << "\nlacks: " << part;
}

}  // namespace ember::testutil
