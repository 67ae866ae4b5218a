// Megatron sharding's arithmetic (which heads, KV heads, MLP features and vocabulary rows a rank
// holds, and the sizes refused), and the column slices of quantized weights that row-parallel
// layers load: a slice dequantizes to the same columns of the whole weight.
#include "model/tensor_parallel.h"

#include <gtest/gtest.h>

#include <random>

#include "brisk/status.h"
#include "core/host_convert.h"
#include "model/fp8_weight.h"
#include "model/int4_weight.h"
#include "test_util.h"

namespace brisk {
namespace {

ModelConfig config(int64_t heads, int64_t kv_heads) {
  ModelConfig c;
  c.vocab_size = 512;
  c.hidden_size = 256;
  c.intermediate_size = 512;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = 64;
  return c;
}

TEST(ModelShard, SplitsHeadsFeaturesAndVocabulary) {
  const ModelShard s = model_shard(config(8, 4), 1, 2);
  EXPECT_EQ(s.first_head, 4);
  EXPECT_EQ(s.num_heads, 4);
  EXPECT_EQ(s.first_kv_head, 2);
  EXPECT_EQ(s.num_kv_heads, 2);
  EXPECT_EQ(s.first_intermediate, 256);
  EXPECT_EQ(s.intermediate_size, 256);
  EXPECT_EQ(s.first_vocab, 256);
  EXPECT_EQ(s.vocab_size, 256);
  const ModelConfig shard = shard_config(config(8, 4), s);
  EXPECT_EQ(shard.num_heads, 4);
  EXPECT_EQ(shard.num_kv_heads, 2);
  EXPECT_EQ(shard.hidden_size, 256);
}

// Fewer KV heads than ranks: each rank holds the KV head its query heads read.
TEST(ModelShard, RepeatsKvHeadsOverRanks) {
  for (int rank = 0; rank < 4; ++rank) {
    const ModelShard s = model_shard(config(8, 2), rank, 4);
    EXPECT_EQ(s.num_kv_heads, 1);
    EXPECT_EQ(s.first_kv_head, rank / 2) << "rank " << rank;  // query heads 2r, 2r + 1 of group (2r) / 4
  }
}

TEST(ModelShard, RefusesSizesThatDoNotDivide) {
  testing::expect_error([] { model_shard(config(6, 6), 0, 4); }, ErrorCode::kInvalidArgument,
                        {"--tensor-parallel-size 4", "num_attention_heads (6) is not divisible"});
  testing::expect_error([] { model_shard(config(12, 3), 0, 4); }, ErrorCode::kInvalidArgument,
                        {"3 KV heads can neither be split"});
  ModelConfig c = config(8, 8);
  c.vocab_size = 510;
  testing::expect_error([&] { model_shard(c, 0, 4); }, ErrorCode::kInvalidArgument, {"vocab_size (510)"});
  c = config(8, 8);
  c.quantization.method = QuantMethod::kAwq;
  c.quantization.group_size = 128;  // o_proj's share at TP 8: 64 inputs
  testing::expect_error([&] { model_shard(c, 0, 8); }, ErrorCode::kInvalidArgument, {"int4 group size 128"});
  EXPECT_NO_THROW(model_shard(c, 0, 4));
  c.quantization = {};
  c.quantization.method = QuantMethod::kFp8;
  c.quantization.fp8_weights = Fp8WeightScales::kBlock;
  testing::expect_error([&] { model_shard(c, 0, 8); }, ErrorCode::kInvalidArgument, {"FP8 block size 128"});
}

std::vector<float> columns(const Tensor& dense, int64_t begin, int64_t count) {
  const Tensor slice = copy_columns(dense, begin, count);
  return std::vector<float>(slice.data_as<float>(), slice.data_as<float>() + slice.shape().num_elements());
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.shape().num_elements());
}

TEST(SliceColumns, Int4SliceIsTheColumnsOfTheWhole) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor dense(cpu_allocator(), DType::kF32, {16, 256});
  for (int64_t i = 0; i < 16 * 256; ++i) dense.data_as<float>()[i] = normal(rng);
  for (int64_t group : {64, 256}) {
    const Int4Weight w = quantize_rtn(dense, group, DType::kF16);
    const Tensor whole = dequantize(w);
    EXPECT_EQ(values(dequantize(slice_columns(w, 128, 128))), columns(whole, 128, 128)) << "group " << group;
  }
  testing::expect_error([&] { slice_columns(quantize_rtn(dense, 64, DType::kF16), 32, 64); },
                        ErrorCode::kInvalidArgument, {"not whole groups of 64"});
}

TEST(SliceColumns, Fp8SliceIsTheColumnsOfTheWhole) {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor dense(cpu_allocator(), DType::kF32, {8, 384});
  for (int64_t i = 0; i < 8 * 384; ++i) dense.data_as<float>()[i] = normal(rng);
  const Fp8Weight channel = quantize_fp8(dense);
  EXPECT_EQ(values(dequantize(slice_columns(channel, 96, 192))), columns(dequantize(channel), 96, 192));
  // Block scales: a different scale per 128 columns.
  Fp8Weight block;
  block.weight = copy_columns(channel.weight, 0, 384);
  block.block_size = kFp8BlockSize;
  block.weight_scale = Tensor(cpu_allocator(), DType::kF32, {8, 3});
  for (int64_t i = 0; i < 24; ++i) block.weight_scale.data_as<float>()[i] = 0.5f + 0.25f * static_cast<float>(i % 5);
  EXPECT_EQ(values(dequantize(slice_columns(block, 128, 256))), columns(dequantize(block), 128, 256));
  testing::expect_error([&] { slice_columns(block, 64, 128); }, ErrorCode::kInvalidArgument, {"whole FP8 blocks"});
}

// Fused block-scaled rows stay in 128-row blocks (GemmFp8Params::row_blocks) only where every part
// starts a block and all but the last fill theirs.
TEST(ConcatRows, Fp8RowBlocksNeedBlockAlignedParts) {
  auto make_part = [](bool row_blocks) {
    Fp8Weight w;
    w.weight = Tensor(cpu_allocator(), DType::kF8E4M3, {384, 128});
    w.weight_scale = Tensor(cpu_allocator(), DType::kF32, {384, 1});
    std::fill_n(w.weight_scale.data_as<float>(), 384, 1.0f);
    w.block_size = kFp8BlockSize;
    w.row_blocks = row_blocks;
    return w;
  };
  const Fp8Weight part = make_part(true), per_row = make_part(false);
  EXPECT_TRUE(concat_rows({{&part, 0, 256}, {&part, 128, 200}}).row_blocks);
  EXPECT_TRUE(slice_columns(concat_rows({{&part, 0, 384}}), 0, 128).row_blocks);
  EXPECT_FALSE(concat_rows({{&part, 0, 200}, {&part, 0, 128}}).row_blocks);  // the second part starts at row 200
  EXPECT_FALSE(concat_rows({{&part, 64, 128}}).row_blocks);
  EXPECT_FALSE(concat_rows({{&part, 0, 128}, {&per_row, 0, 128}}).row_blocks);
}

}  // namespace
}  // namespace brisk
