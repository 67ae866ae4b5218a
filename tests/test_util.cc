#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace brisk::testing {

// Environment overrides let binaries built on one machine run from another checkout (the GPU
// machine receives a copy of the tree at a different path).
std::filesystem::path test_data_dir() {
  const char* env = std::getenv("BRISK_TEST_DATA_DIR");
  return env && *env ? env : BRISK_TEST_DATA_DIR;
}
std::vector<std::string> test_model_names(const std::string& file) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(test_data_dir() / "models"))
    if (std::filesystem::exists(entry.path() / file)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
std::filesystem::path shared_testdata_dir() {
  const char* env = std::getenv("BRISK_SHARED_TESTDATA");
  return env && *env ? env : BRISK_SHARED_TESTDATA;
}

namespace {
struct TempDirs {
  std::vector<std::filesystem::path> paths;
  ~TempDirs() {
    std::error_code ec;
    for (auto& p : paths) std::filesystem::remove_all(p, ec);
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}
}  // namespace

std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::random_device rd;
  auto path = std::filesystem::temp_directory_path() /
              (prefix + "-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path);
  temp_dirs().paths.push_back(path);
  return path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void expect_error(const std::function<void()>& fn, ErrorCode code, const std::vector<std::string>& substrings) {
  try {
    fn();
    ADD_FAILURE() << "expected an error (" << error_code_name(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& s : substrings)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "'" << e.what() << "' does not name '" << s << "'";
  }
}

}  // namespace brisk::testing
