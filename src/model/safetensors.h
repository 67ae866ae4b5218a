// Reading *.safetensors files by mmap: an 8-byte little-endian header length, a JSON header
// mapping tensor names to {dtype, shape, data_offsets}, then the raw data. Every malformed or
// truncated file produces an Error (kCorruptData) naming the file and what is wrong; nothing
// read from the file is trusted before it is checked.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace brisk {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  size_t begin = 0;  // byte offsets into the data section
  size_t end = 0;
};

// One mapped file. Views returned by tensor() stay valid while the file object lives.
class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);
  // Parses a header held in memory (used by the parser's fuzz tests); `data_size` is the number
  // of bytes available after the header.
  static std::vector<SafetensorsEntry> parse_header(std::string_view header_json, size_t data_size,
                                                    const std::string& file_name);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // A read-only host view of the named tensor; kNotFound naming the tensor and file if absent.
  TensorView tensor(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  const char* data_ = nullptr;  // start of the data section
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// All safetensors of a model folder: model.safetensors, or the shards listed by
// model.safetensors.index.json (every listed shard must exist and hold what the index says),
// or, without an index, every *.safetensors in the folder.
class Checkpoint {
 public:
  static Checkpoint open(const std::filesystem::path& model_dir);

  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  TensorView tensor(const std::string& name) const;  // kNotFound naming tensor and folder
  // The file that holds the tensor (for error messages).
  const std::filesystem::path& file_of(const std::string& name) const;
  std::vector<std::string> tensor_names() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // tensor name -> index into files_
};

// Writes tensors to a .safetensors file (used by tests and by `brisk quantize`).
struct SafetensorsWriteEntry {
  std::string name;
  TensorView tensor;  // contiguous host view
};
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsWriteEntry>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Safetensors dtype strings ("BF16", "F32", ...) <-> DType; unknown strings are kUnsupported.
DType dtype_from_safetensors(const std::string& name, const std::string& context);
std::string dtype_to_safetensors(DType dtype);

}  // namespace brisk
