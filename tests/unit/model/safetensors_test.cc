// Safetensors reading and writing: round trips, sharded checkpoints, every malformed-input
// error (code + a message naming the file and field), and a property fuzz of the parser.
#include "model/safetensors.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "brisk/status.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;
using testing::make_temp_dir;
using testing::read_file;
using testing::write_file;

using testing::expect_error;

std::string le64(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
  return out;
}

// A file made by hand: length prefix, header text as given, data bytes.
std::string raw_file(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

// Owns the bytes behind a test tensor.
struct HostTensor {
  std::vector<uint8_t> bytes;
  TensorView view;
  HostTensor(DType dtype, Shape shape, uint8_t salt) {
    bytes.resize(dtype_bytes(dtype, shape.num_elements()));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + salt);
    view = TensorView(bytes.data(), dtype, shape);
  }
};

const DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3,
                            DType::kF8E5M2, DType::kI64, DType::kI32, DType::kI16,
                            DType::kI8, DType::kU8, DType::kU32, DType::kBool};

TEST(Safetensors, DtypeNamesRoundTrip) {
  for (DType dtype : kAllDTypes) EXPECT_EQ(dtype_from_safetensors(dtype_to_safetensors(dtype), "t"), dtype);
  EXPECT_EQ(dtype_to_safetensors(DType::kF8E4M3), "F8_E4M3");
  EXPECT_EQ(dtype_to_safetensors(DType::kBool), "BOOL");
  expect_error([] { dtype_from_safetensors("F64", "ctx"); }, ErrorCode::kUnsupported, {"ctx", "F64"});
  expect_error([] { dtype_from_safetensors("Q4_K", "ctx"); }, ErrorCode::kUnsupported, {"ctx", "Q4_K"});
  expect_error([] { dtype_to_safetensors(DType::kI4); }, ErrorCode::kUnsupported, {"i4"});
}

TEST(Safetensors, RoundTripEveryDtype) {
  auto dir = make_temp_dir("st-roundtrip");
  std::vector<HostTensor> tensors;
  std::vector<SafetensorsWriteEntry> entries;
  int salt = 0;
  for (DType dtype : kAllDTypes) tensors.emplace_back(dtype, Shape{3, 5}, static_cast<uint8_t>(++salt));
  tensors.emplace_back(DType::kF32, Shape{}, 99);       // scalar
  tensors.emplace_back(DType::kBF16, Shape{0, 4}, 98);  // empty
  tensors.emplace_back(DType::kI8, Shape{1, 2, 3, 1, 2, 1}, 97);
  for (size_t i = 0; i < tensors.size(); ++i)
    entries.push_back({fmt::format("t{}.{}", i, dtype_name(tensors[i].view.dtype())), tensors[i].view});
  auto path = dir / "model.safetensors";
  write_safetensors(path, entries, {{"format", "pt"}, {"note", "hello"}});

  // The header is padded with spaces to a multiple of 8, so the data section is 8-aligned.
  std::string raw = read_file(path);
  uint64_t header_size = 0;
  std::memcpy(&header_size, raw.data(), 8);
  EXPECT_EQ(header_size % 8, 0u);
  size_t num_data_bytes = 0;
  for (const auto& t : tensors) num_data_bytes += t.bytes.size();
  EXPECT_EQ(raw.size(), 8 + header_size + num_data_bytes);  // no holes between tensors
  const char* data_in_raw = raw.data() + 8 + header_size;

  auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file->path(), path);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("note"), "hello");
  ASSERT_EQ(file->entries().size(), entries.size());
  const char* data_start = nullptr;
  for (size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE(entries[i].name);
    ASSERT_TRUE(file->contains(entries[i].name));
    const SafetensorsEntry& entry = file->entries().at(entries[i].name);
    TensorView view = file->tensor(entries[i].name);
    EXPECT_EQ(view.dtype(), tensors[i].view.dtype());
    EXPECT_EQ(view.shape(), tensors[i].view.shape());
    EXPECT_EQ(view.device(), Device::kCpu);
    ASSERT_EQ(view.num_bytes(), tensors[i].bytes.size());
    EXPECT_EQ(entry.end - entry.begin, tensors[i].bytes.size());
    if (view.num_bytes() > 0) {  // memcmp must not see the empty vector's null data()
      EXPECT_EQ(std::memcmp(view.data(), tensors[i].bytes.data(), view.num_bytes()), 0);
      EXPECT_EQ(std::memcmp(data_in_raw + entry.begin, tensors[i].bytes.data(), view.num_bytes()), 0);
    }
    // Views point into one mapping at data_start + begin, aligned to their element size.
    const char* start = static_cast<const char*>(view.data()) - entry.begin;
    if (!data_start) data_start = start;
    EXPECT_EQ(start, data_start);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data()) % (dtype_bits(view.dtype()) / 8), 0u);
  }
  expect_error([&] { file->tensor("missing.weight"); }, ErrorCode::kNotFound,
               {"missing.weight", "model.safetensors"});
}

