// The streaming W4A16 kernel for decode-sized M (w4a16_stream.cu): persistent CTAs stream the
// tile-layout weights with bulk copies into a shared-memory ring. Arguments are launch.h's
// W4A16Args (num_splits and k_per_split unused: the kernel splits its own way).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

// Whether the streaming kernel takes these arguments: x f16 or bf16 with 1 <= m <=
// kW4A16StreamMaxRows rows, weights in Int4Layout::kTiles16 (n % 16 == 0, k % 128 == 0),
// group_size % 128 == 0, scales and zeros 16-byte aligned, and x (all of it stays in shared
// memory) small enough to leave room for the ring.
bool w4a16_stream_supported(const W4A16Args& a);
// fp32 scratch the launch needs for the tiles that two CTAs share.
int64_t w4a16_stream_partial_floats(const W4A16Args& a, int num_sms);
// partials: w4a16_stream_partial_floats floats, 16-byte aligned.
void launch_w4a16_stream(const W4A16Args& a, float* partials, int num_sms, cudaStream_t stream);

}  // namespace brisk::cuda
