#include "model/tensor_parallel.h"

#include "core/error.h"
#include "model/fp8_weight.h"

namespace brisk {
namespace {

void check_divides(int64_t value, int size, const char* what) {
  BRISK_CHECK(value % size == 0, "--tensor-parallel-size {}: the model's {} ({}) is not divisible by it", size, what,
              value);
}

}  // namespace

ModelShard model_shard(const ModelConfig& c, int rank, int size) {
  BRISK_CHECK(size >= 1 && rank >= 0 && rank < size, "--tensor-parallel-size must be at least 1, got {}", size);
  check_divides(c.num_heads, size, "num_attention_heads");
  check_divides(c.intermediate_size, size, "intermediate_size");
  check_divides(c.vocab_size, size, "vocab_size");
  BRISK_CHECK(c.num_kv_heads % size == 0 || size % c.num_kv_heads == 0,
              "--tensor-parallel-size {}: the model's {} KV heads can neither be split evenly over the ranks "
              "nor repeated evenly on them", size, c.num_kv_heads);
  ModelShard s;
  s.num_heads = c.num_heads / size;
  s.first_head = rank * s.num_heads;
  if (c.num_kv_heads >= size) {
    s.num_kv_heads = c.num_kv_heads / size;
    s.first_kv_head = rank * s.num_kv_heads;
  } else {  // the KV head of this rank's query heads
    s.num_kv_heads = 1;
    s.first_kv_head = s.first_head / (c.num_heads / c.num_kv_heads);
  }
  s.intermediate_size = c.intermediate_size / size;
  s.first_intermediate = rank * s.intermediate_size;
  s.vocab_size = c.vocab_size / size;
  s.first_vocab = rank * s.vocab_size;
  if (size == 1) return s;
  // o_proj and down are split along their input features: whole int4 groups and FP8 blocks.
  const int64_t attn_cols = s.num_heads * c.head_dim;
  const QuantizationConfig& q = c.quantization;
  int64_t unit = 0;
  const char* unit_name = "";
  if ((q.method == QuantMethod::kAwq || q.method == QuantMethod::kGptq) && q.group_size > 0) {
    unit = q.group_size;
    unit_name = "int4 group size";
  } else if (q.method == QuantMethod::kFp8 && q.fp8_weights == Fp8WeightScales::kBlock) {
    unit = kFp8BlockSize;
    unit_name = "FP8 block size";
  }
  if (unit > 0)
    BRISK_CHECK(attn_cols % unit == 0 && s.intermediate_size % unit == 0,
                "--tensor-parallel-size {}: each rank's share of o_proj ({} inputs) and down_proj ({} inputs) "
                "must be whole multiples of the {} {}", size, attn_cols, s.intermediate_size, unit_name, unit);
  return s;
}

ModelConfig shard_config(const ModelConfig& c, const ModelShard& s) {
  ModelConfig out = c;
  out.num_heads = s.num_heads;
  out.num_kv_heads = s.num_kv_heads;
  out.intermediate_size = s.intermediate_size;
  out.vocab_size = s.vocab_size;
  return out;
}

}  // namespace brisk
