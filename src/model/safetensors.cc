#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_util.h"

namespace brisk {
namespace {

using nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, which also bounds the
// memory a hostile file can make us spend on parsing.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kLengthPrefixBytes = 8;


// A non-negative JSON integer that fits in int64; nullopt for anything else (floats,
// negatives, strings, values above 2^63-1).
std::optional<int64_t> non_negative_int(const json& value) {
  auto v = json_int64(value);
  if (v && *v < 0) return std::nullopt;
  return v;
}

struct ParsedHeader {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& file_name) {
  if (!value.is_object())
    throw_error(ErrorCode::kCorruptData, "{}: '__metadata__' must be an object of strings, got {}", file_name,
                describe_json(value));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      throw_error(ErrorCode::kCorruptData, "{}: '__metadata__' value for key '{}' must be a string, got {}",
                  file_name, key, describe_json(item));
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

Shape parse_shape(const json& value, const std::string& where) {
  if (!value.is_array())
    throw_error(ErrorCode::kCorruptData, "{}: 'shape' must be an array of non-negative integers, got {}",
                where, describe_json(value));
  if (value.size() > static_cast<size_t>(Shape::kMaxDims))
    throw_error(ErrorCode::kUnsupported, "{}: shape has {} dimensions; brisk supports at most {}", where,
                value.size(), Shape::kMaxDims);
  Shape shape;
  for (const json& dim : value) {
    auto d = non_negative_int(dim);
    if (!d)
      throw_error(ErrorCode::kCorruptData, "{}: 'shape' dimensions must be non-negative integers, got {}",
                  where, describe_json(dim));
    shape.push_back(*d);
  }
  return shape;
}

// Bytes that `shape` of `dtype` occupies. The product of the non-zero dimensions must fit in
// int64 even when another dimension is zero, so that strides computed later cannot overflow.
uint64_t checked_num_bytes(const Shape& shape, DType dtype, const std::string& where) {
  uint64_t bytes = static_cast<uint64_t>(dtype_bits(dtype) / 8);
  bool has_zero = false;
  for (int64_t dim : shape) {
    if (dim == 0) {
      has_zero = true;
      continue;
    }
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw_error(ErrorCode::kCorruptData, "{}: shape {} is too large", where, shape.to_string());
  }
  return has_zero ? 0 : bytes;
}

SafetensorsEntry parse_entry(const std::string& name, const json& value, size_t data_size,
                             const std::string& file_name) {
  std::string where = fmt::format("{}: tensor '{}'", file_name, name);
  if (!value.is_object())
    throw_error(ErrorCode::kCorruptData, "{}: entry must be an object, got {}", where, describe_json(value));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) throw_error(ErrorCode::kCorruptData, "{}: entry is missing '{}'", where, key);

  SafetensorsEntry entry;
  entry.name = name;
  const json& dtype = value.at("dtype");
  if (!dtype.is_string())
    throw_error(ErrorCode::kCorruptData, "{}: 'dtype' must be a string, got {}", where, describe_json(dtype));
  entry.dtype = dtype_from_safetensors(dtype.get<std::string>(), where);
  entry.shape = parse_shape(value.at("shape"), where);

  const json& offsets = value.at("data_offsets");
  std::optional<int64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = non_negative_int(offsets[0]);
    end = non_negative_int(offsets[1]);
  }
  if (!begin || !end || *begin > *end)
    throw_error(ErrorCode::kCorruptData,
                "{}: 'data_offsets' must be two non-negative integers [begin, end] with begin <= end, got {}",
                where, describe_json(offsets));
  if (static_cast<uint64_t>(*end) > data_size)
    throw_error(ErrorCode::kCorruptData,
                "{}: data_offsets [{}, {}] extend beyond the data section of {} bytes (truncated file?)",
                where, *begin, *end, data_size);
  entry.begin = static_cast<size_t>(*begin);
  entry.end = static_cast<size_t>(*end);

