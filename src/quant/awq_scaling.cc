#include "quant/awq_scaling.h"

#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "core/host_convert.h"

namespace brisk {
namespace {

std::vector<RowBlock> all_rows(int64_t count) { return {{0, count}}; }

std::vector<ScalingGroup> llama_groups(const ModelConfig& c, const std::string& p) {
  const int64_t kv_rows = c.num_kv_heads * c.head_dim;
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
  std::vector<ScalingGroup> groups;
  groups.push_back({p + "q/k/v", LinearInput::kQkv,
                    {{p + "self_attn.q_proj.weight", {}}, {p + "self_attn.k_proj.weight", {}},
                     {p + "self_attn.v_proj.weight", all_rows(kv_rows)}},
                    p + "input_layernorm.weight", all_rows(hidden), {}});
  if (c.num_heads == c.num_kv_heads) {
    ScalingGroup o{p + "o", LinearInput::kOProj, {{p + "self_attn.o_proj.weight", all_rows(hidden)}},
                   p + "self_attn.v_proj.weight", all_rows(kv_rows), {}};
    if (c.attention_bias) o.prev_biases.push_back(p + "self_attn.v_proj.bias");
    groups.push_back(o);
  }
  groups.push_back({p + "gate/up", LinearInput::kGateUp,
                    {{p + "mlp.gate_proj.weight", all_rows(inter)}, {p + "mlp.up_proj.weight", all_rows(inter)}},
                    p + "post_attention_layernorm.weight", all_rows(hidden), {}});
  groups.push_back({p + "down", LinearInput::kDown, {{p + "mlp.down_proj.weight", all_rows(hidden)}},
                    p + "mlp.up_proj.weight", all_rows(inter), {}});
  return groups;
}

// InternLM2's wqkv holds, per KV head h, its `group` q heads, then k, then v (head_dim rows each).
std::vector<ScalingGroup> internlm2_groups(const ModelConfig& c, const std::string& p) {
  const int64_t d = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
  std::vector<RowBlock> v_rows;
  for (int64_t h = 0; h < c.num_kv_heads; ++h) v_rows.push_back({(h * (group + 2) + group + 1) * d, d});
  std::vector<ScalingGroup> groups;
  groups.push_back({p + "wqkv", LinearInput::kQkv, {{p + "attention.wqkv.weight", v_rows}},
                    p + "attention_norm.weight", all_rows(hidden), {}});
  if (group == 1) {  // o's input channels are the v rows, head by head
    ScalingGroup o{p + "wo", LinearInput::kOProj, {{p + "attention.wo.weight", all_rows(hidden)}},
                   p + "attention.wqkv.weight", v_rows, {}};
    if (c.attention_bias) o.prev_biases.push_back(p + "attention.wqkv.bias");
    groups.push_back(o);
  }
  groups.push_back({p + "w1/w3", LinearInput::kGateUp,
                    {{p + "feed_forward.w1.weight", all_rows(inter)}, {p + "feed_forward.w3.weight", all_rows(inter)}},
                    p + "ffn_norm.weight", all_rows(hidden), {}});
  groups.push_back({p + "w2", LinearInput::kDown, {{p + "feed_forward.w2.weight", all_rows(hidden)}},
                    p + "feed_forward.w3.weight", all_rows(inter), {}});
  return groups;
}

}  // namespace

Tensor& dense_f32(DenseTensors& tensors, const Checkpoint& checkpoint, const std::string& name) {
  auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  const TensorView source = checkpoint.tensor(name);
  BRISK_CHECK(is_floating(source.dtype()) && dtype_bits(source.dtype()) >= 16,
              "quantize: tensor '{}' in {} is {}; expected f32, f16 or bf16", name, checkpoint.dir().string(),
              source.describe());
  Tensor copy(cpu_allocator(), DType::kF32, source.shape());
  convert_on_host(copy, source);
  return tensors.emplace(name, std::move(copy)).first->second;
}

std::vector<ScalingGroup> scaling_groups(const ModelConfig& config, int64_t layer) {
  const std::string prefix = "model.layers." + std::to_string(layer) + ".";
  return config.architecture == Architecture::kInternLM2 ? internlm2_groups(config, prefix)
                                                         : llama_groups(config, prefix);
}

void make_scales_foldable(std::vector<float>& scales, DenseTensors& tensors, const Checkpoint& checkpoint,
                          const ScalingGroup& group) {
  // The entries stored unquantized: a 1-D prev (a norm weight), else the biases of prev's rows
  // (a quantized prev's rows need no care). Only one of them can be matched; AWQ groups have one.
  std::string name = checkpoint.tensor(group.prev).rank() == 1 ? group.prev : "";
  if (name.empty() && !group.prev_biases.empty()) name = group.prev_biases.front();
  if (name.empty()) return;
  const DType dtype = checkpoint.tensor(name).dtype();
  if (dtype == DType::kF32) return;
  const Tensor& t = dense_f32(tensors, checkpoint, name);
  int64_t channel = 0;
  for (const RowBlock& block : group.prev_rows) {
    for (int64_t r = block.begin; r < block.begin + block.count && channel < static_cast<int64_t>(scales.size());
         ++r, ++channel) {
      const float w = t.data_as<float>()[r];
      const float stored = dtype == DType::kBF16 ? bf16_to_float(float_to_bf16(w / scales[channel]))
                                                 : half_to_float(float_to_half(w / scales[channel]));
      if (w != 0.0f && stored != 0.0f && std::isfinite(stored)) scales[channel] = w / stored;
    }
  }
}

void fold_scales(DenseTensors& tensors, const Checkpoint& checkpoint, const ScalingGroup& group,
                 const std::vector<float>& scales) {
  const int64_t k = static_cast<int64_t>(scales.size());
  for (const GroupLinear& linear : group.linears) {
    Tensor& w = dense_f32(tensors, checkpoint, linear.weight);
    BRISK_CHECK(w.shape().rank() == 2 && w.shape()[1] == k, "AWQ group {}: '{}' is {} but the group has {} inputs",
                group.name, linear.weight, w.view().describe(), k);
    float* data = w.data_as<float>();
    for (int64_t i = 0; i < w.shape().num_elements(); ++i) data[i] *= scales[i % k];
  }
  std::vector<std::string> divided = group.prev_biases;
  divided.insert(divided.begin(), group.prev);
  for (const std::string& name : divided) {
    Tensor& t = dense_f32(tensors, checkpoint, name);
    const int64_t row_elems = t.shape().rank() == 2 ? t.shape()[1] : 1;
    int64_t channel = 0;
    for (const RowBlock& block : group.prev_rows) {
      BRISK_CHECK(block.begin + block.count <= t.shape()[0], "AWQ group {}: rows {}..{} are outside '{}' ({})",
                  group.name, block.begin, block.begin + block.count, name, t.view().describe());
      for (int64_t r = block.begin; r < block.begin + block.count; ++r, ++channel) {
        BRISK_CHECK(channel < k, "AWQ group {}: '{}' has more rows than the group's {} inputs", group.name, name, k);
        float* row = t.data_as<float>() + r * row_elems;
        for (int64_t i = 0; i < row_elems; ++i) row[i] /= scales[channel];
      }
    }
    BRISK_CHECK(channel == k, "AWQ group {}: '{}' gives {} of the group's {} inputs", group.name, name, channel, k);
  }
}

}  // namespace brisk