TEST(Safetensors, WriteRejectsBadInput) {
  auto dir = make_temp_dir("st-write");
  HostTensor a(DType::kF32, Shape{4, 4}, 1);
  auto path = dir / "out.safetensors";
  expect_error([&] { write_safetensors(path, {{"x", a.view}, {"x", a.view}}); }, ErrorCode::kInvalidArgument,
               {"'x'", "twice"});
  expect_error([&] { write_safetensors(path, {{"__metadata__", a.view}}); }, ErrorCode::kInvalidArgument,
               {"__metadata__"});
  TensorView strided(a.bytes.data(), DType::kF32, Shape{4, 2}, {4, 2}, Device::kCpu);
  expect_error([&] { write_safetensors(path, {{"s", strided}}); }, ErrorCode::kInvalidArgument,
               {"'s'", "contiguous"});
  TensorView packed(a.bytes.data(), DType::kI4, Shape{4, 8}, Device::kCpu);
  expect_error([&] { write_safetensors(path, {{"q", packed}}); }, ErrorCode::kUnsupported, {"i4"});
  EXPECT_FALSE(fs::exists(path));
  expect_error([&] { write_safetensors(dir / "no" / "such" / "dir.safetensors", {{"x", a.view}}); },
               ErrorCode::kInvalidArgument, {"dir.safetensors"});
}

// --- malformed files ----------------------------------------------------------------------------

struct BadFile {
  const char* what;
  std::string bytes;
  ErrorCode code;
  std::vector<std::string> substrings;  // besides the file name
};

std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"w":{"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
}

