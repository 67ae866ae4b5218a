// A CUPTI injection library that writes every kernel's device start and end to a CSV file, for
// kernels launched one by one and inside CUDA graphs alike (programmatic dependent launches
// keep overlapping: concurrent-kernel records do not serialize kernels, as Nsight Compute does).
// bench/kernel_trace.py turns the file into each kernel's share of a decode step and the time
// between kernels.
//
//   CUDA_INJECTION64_PATH=build/cuda/tools/kernel_trace/libbrisk_kernel_trace.so
//   BRISK_KERNEL_TRACE=trace.csv brisk bench latency ...   (both in the environment)
//
// Columns: start and end (ns, device clock), the launch's correlation id (one per cudaGraphLaunch
// for the kernels of a graph), graph id (0: not in a graph), stream, grid x/y/z, block x,
// registers a thread, dynamic shared memory, demangled name.
#include <cupti.h>
#include <cxxabi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

constexpr size_t kBufferBytes = size_t{16} << 20;

std::FILE* g_out = nullptr;
std::mutex g_mutex;
std::atomic<uint64_t> g_dropped{0};

void check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return;
  const char* message = nullptr;
  cuptiGetResultString(result, &message);
  std::fprintf(stderr, "kernel_trace: %s: %s\n", what, message != nullptr ? message : "?");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

// Writes the buffer's kernel records; names are demangled (quotes in them doubled for CSV).
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || g_out == nullptr) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    int status = 0;
    char* demangled = abi::__cxa_demangle(k->name, nullptr, nullptr, &status);
    std::fprintf(g_out, "%llu,%llu,%u,%u,%u,%d,%d,%d,%d,%u,%d,\"",
                 static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end),
                 k->correlationId, k->graphId, k->streamId, k->gridX, k->gridY, k->gridZ, k->blockX,
                 k->registersPerThread, k->dynamicSharedMemory);
    for (const char* c = status == 0 && demangled != nullptr ? demangled : k->name; *c != '\0'; ++c) {
      if (*c == '"') std::fputc('"', g_out);
      std::fputc(*c, g_out);
    }
    std::fputs("\"\n", g_out);
    std::free(demangled);
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  g_dropped += dropped;
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_out == nullptr) return;
  if (g_dropped > 0) {
    std::fprintf(stderr, "kernel_trace: %llu records dropped\n", static_cast<unsigned long long>(g_dropped.load()));
  }
  std::fclose(g_out);
  g_out = nullptr;
}

}  // namespace

// Called by the CUDA driver at initialisation when CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* path = std::getenv("BRISK_KERNEL_TRACE");
  if (path == nullptr || *path == '\0') path = "kernel_trace.csv";
  g_out = std::fopen(path, "w");
  if (g_out == nullptr) {
    std::fprintf(stderr, "kernel_trace: cannot write %s\n", path);
    return 0;
  }
  std::fputs("start,end,correlation,graph,stream,grid_x,grid_y,grid_z,block_x,registers,dynamic_shared,name\n", g_out);
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register callbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernel records");
  check(cuptiActivityFlushPeriod(200), "flush period");  // records reach the file while the program runs
  std::atexit(finish);
  return 1;
}
