// Helpers shared by the tokenizer tests: the shared real tokenizer folders and small
// converters.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace brisk::testing {

inline std::filesystem::path shared_tokenizer_dir(const std::string& name) {
  return shared_testdata_dir() / "tokenizers" / name;
}

// A folder holding only `file` of a shared tokenizer (to pick one of several formats).
inline std::filesystem::path folder_with(const std::string& name, const std::string& file) {
  auto dir = make_temp_dir("brisk-tok-" + name);
  std::filesystem::copy_file(shared_tokenizer_dir(name) / file, dir / file);
  return dir;
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace brisk::testing