std::vector<BadFile> bad_files() {
  const std::string data16(16, 'x');
  auto with = [&](const std::string& header) { return raw_file(header, data16); };
  const ErrorCode kCorrupt = ErrorCode::kCorruptData, kUnsupported = ErrorCode::kUnsupported;
  return {
      {"empty file", "", kCorrupt, {"0 bytes", "8-byte"}},
      {"5-byte file", "abcde", kCorrupt, {"5 bytes"}},
      {"header longer than file", le64(1000) + "{}", kCorrupt, {"header length 1000", "exceeds"}},
      {"absurd header length", le64(uint64_t{1} << 40) + "{}", kCorrupt, {"implausibly large"}},
      {"header just above 100 MB", le64(100'000'001) + "{}", kCorrupt, {"implausibly large"}},
      {"header not JSON", with("{\"w\": nope}"), kCorrupt, {"not valid JSON"}},
      {"empty header", with(""), kCorrupt, {"not valid JSON"}},
      {"header is an array", with("[1, 2]"), kCorrupt, {"must be a JSON object"}},
      {"entry not an object", with(R"({"w": 5})"), kCorrupt, {"'w'", "must be an object"}},
      {"missing dtype", with(R"({"w":{"shape":[4],"data_offsets":[0,16]}})"), kCorrupt, {"'w'", "'dtype'"}},
      {"missing shape", with(R"({"w":{"dtype":"F32","data_offsets":[0,16]}})"), kCorrupt, {"'w'", "'shape'"}},
      {"missing data_offsets", with(R"({"w":{"dtype":"F32","shape":[4]}})"), kCorrupt,
       {"'w'", "'data_offsets'"}},
      {"dtype not a string", with(entry("32", "[4]", "[0,16]")), kCorrupt, {"'w'", "'dtype'", "32"}},
      {"unknown dtype", with(entry("\"F128\"", "[4]", "[0,16]")), kUnsupported, {"'w'", "F128"}},
      {"F64 dtype", with(entry("\"F64\"", "[2]", "[0,16]")), kUnsupported, {"'w'", "F64"}},
      {"shape not an array", with(entry("\"F32\"", "\"4\"", "[0,16]")), kCorrupt, {"'w'", "'shape'"}},
      {"negative dim", with(entry("\"F32\"", "[-4]", "[0,16]")), kCorrupt, {"'w'", "'shape'", "-4"}},
      {"fractional dim", with(entry("\"F32\"", "[4.5]", "[0,16]")), kCorrupt, {"'w'", "'shape'", "4.5"}},
      {"string dim", with(entry("\"F32\"", "[\"4\"]", "[0,16]")), kCorrupt, {"'w'", "'shape'"}},
      {"dim above int64", with(entry("\"U8\"", "[18446744073709551615]", "[0,16]")), kCorrupt,
       {"'w'", "'shape'"}},
      {"too many dims", with(entry("\"U8\"", "[1,1,1,1,1,1,16]", "[0,16]")), kUnsupported,
       {"'w'", "7 dimensions"}},
      {"offsets not an array", with(entry("\"F32\"", "[4]", "16")), kCorrupt, {"'w'", "'data_offsets'"}},
      {"one offset", with(entry("\"F32\"", "[4]", "[16]")), kCorrupt, {"'w'", "'data_offsets'"}},
      {"three offsets", with(entry("\"F32\"", "[4]", "[0,16,32]")), kCorrupt, {"'w'", "'data_offsets'"}},
      {"negative offset", with(entry("\"F32\"", "[4]", "[-16,0]")), kCorrupt, {"'w'", "'data_offsets'"}},
      {"fractional offset", with(entry("\"F32\"", "[4]", "[0,16.0]")), kCorrupt, {"'w'", "'data_offsets'"}},
      {"begin after end", with(entry("\"F32\"", "[0]", "[16,8]")), kCorrupt,
       {"'w'", "'data_offsets'", "begin <= end"}},
      {"end beyond data", with(entry("\"F32\"", "[8]", "[0,32]")), kCorrupt,
       {"'w'", "beyond the data section of 16 bytes"}},
      {"end far beyond data", with(entry("\"U8\"", "[16]", "[18446744073709551599,18446744073709551615]")),
       kCorrupt, {"'w'", "'data_offsets'"}},
      {"size mismatch", with(entry("\"F32\"", "[3]", "[0,16]")), kCorrupt, {"'w'", "16 bytes", "needs 12"}},
      // 2^62 * 4 elements * 4 bytes wraps to 0 in 64 bits: must be caught, not accepted as empty.
      {"shape product overflows", with(entry("\"F32\"", "[4611686018427387904,4]", "[0,0]")), kCorrupt,
       {"'w'", "too large"}},
      {"overflow hidden behind a zero dim", with(entry("\"F32\"", "[0,4294967296,4294967296]", "[0,0]")),
       kCorrupt, {"'w'", "too large"}},
      {"metadata not an object", with(R"({"__metadata__":["a"]})"), kCorrupt, {"'__metadata__'"}},
      {"metadata value not a string", with(R"({"__metadata__":{"format":1}})"), kCorrupt,
       {"'__metadata__'", "'format'"}},
  };
}

TEST(Safetensors, EveryMalformedFileIsAnErrorNamingTheFile) {
  auto dir = make_temp_dir("st-bad");
  for (const BadFile& bad : bad_files()) {
    SCOPED_TRACE(bad.what);
    auto path = dir / "bad.safetensors";
    write_file(path, bad.bytes);
    try {
      SafetensorsFile::open(path);
      ADD_FAILURE() << "opened without error";
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_EQ(e.code(), bad.code) << message;
      EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << message;
      for (const auto& s : bad.substrings)
        EXPECT_NE(message.find(s), std::string::npos) << message << " lacks " << s;
    }
  }
}

TEST(Safetensors, OpenErrors) {
  auto dir = make_temp_dir("st-open");
  expect_error([&] { SafetensorsFile::open(dir / "absent.safetensors"); }, ErrorCode::kNotFound,
               {"absent.safetensors"});
  fs::create_directory(dir / "folder.safetensors");
  expect_error([&] { SafetensorsFile::open(dir / "folder.safetensors"); }, ErrorCode::kInvalidArgument,
               {"folder.safetensors", "regular file"});
}