  uint64_t expected = checked_num_bytes(entry.shape, entry.dtype, where);
  if (entry.end - entry.begin != expected)
    throw_error(ErrorCode::kCorruptData, "{}: data_offsets [{}, {}] hold {} bytes but {} {} needs {}", where,
                entry.begin, entry.end, entry.end - entry.begin, dtype.get<std::string>(),
                entry.shape.to_string(), expected);
  return entry;
}

ParsedHeader parse(std::string_view header_json, size_t data_size, const std::string& file_name) {
  json header;
  try {
    header = json::parse(header_json.begin(), header_json.end(), nullptr, /*allow_exceptions=*/false);
  } catch (const json::exception&) {  // belt and braces: the non-throwing parse should not get here
    header = json(json::value_t::discarded);
  }
  if (header.is_discarded()) throw_error(ErrorCode::kCorruptData, "{}: header is not valid JSON", file_name);
  if (!header.is_object())
    throw_error(ErrorCode::kCorruptData, "{}: header must be a JSON object, got {}", file_name,
                describe_json(header));
  ParsedHeader parsed;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      parsed.metadata = parse_metadata(value, file_name);
      continue;
    }
    parsed.entries.push_back(parse_entry(key, value, data_size, file_name));
  }
  return parsed;
}

// Closes a file descriptor on every path out of SafetensorsFile::open.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

uint64_t read_le64(const unsigned char* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

DType dtype_from_safetensors(const std::string& name, const std::string& context) {
  static const std::map<std::string, DType, std::less<>> kByName = {
      {"F32", DType::kF32}, {"F16", DType::kF16},   {"BF16", DType::kBF16},      {"I64", DType::kI64},
      {"I32", DType::kI32}, {"I16", DType::kI16},   {"I8", DType::kI8},          {"U8", DType::kU8},
      {"U32", DType::kU32}, {"BOOL", DType::kBool}, {"F8_E4M3", DType::kF8E4M3}, {"F8_E5M2", DType::kF8E5M2},
  };
  auto it = kByName.find(name);
  if (it != kByName.end()) return it->second;
  if (name == "F64")
    throw_error(ErrorCode::kUnsupported, "{}: dtype F64 is not supported (no float64 kernels)", context);
  throw_error(ErrorCode::kUnsupported, "{}: unknown or unsupported safetensors dtype '{}'", context,
              name.size() > 32 ? name.substr(0, 32) + "..." : name);
}

std::string dtype_to_safetensors(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF8E4M3: return "F8_E4M3";
    case DType::kF8E5M2: return "F8_E5M2";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kI16: return "I16";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kU32: return "U32";
    case DType::kBool: return "BOOL";
    case DType::kI4: break;  // packed int4 is stored in I32 words by AWQ-style checkpoints
  }
  throw_error(ErrorCode::kUnsupported, "dtype {} has no safetensors equivalent", dtype_name(dtype));
}

std::vector<SafetensorsEntry> SafetensorsFile::parse_header(std::string_view header_json, size_t data_size,
                                                            const std::string& file_name) {
  return parse(header_json, data_size, file_name).entries;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument, "{}: cannot open: {}",
                name, std::strerror(err));
  }
  FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    throw_error(ErrorCode::kInvalidArgument, "{}: cannot stat: {}", name, std::strerror(errno));
  if (!S_ISREG(info.st_mode)) throw_error(ErrorCode::kInvalidArgument, "{}: not a regular file", name);
  const auto file_size = static_cast<uint64_t>(info.st_size);
  if (file_size < kLengthPrefixBytes)
    throw_error(ErrorCode::kCorruptData, "{}: file is {} bytes, shorter than the 8-byte header length", name,
                file_size);

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  // MAP_PRIVATE + PROT_READ: pages come from the page cache on demand and are never written.
  void* mapping = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping == MAP_FAILED) {
    int err = errno;
    throw_error(err == ENOMEM ? ErrorCode::kOutOfMemory : ErrorCode::kInvalidArgument,
                "{}: cannot mmap {} bytes: {}", name, file_size, std::strerror(err));
  }
  file->mapping_ = mapping;  // from here on the destructor unmaps, also if parsing throws
  file->mapping_size_ = file_size;

  const auto* bytes = static_cast<const unsigned char*>(mapping);
  uint64_t header_size = read_le64(bytes);
  if (header_size > kMaxHeaderBytes)
    throw_error(ErrorCode::kCorruptData, "{}: header length {} is implausibly large (limit {})", name,
                header_size, kMaxHeaderBytes);
  if (header_size > file_size - kLengthPrefixBytes)
    throw_error(ErrorCode::kCorruptData, "{}: header length {} exceeds the {} bytes after the length prefix",
                name, header_size, file_size - kLengthPrefixBytes);
  std::string_view header(reinterpret_cast<const char*>(bytes + kLengthPrefixBytes), header_size);
  size_t data_size = file_size - kLengthPrefixBytes - header_size;
  file->data_ = reinterpret_cast<const char*>(bytes) + kLengthPrefixBytes + header_size;

  ParsedHeader parsed = parse(header, data_size, name);
  for (auto& entry : parsed.entries) {
    std::string key = entry.name;
    file->entries_.emplace(std::move(key), std::move(entry));
  }
  file->metadata_ = std::move(parsed.metadata);
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
}

