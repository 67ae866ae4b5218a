#include "core/file_util.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace brisk {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kNotFound, "cannot read {}", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace brisk