TEST(Safetensors, ParseHeaderInMemory) {
  auto entries = SafetensorsFile::parse_header(
      R"({"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("a":{"dtype":"U8","shape":[],"data_offsets":[12,13]},"__metadata__":{}}   )",
      13, "mem");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "a");
  EXPECT_EQ(entries[0].shape, Shape{});
  EXPECT_EQ(entries[1].dtype, DType::kBF16);
  EXPECT_EQ(entries[1].shape, (Shape{2, 3}));
  EXPECT_EQ(entries[1].end, 12u);
  expect_error([] { SafetensorsFile::parse_header(entry("\"F32\"", "[4]", "[0,16]"), 15, "mem"); },
               ErrorCode::kCorruptData, {"mem", "'w'", "15 bytes"});
  // Nesting a million levels deep must neither overflow the stack nor take long.
  std::string deep = R"({"w":{"dtype":"F32","shape":)" + std::string(1'000'000, '[') +
                     std::string(1'000'000, ']') + R"(,"data_offsets":[0,0]}})";
  expect_error([&] { SafetensorsFile::parse_header(deep, 0, "mem"); }, ErrorCode::kCorruptData, {"'shape'"});
}

// --- checkpoints ----------------------------------------------------------------------------------

void write_shard(const fs::path& path, const std::vector<std::string>& names, uint8_t salt) {
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < names.size(); ++i)
    tensors.emplace_back(DType::kF16, Shape{2, 4}, static_cast<uint8_t>(salt + i));
  std::vector<SafetensorsWriteEntry> entries;
  for (size_t i = 0; i < names.size(); ++i) entries.push_back({names[i], tensors[i].view});
  write_safetensors(path, entries);
}

const char* kIndex = R"({"metadata": {"total_size": 64}, "weight_map": {
  "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
  "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
  "lm_head.weight": "model-00002-of-00002.safetensors",
  "model.norm.weight": "model-00002-of-00002.safetensors"}})";

fs::path sharded_dir() {
  auto dir = make_temp_dir("st-sharded");
  write_shard(dir / "model-00001-of-00002.safetensors",
              {"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight"}, 1);
  write_shard(dir / "model-00002-of-00002.safetensors", {"lm_head.weight", "model.norm.weight"}, 50);
  write_file(dir / "model.safetensors.index.json", kIndex);
  return dir;
}

TEST(Checkpoint, SingleFile) {
  auto dir = make_temp_dir("st-single");
  write_shard(dir / "model.safetensors", {"a", "b"}, 3);
  write_shard(dir / "other.safetensors", {"c"}, 3);  // ignored: model.safetensors wins
  Checkpoint checkpoint = Checkpoint::open(dir);
  EXPECT_EQ(checkpoint.tensor_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(checkpoint.file_of("b"), dir / "model.safetensors");
  EXPECT_EQ(checkpoint.dir(), dir);
  EXPECT_EQ(checkpoint.tensor("a").shape(), (Shape{2, 4}));
}

TEST(Checkpoint, ShardedWithIndex) {
  auto dir = sharded_dir();
  Checkpoint checkpoint = Checkpoint::open(dir);
  EXPECT_EQ(checkpoint.tensor_names().size(), 4u);
  EXPECT_TRUE(checkpoint.contains("lm_head.weight"));
  EXPECT_EQ(checkpoint.file_of("lm_head.weight"), dir / "model-00002-of-00002.safetensors");
  EXPECT_EQ(checkpoint.file_of("model.embed_tokens.weight"), dir / "model-00001-of-00002.safetensors");
  TensorView head = checkpoint.tensor("lm_head.weight");
  ASSERT_EQ(head.dtype(), DType::kF16);
  EXPECT_EQ(static_cast<const uint8_t*>(head.data())[1], uint8_t{50 + 7});
  expect_error([&] { checkpoint.tensor("model.layers.9.self_attn.q_proj.weight"); }, ErrorCode::kNotFound,
               {"model.layers.9.self_attn.q_proj.weight", dir.string()});
  expect_error([&] { checkpoint.file_of("nope"); }, ErrorCode::kNotFound, {"nope"});
  Checkpoint copy = checkpoint;  // copies share the mappings
  EXPECT_EQ(copy.tensor("lm_head.weight").data(), head.data());
}

TEST(Checkpoint, IndexErrors) {
  {
    auto dir = sharded_dir();
    fs::remove(dir / "model-00002-of-00002.safetensors");
    expect_error([&] { Checkpoint::open(dir); }, ErrorCode::kNotFound,
                 {"model.safetensors.index.json", "model-00002-of-00002.safetensors"});
  }
  {
    auto dir = sharded_dir();
    write_shard(dir / "model-00002-of-00002.safetensors", {"lm_head.weight"}, 5);
    expect_error([&] { Checkpoint::open(dir); }, ErrorCode::kCorruptData,
                 {"model.safetensors.index.json", "'model.norm.weight'", "model-00002-of-00002.safetensors"});
  }
  struct Case {
    std::string index;
    std::vector<std::string> substrings;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"weight_map\": ", {"not valid JSON"}},
           {"{\"metadata\": {}}", {"'weight_map'"}},
           {"{\"weight_map\": [1]}", {"'weight_map'"}},
           {"{\"weight_map\": {\"x\": 3}}", {"'x'", "file name"}},
           {"{\"weight_map\": {\"x\": \"../outside.safetensors\"}}", {"'x'", "../outside.safetensors"}},
           {"{\"weight_map\": {\"x\": \"/etc/passwd\"}}", {"'x'", "/etc/passwd"}}}) {
    SCOPED_TRACE(c.index);
    auto dir = sharded_dir();
    write_file(dir / "model.safetensors.index.json", c.index);
    std::vector<std::string> substrings = c.substrings;
    substrings.push_back("model.safetensors.index.json");
    expect_error([&] { Checkpoint::open(dir); }, ErrorCode::kCorruptData, substrings);
  }
}