TensorView SafetensorsFile::tensor(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw_error(ErrorCode::kNotFound, "tensor '{}' not found in {}", name, path_.string());
  const SafetensorsEntry& entry = it->second;
  // The mapping is read-only; TensorView has no const flavour, so callers must not write.
  return TensorView(const_cast<char*>(data_ + entry.begin), entry.dtype, entry.shape, Device::kCpu);
}

// ---------------------------------------------------------------------------------------------
// Checkpoint

namespace {

// Shards named by an index, in first-mention order, each with the tensors the index puts there.
struct IndexedShards {
  std::vector<std::string> files;
  std::map<std::string, std::vector<std::string>> tensors_by_file;
};

IndexedShards read_index(const std::filesystem::path& index_path) {
  const std::string name = index_path.string();
  std::ifstream in(index_path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kNotFound, "{}: cannot open", name);
  json index = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded()) throw_error(ErrorCode::kCorruptData, "{}: not valid JSON", name);
  if (!index.is_object() || !index.contains("weight_map") || !index.at("weight_map").is_object())
    throw_error(ErrorCode::kCorruptData, "{}: expected an object with a 'weight_map' object", name);

  IndexedShards shards;
  for (const auto& [tensor, file] : index.at("weight_map").items()) {
    if (!file.is_string())
      throw_error(ErrorCode::kCorruptData, "{}: weight_map entry for '{}' must be a file name, got {}", name,
                  tensor, describe_json(file));
    std::filesystem::path shard(file.get<std::string>());
    // The index is data from the internet: keep it from pointing outside the model folder.
    bool escapes = shard.empty() || shard.is_absolute() ||
                   std::any_of(shard.begin(), shard.end(), [](const auto& part) { return part == ".."; });
    if (escapes)
      throw_error(ErrorCode::kCorruptData,
                  "{}: weight_map entry for '{}' names '{}', not a file in the model folder", name, tensor,
                  shard.string());
    auto [it, inserted] = shards.tensors_by_file.try_emplace(shard.string());
    if (inserted) shards.files.push_back(shard.string());
    it->second.push_back(tensor);
  }
  return shards;
}

}  // namespace

Checkpoint Checkpoint::open(const std::filesystem::path& model_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec))
    throw_error(ErrorCode::kNotFound, "model folder {} does not exist or is not a folder",
                model_dir.string());
  Checkpoint checkpoint;
  checkpoint.dir_ = model_dir;

  const auto single = model_dir / "model.safetensors";
  const auto index_path = model_dir / "model.safetensors.index.json";
  std::vector<std::filesystem::path> paths;
  std::optional<IndexedShards> index;
  if (std::filesystem::is_regular_file(single, ec)) {
    paths.push_back(single);
  } else if (std::filesystem::is_regular_file(index_path, ec)) {
    index = read_index(index_path);
    for (const auto& file : index->files) {
      auto path = model_dir / file;
      if (!std::filesystem::is_regular_file(path, ec))
        throw_error(ErrorCode::kNotFound, "{}: shard {} is listed but {} does not exist", index_path.string(),
                    file, path.string());
      paths.push_back(path);
    }
  } else {
    for (const auto& item : std::filesystem::directory_iterator(model_dir, ec))
      if (item.path().extension() == ".safetensors" && item.is_regular_file(ec)) paths.push_back(item.path());
    std::sort(paths.begin(), paths.end());
  }
  if (paths.empty())
    throw_error(ErrorCode::kNotFound, "no *.safetensors files in model folder {}", model_dir.string());

  for (const auto& path : paths) {
    std::shared_ptr<SafetensorsFile> file = SafetensorsFile::open(path);
    size_t file_index = checkpoint.files_.size();
    for (const auto& [name, entry] : file->entries()) {
      auto [it, inserted] = checkpoint.where_.emplace(name, file_index);
      if (!inserted)
        throw_error(ErrorCode::kCorruptData, "tensor '{}' appears in both {} and {}", name,
                    checkpoint.files_[it->second]->path().string(), path.string());
    }
    checkpoint.files_.push_back(std::move(file));
  }

  if (index) {
    for (size_t i = 0; i < index->files.size(); ++i)
      for (const auto& tensor : index->tensors_by_file.at(index->files[i]))
        if (!checkpoint.files_[i]->contains(tensor))
          throw_error(ErrorCode::kCorruptData,
                      "{}: tensor '{}' is listed in shard {} but {} does not hold it", index_path.string(),
                      tensor, index->files[i], paths[i].string());
  }
  return checkpoint;
}

