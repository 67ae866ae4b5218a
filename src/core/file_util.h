// Reading whole files with errors that name the path.
#pragma once

#include <filesystem>
#include <string>

namespace brisk {

// The file's bytes; kNotFound naming the path when it cannot be opened.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace brisk
