// The device-independent validation of each op family's params: ranks, dtypes, shapes and scalar
// ranges that every backend requires, with views required to live in device's memory. Backends
// call these first, then add only their own checks (the CPU reference's data-dependent checks of
// ids, positions, slots and block tables; the CUDA kernels' size limits). Messages name the op
// and the parameter at fault. Bodies are in op_params.cc, out of nvcc's reach (see op_checks.h).
#pragma once

#include "backend/backend.h"

namespace brisk {

void check_op_params(const EmbeddingParams& p, Device device);
void check_op_params(const RmsNormParams& p, Device device);
// head_dim need only be positive and even here; backends may cap it.
void check_op_params(const RopeKvAppendParams& p, Device device);
void check_op_params(const GemmParams& p, Device device);
// K a multiple of 8 (whole bytes per row and AWQ/GPTQ's 8 values per int32), group_size
// dividing K; backends may restrict the group size further.
void check_op_params(const GemmW4A16Params& p, Device device);
void check_op_params(const GemmFp8Params& p, Device device);
// head_dim need only be positive here; backends may restrict it further.
void check_op_params(const AttentionParams& p, Device device);
void check_op_params(const SiluMulParams& p, Device device);
// The views only: the SamplingRow values and the token lists' contents are read where they live,
// so checking them is left to the backend that can.
void check_op_params(const SampleParams& p, Device device);
void check_op_params(const TopLogprobsParams& p, Device device);
void check_op_params(const TokenLogprobsParams& p, Device device);
void check_op_params(const FeedTokensParams& p, Device device);
void check_op_params(const TokenBitmaskParams& p, Device device);
void check_op_params(const LogitBiasParams& p, Device device);

}  // namespace brisk
