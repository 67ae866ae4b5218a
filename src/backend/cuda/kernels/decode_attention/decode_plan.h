// The decode attention kernel's launch plan (host code): the row chunks and key splits of its
// grid, whether the RoPE and KV append is fused into it, and whether its grid runs in one wave.
// The caller fills DecodeAttentionArgs in this order: num_row_chunks, max_context_len,
// num_splits, then single_wave.
#pragma once

#include "backend/cuda/kernels/decode_attention/decode_attention.h"

namespace brisk::cuda {

// ceil(group * max_query_len / decode_rows_per_block(codes)).
int decode_attention_row_chunks(int group, int max_query_len, KvCodes codes);
// The split-KV cost model: from the grid without splits, the kernel's shape, the SM count and
// the context bound (a.max_context_len).
int decode_attention_num_splits(const DecodeAttentionArgs& a, int num_sms);
// Whether the fused RoPE and KV append (DecodeAttentionArgs::rope) pays for the launch of `a`
// (num_splits set): every block holding new keys appends them before its main loop, which a
// split grid asks of its last splits only and long blocks hide; short contexts without splits
// run faster with the separate rope_kv_append. So: fused with splits or contexts over 1024 keys,
// and over a quantized cache only in a single wave (decode_plan.cc).
bool decode_attention_fuses_append(const DecodeAttentionArgs& a, int num_sms);
// Whether the launch of `a` (num_splits set) fits in one wave of the kernel's blocks.
bool decode_attention_single_wave(const DecodeAttentionArgs& a, int num_sms);

}  // namespace brisk::cuda