TensorView Checkpoint::tensor(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    throw_error(ErrorCode::kNotFound, "tensor '{}' not found in the checkpoint in {}", name, dir_.string());
  return files_[it->second]->tensor(name);
}

const std::filesystem::path& Checkpoint::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    throw_error(ErrorCode::kNotFound, "tensor '{}' not found in the checkpoint in {}", name, dir_.string());
  return files_[it->second]->path();
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(where_.size());
  for (const auto& [name, file_index] : where_) names.push_back(name);
  return names;
}

// ---------------------------------------------------------------------------------------------
// Writing

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsWriteEntry>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string name = path.string();
  std::set<std::string> seen;
  for (const auto& t : tensors) {
    BRISK_CHECK(t.name != "__metadata__", "{}: '__metadata__' is reserved and cannot name a tensor", name);
    BRISK_CHECK(seen.insert(t.name).second, "{}: tensor '{}' is given twice", name, t.name);
    BRISK_CHECK(t.tensor.device() == Device::kCpu, "{}: tensor '{}' is not in host memory", name, t.name);
    BRISK_CHECK(t.tensor.is_contiguous(), "{}: tensor '{}' ({}) is not contiguous", name, t.name,
                t.tensor.describe());
    BRISK_CHECK(!t.tensor.empty() || t.tensor.num_elements() == 0, "{}: tensor '{}' has no data", name,
                t.name);
  }

  // Largest elements first: every offset is then a multiple of its element size (all sizes are
  // powers of two and the data section starts 8-aligned), with no holes between tensors.
  std::vector<const SafetensorsWriteEntry*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    int bits_a = dtype_bits(a->tensor.dtype()), bits_b = dtype_bits(b->tensor.dtype());
    return bits_a != bits_b ? bits_a > bits_b : a->name < b->name;
  });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto* t : order) {
    size_t num_bytes = t->tensor.num_bytes();
    header[t->name] = {{"dtype", dtype_to_safetensors(t->tensor.dtype())},
                       {"shape", std::vector<int64_t>(t->tensor.shape().begin(), t->tensor.shape().end())},
                       {"data_offsets", {offset, offset + num_bytes}}};
    offset += num_bytes;
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  // Write next to the target and rename, so a crash never leaves a half-written checkpoint.
  auto tmp_path = path;
  tmp_path += ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
    if (!out)
      throw_error(ErrorCode::kInvalidArgument, "{}: cannot open {} for writing: {}", name, tmp_path.string(),
                  std::strerror(errno));
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header_text.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), sizeof(length));
    out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const auto* t : order)
      if (t->tensor.num_bytes() > 0)  // an empty tensor may have no data pointer at all
        out.write(static_cast<const char*>(t->tensor.data()),
                  static_cast<std::streamsize>(t->tensor.num_bytes()));
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(tmp_path, ec);
      throw_error(ErrorCode::kInvalidArgument, "{}: writing {} failed (disk full?)", name, tmp_path.string());
    }
  }
  std::filesystem::rename(tmp_path, path, ec);
  if (ec)
    throw_error(ErrorCode::kInvalidArgument, "{}: cannot rename from {}: {}", name, tmp_path.string(),
                ec.message());
}

}  // namespace brisk
