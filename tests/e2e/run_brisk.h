// Runs the `brisk` binary built with the tests (BRISK_BINARY) for the end-to-end tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "test_util.h"

namespace brisk::testing {

struct RunResult {
  int exit_code;
  std::string out;  // stdout, and stderr too unless separate_stderr
  std::string err;  // stderr with separate_stderr
};

inline RunResult run_brisk(const std::string& args, bool separate_stderr = false) {
  std::string err_path;
  if (separate_stderr) err_path = (make_temp_dir("brisk-stderr") / "stderr.txt").string();
  const std::string command = std::string(BRISK_BINARY) + " " + args + (separate_stderr ? " 2>" + err_path : " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed for " + command);
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, separate_stderr ? read_file(err_path) : std::string()};
}

}  // namespace brisk::testing
