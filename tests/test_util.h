// Shared helpers for brisk's tests.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "brisk/status.h"

namespace brisk::testing {

// tests/data in the source tree.
std::filesystem::path test_data_dir();
// The test models (folders of tests/data/models) that hold `file`, sorted by name.
std::vector<std::string> test_model_names(const std::string& file);
// ../shared/testdata (may be absent: tests that need it skip with GTEST_SKIP()).
std::filesystem::path shared_testdata_dir();
// A fresh empty temporary folder, removed at process exit.
std::filesystem::path make_temp_dir(const std::string& prefix);
std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& content);

// Expects fn to throw brisk::Error with the code and a message containing every substring
// (an error must name what is wrong).
void expect_error(const std::function<void()>& fn, ErrorCode code, const std::vector<std::string>& substrings);

}  // namespace brisk::testing

// Skips the current test when the shared test data folder is missing.
#define BRISK_REQUIRE_SHARED_TESTDATA()                                                   \
  do {                                                                                    \
    if (!std::filesystem::exists(::brisk::testing::shared_testdata_dir()))                \
      GTEST_SKIP() << "shared test data not found at "                                    \
                   << ::brisk::testing::shared_testdata_dir() << "; skipping";            \
  } while (0)
