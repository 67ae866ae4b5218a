// libFuzzer entry point for the safetensors header parser. ctest builds it with clang
// (tests/fuzz/CMakeLists.txt) and runs it briefly from tests/fuzz/corpus/safetensors; for a
// longer run: build/cpu/tests/fuzz/safetensors_fuzz -max_total_time=600 CORPUS
//
// Seed corpus files: the first 8 bytes are a data size and the rest a header, e.g. the first
// 8 + header-length bytes of a real .safetensors file.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "brisk/status.h"
#include "model/safetensors.h"

// Input layout: 8 bytes little-endian data-section size (kept below 1 TiB), then the header text.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t data_size = 0;
  for (int i = 7; i >= 0; --i) data_size = (data_size << 8) | data[i];
  data_size &= (uint64_t{1} << 40) - 1;
  std::string_view header(reinterpret_cast<const char*>(data + 8), size - 8);
  try {
    for (const brisk::SafetensorsEntry& entry :
         brisk::SafetensorsFile::parse_header(header, data_size, "fuzz")) {
      // What the parser accepts must be internally consistent; anything else is a bug.
      if (entry.begin > entry.end || entry.end > data_size ||
          entry.end - entry.begin != brisk::dtype_bytes(entry.dtype, entry.shape.num_elements()))
        __builtin_trap();
    }
  } catch (const brisk::Error&) {
    // Rejecting malformed input with brisk::Error is the expected outcome.
  }
  return 0;
}