TEST(Checkpoint, GlobsSortedFilesWithoutIndex) {
  auto dir = make_temp_dir("st-glob");
  write_shard(dir / "b.safetensors", {"y"}, 1);
  write_shard(dir / "a.safetensors", {"x"}, 1);
  write_file(dir / "notes.txt", "not a checkpoint");
  Checkpoint checkpoint = Checkpoint::open(dir);
  EXPECT_EQ(checkpoint.tensor_names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(checkpoint.file_of("x"), dir / "a.safetensors");

  write_shard(dir / "c.safetensors", {"x"}, 1);
  expect_error([&] { Checkpoint::open(dir); }, ErrorCode::kCorruptData,
               {"'x'", "a.safetensors", "c.safetensors"});
}

TEST(Checkpoint, MissingFilesAreNotFound) {
  auto dir = make_temp_dir("st-empty");
  write_file(dir / "config.json", "{}");
  expect_error([&] { Checkpoint::open(dir); }, ErrorCode::kNotFound, {"no *.safetensors", dir.string()});
  expect_error([&] { Checkpoint::open(dir / "absent"); }, ErrorCode::kNotFound, {(dir / "absent").string()});
  write_file(dir / "model.safetensors", "tiny");
  expect_error([&] { Checkpoint::open(dir); }, ErrorCode::kCorruptData, {"model.safetensors"});
}

// --- property fuzz --------------------------------------------------------------------------------

// Parses or throws brisk::Error (anything else fails the property); what parses must describe
// only bytes inside the data section.
void expect_parses_or_errors(std::string_view header, size_t data_size) {
  try {
    for (const SafetensorsEntry& e : SafetensorsFile::parse_header(header, data_size, "fuzz")) {
      RC_ASSERT(e.begin <= e.end);
      RC_ASSERT(e.end <= data_size);
      RC_ASSERT(e.end - e.begin == dtype_bytes(e.dtype, e.shape.num_elements()));
    }
  } catch (const Error&) {
  }
}

std::string valid_file_bytes() {
  static const std::string bytes = [] {
    auto dir = make_temp_dir("st-seed");
    HostTensor a(DType::kBF16, Shape{3, 4}, 1), b(DType::kI64, Shape{2}, 2), c(DType::kU8, Shape{5}, 3);
    write_safetensors(dir / "seed.safetensors", {{"a", a.view}, {"b", b.view}, {"c", c.view}},
                      {{"format", "pt"}});
    return read_file(dir / "seed.safetensors");
  }();
  return bytes;
}

fs::path fuzz_path() {
  static const fs::path path = make_temp_dir("st-fuzz") / "fuzz.safetensors";
  return path;
}

// Opens the bytes as a file; on success reads every view in full, so that a sanitizer build
// would catch a view reaching outside the mapping.
void check_file(const std::string& bytes) {
  // Unlink first: rewriting a truncated file makes ext4 flush it on close, 100x slower.
  fs::remove(fuzz_path());
  write_file(fuzz_path(), bytes);
  try {
    auto file = SafetensorsFile::open(fuzz_path());
    unsigned sum = 0;
    for (const auto& [name, e] : file->entries()) {
      TensorView view = file->tensor(name);
      for (size_t i = 0; i < view.num_bytes(); ++i) sum += static_cast<const uint8_t*>(view.data())[i];
    }
    (void)sum;
  } catch (const Error&) {
  }
}

// Each case checks 20 variants of the valid file, each with 1 to 3 random bytes replaced.
RC_GTEST_PROP(SafetensorsFuzz, ByteMutationsNeverCrash, ()) {
  const std::string original = valid_file_bytes();
  for (int variant = 0; variant < 20; ++variant) {
    std::string bytes = original;
    auto edits = *rc::gen::container<std::vector<std::pair<size_t, uint8_t>>>(
        *rc::gen::inRange<size_t>(1, 4),
        rc::gen::pair(rc::gen::inRange<size_t>(0, bytes.size()), rc::gen::arbitrary<uint8_t>()));
    for (const auto& [pos, value] : edits) bytes[pos] = static_cast<char>(value);
    check_file(bytes);
  }
}

RC_GTEST_PROP(SafetensorsFuzz, TruncationsNeverCrash, ()) {
  const std::string bytes = valid_file_bytes();
  for (int i = 0; i < 10; ++i) check_file(bytes.substr(0, *rc::gen::inRange<size_t>(0, bytes.size())));
}

// Headers edited with JSON-significant characters reach deep into the parser's error paths.
RC_GTEST_PROP(SafetensorsFuzz, HeaderEditsParseOrError, ()) {
  const std::string file = valid_file_bytes();
  uint64_t header_size = 0;
  std::memcpy(&header_size, file.data(), 8);
  const std::string original = file.substr(8, header_size);
  const size_t full_data_size = file.size() - 8 - header_size;
  const auto edit = rc::gen::pair(rc::gen::inRange<size_t>(0, original.size()),
                                  rc::gen::elementOf(std::string("{}[]\":,-.0123456789eE \\aFUI")));
  for (int variant = 0; variant < 20; ++variant) {
    std::string header = original;
    for (const auto& [pos, c] : *rc::gen::container<std::vector<std::pair<size_t, char>>>(
             *rc::gen::inRange<size_t>(1, 3), edit))
      header[pos] = c;
    size_t data_size = *rc::gen::element(full_data_size, full_data_size, full_data_size / 2, size_t{0});
    expect_parses_or_errors(header, data_size);
  }
}

// Structurally random headers: random dtypes, shapes and offsets, valid or not.
RC_GTEST_PROP(SafetensorsFuzz, RandomHeadersParseOrError, ()) {
  const auto small_or_huge = rc::gen::oneOf(rc::gen::inRange<int64_t>(-2, 40),
                                            rc::gen::arbitrary<int64_t>(),
                                            rc::gen::element<int64_t>(int64_t{1} << 31, int64_t{1} << 62,
                                                                      std::numeric_limits<int64_t>::max()));
  for (int round = 0; round < 20; ++round) {
    size_t data_size = *rc::gen::inRange<size_t>(0, 256);
    std::string header = "{";
    int num_entries = *rc::gen::inRange(0, 4);
    for (int i = 0; i < num_entries; ++i) {
      auto dims = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(0, 8), small_or_huge);
      std::string shape = fmt::format("[{}{}]", fmt::join(dims, ","),
                                      *rc::gen::element<std::string>("", "", "", ",1.5", ",\"x\"", ",null"));
      std::string dtype = *rc::gen::element<std::string>("\"F32\"", "\"BF16\"", "\"U8\"", "\"I64\"",
                                                         "\"F64\"", "\"??\"", "7", "null");
      std::string offsets = fmt::format("[{},{}]", *small_or_huge, *small_or_huge);
      std::string body = entry(dtype, shape, offsets);  // {"w":{...}}: keep the inner object
      header += fmt::format("{}\"t{}\":{}", i ? "," : "", i, body.substr(5, body.size() - 6));
    }
    header += "}";
    expect_parses_or_errors(header, data_size);
  }
}

}  // namespace
}  // namespace brisk
