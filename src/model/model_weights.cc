#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/host_convert.h"
#include "core/parallel.h"
#include "model/fp8_weight.h"
#include "model/int4_weight.h"
#include "model/safetensors.h"
#include "model/tensor_parallel.h"

namespace brisk {
namespace {

int64_t qkv_rows(const ModelConfig& c) { return (c.num_heads + 2 * c.num_kv_heads) * c.head_dim; }

// Tensor names of one architecture's checkpoint layout.
struct NameScheme {
  std::string embed, final_norm, lm_head;
  std::string layer_prefix;  // followed by the layer index and '.'
  std::string input_norm, post_norm, q_bias, k_bias, v_bias, q_norm, k_norm;
  // Linear layers by module name: "<name>.weight" when dense, "<name>.qweight" etc. when int4.
  std::string o_proj, gate, up, down;
  std::string q, k, v;       // HF split layout
  std::string wqkv;          // InternLM2 packed layout
};

NameScheme names_for(Architecture arch) {
  if (arch == Architecture::kInternLM2) {
    NameScheme n;
    n.embed = "model.tok_embeddings.weight";
    n.final_norm = "model.norm.weight";
    n.lm_head = "output.weight";
    n.layer_prefix = "model.layers.";
    n.input_norm = "attention_norm.weight";
    n.post_norm = "ffn_norm.weight";
    n.wqkv = "attention.wqkv";
    n.q_bias = "attention.wqkv.bias";
    n.o_proj = "attention.wo";
    n.gate = "feed_forward.w1";
    n.up = "feed_forward.w3";
    n.down = "feed_forward.w2";
    return n;
  }
  NameScheme n;
  n.embed = "model.embed_tokens.weight";
  n.final_norm = "model.norm.weight";
  n.lm_head = "lm_head.weight";
  n.layer_prefix = "model.layers.";
  n.input_norm = "input_layernorm.weight";
  n.post_norm = "post_attention_layernorm.weight";
  n.q = "self_attn.q_proj";
  n.k = "self_attn.k_proj";
  n.v = "self_attn.v_proj";
  n.q_bias = "self_attn.q_proj.bias";
  n.k_bias = "self_attn.k_proj.bias";
  n.v_bias = "self_attn.v_proj.bias";
  n.q_norm = "self_attn.q_norm.weight";
  n.k_norm = "self_attn.k_norm.weight";
  n.o_proj = "self_attn.o_proj";
  n.gate = "mlp.gate_proj";
  n.up = "mlp.up_proj";
  n.down = "mlp.down_proj";
  return n;
}

// Row ranges of one checkpoint linear layer that go into a canonical (possibly fused) one.
struct LinearPart {
  std::string name;  // module name: "<name>.weight" or "<name>.qweight", ...
  Shape shape;       // [out_features, in_features] of the whole checkpoint tensor
  int64_t begin;     // first row taken
  int64_t count;     // number of rows taken
};

// Builds canonical tensors in the backend's memory from host views (mapped checkpoint data).
class WeightBuilder {
 public:
  WeightBuilder(const Checkpoint& checkpoint, const QuantizationConfig& quantization, Backend& backend,
                ModelWeights& out, bool dequantize_int4)
      : checkpoint_(checkpoint), quantization_(quantization), backend_(backend), out_(out),
        dequantize_int4_(dequantize_int4) {}

  // The named tensor, checked against the expected shape.
  TensorView get(const std::string& name, const Shape& expected) const {
    TensorView t = get_any(name, expected);
    if (!is_floating(t.dtype()) || dtype_bits(t.dtype()) < 16)
      throw_error(ErrorCode::kUnsupported, "tensor '{}' in {} has dtype {}; expected f32, f16 or bf16",
                  name, checkpoint_.file_of(name).string(), dtype_name(t.dtype()));
    return t;
  }

  // A per-tensor fp8 scale (fp8_tensor_scale); kNotFound naming the tensor where it is missing.
  float tensor_scale(const std::string& name) const { return fp8_tensor_scale(checkpoint_.tensor(name), name); }

  // A host view used as is (zero-copy on backends that share host memory).
  TensorView place(TensorView host) { return to_backend(backend_, host, out_.owned); }

  // Concatenates row blocks into one tensor (in the first part's dtype) in the backend's memory.
  // Each part is a (view, first row, number of rows) triple.
  struct Rows {
    TensorView view;
    int64_t begin;
    int64_t count;
  };
  TensorView concat_rows(const std::vector<Rows>& parts, int64_t num_cols) {
    DType dtype = parts.front().view.dtype();
    int64_t num_rows = 0;
    for (const auto& p : parts) num_rows += p.count;
    Tensor host(cpu_allocator(), dtype, num_cols > 0 ? Shape{num_rows, num_cols} : Shape{num_rows});
    char* dst = static_cast<char*>(host.view().data());
    int64_t row_elems = num_cols > 0 ? num_cols : 1;
    for (const auto& p : parts) {
      TensorView src = p.view.slice(0, p.begin, p.begin + p.count);
      if (src.dtype() == dtype) {
        std::memcpy(dst, src.data(), src.num_bytes());
      } else {
        TensorView dst_view(dst, dtype, src.shape());
        convert_on_host(dst_view, src);
      }
      dst += dtype_bytes(dtype, p.count * row_elems);
    }
    return keep_or_place(std::move(host));
  }

  // A canonical linear layer from row ranges of checkpoint layers, all dense, all int4 or all FP8;
  // of one layer, its input features [col_begin, col_begin + col_count) when col_count > 0 (a
  // row-parallel shard).
  LinearWeight linear(const std::vector<LinearPart>& parts, int64_t col_begin = 0, int64_t col_count = 0) {
    BRISK_ASSERT(col_count == 0 || parts.size() == 1);
    const Storage storage = storage_of(parts.front().name);
    for (const LinearPart& p : parts)
      if (storage_of(p.name) != storage)
        throw_error(ErrorCode::kUnsupported, "model folder {}: '{}' and '{}' are fused but quantized differently",
                    checkpoint_.dir().string(), parts.front().name, p.name);
    if (storage == Storage::kFp8) return fp8_linear(parts, col_begin, col_count);
    LinearWeight w;
    if (storage == Storage::kDense) {
      const int64_t k = parts.front().shape[1];
      if (col_count > 0) {
        const TensorView rows = get(parts[0].name + ".weight", parts[0].shape).slice(0, parts[0].begin,
                                                                                     parts[0].begin + parts[0].count);
        w.dense = keep_or_place(copy_columns(rows, col_begin, col_count));
        return w;
      }
      if (parts.size() == 1 && parts[0].count == parts[0].shape[0]) {
        w.dense = place(get(parts[0].name + ".weight", parts[0].shape));
        return w;
      }
      std::vector<Rows> rows;
      for (const LinearPart& p : parts) rows.push_back({get(p.name + ".weight", p.shape), p.begin, p.count});
      w.dense = concat_rows(rows, k);
      return w;
    }
    std::map<std::string, Int4Weight> unpacked;
    std::vector<Int4Rows> rows;
    for (const LinearPart& p : parts) {
      auto it = unpacked.find(p.name);
      if (it == unpacked.end()) it = unpacked.emplace(p.name, unpack(p)).first;
      rows.push_back({&it->second, p.begin, p.count});
    }
    Int4Weight fused = rows.size() == 1 && parts[0].count == parts[0].shape[0]
                           ? std::move(unpacked.begin()->second) : brisk::concat_rows(rows);
    if (col_count > 0) fused = slice_columns(fused, col_begin, col_count);
    if (dequantize_int4_) {
      w.dense = keep_or_place(dequantize(fused));
      return w;
    }
    w.group_size = static_cast<int>(fused.group_size);
    w.qweight = keep_or_place(std::move(fused.qweight));
    w.layout = backend_.repack_int4(w.qweight);  // the backend's fastest layout (no-op on the CPU)
    w.scales = keep_or_place(std::move(fused.scales));
    if (!fused.zeros.empty()) w.zeros = keep_or_place(std::move(fused.zeros));
    return w;
  }

 private:
  enum class Storage { kDense, kInt4, kFp8 };
  Storage storage_of(const std::string& module) const {
    if (checkpoint_.contains(module + ".qweight")) return Storage::kInt4;
    if (checkpoint_.contains(module + ".weight_scale") || checkpoint_.contains(module + ".weight_scale_inv"))
      return Storage::kFp8;
    return Storage::kDense;
  }

  LinearWeight fp8_linear(const std::vector<LinearPart>& parts, int64_t col_begin, int64_t col_count) {
    if (quantization_.method != QuantMethod::kFp8)
      throw_error(ErrorCode::kInvalidArgument,
                  "model folder {}: '{}' has FP8 weight scales but config.json has no FP8 quantization_config",
                  checkpoint_.dir().string(), parts.front().name);
    std::map<std::string, Fp8Weight> unpacked;
    std::vector<Fp8Rows> rows;
    for (const LinearPart& p : parts) {
      auto it = unpacked.find(p.name);
      if (it == unpacked.end()) {
        const std::string scale = checkpoint_.contains(p.name + ".weight_scale_inv") ? ".weight_scale_inv" : ".weight_scale";
        const Fp8Tensors t{get_any(p.name + ".weight", p.shape), checkpoint_.tensor(p.name + scale),
                           checkpoint_.contains(p.name + ".input_scale") ? checkpoint_.tensor(p.name + ".input_scale")
                                                                         : TensorView()};
        it = unpacked.emplace(p.name, from_fp8_checkpoint(t, quantization_, p.name)).first;
      }
      rows.push_back({&it->second, p.begin, p.count});
    }
    Fp8Weight fused = brisk::concat_rows(rows);
    if (col_count > 0) fused = slice_columns(fused, col_begin, col_count);
    LinearWeight w;
    w.fp8_block_size = fused.block_size;
    w.fp8_row_blocks = fused.row_blocks;
    if (fused.input_scale > 0.0f) {
      Tensor input_scale(cpu_allocator(), DType::kF32, {1});
      input_scale.data_as<float>()[0] = fused.input_scale;
      w.input_scale = keep_or_place(std::move(input_scale));
    }
    w.fp8 = keep_or_place(std::move(fused.weight));
    w.fp8_scale = keep_or_place(std::move(fused.weight_scale));
    return w;
  }

  TensorView get_any(const std::string& name, const Shape& expected) const {
    if (!checkpoint_.contains(name))
      throw_error(ErrorCode::kNotFound, "model folder {}: tensor '{}' (expected shape {}) is missing",
                  checkpoint_.dir().string(), name, expected.to_string());
    TensorView t = checkpoint_.tensor(name);
    if (t.shape() != expected)
      throw_error(ErrorCode::kInvalidArgument,
                  "tensor '{}' in {} has shape {} but config.json implies {}", name,
                  checkpoint_.file_of(name).string(), t.shape().to_string(), expected.to_string());
    return t;
  }

  // The int4 layer `p.name` in brisk's layout, its shapes checked against the config.
  Int4Weight unpack(const LinearPart& p) const {
    const int64_t n = p.shape[0], k = p.shape[1];
    const int64_t group = quantization_.group_size > 0 ? quantization_.group_size : k;
    if (quantization_.method == QuantMethod::kNone)
      throw_error(ErrorCode::kInvalidArgument,
                  "model folder {}: '{}.qweight' is quantized but config.json has no quantization_config",
                  checkpoint_.dir().string(), p.name);
    if (k % group != 0 || n % 8 != 0 || k % 8 != 0)
      throw_error(ErrorCode::kUnsupported,
                  "model folder {}: '{}' is [{}, {}]; int4 layers need both sizes to be multiples of 8 and "
                  "in_features a multiple of the group size {}", checkpoint_.dir().string(), p.name, n, k, group);
    const std::string& name = p.name;
    const Shape group_shape{k / group, n};
    const TensorView scales = get(name + ".scales", group_shape);
    const TensorView qzeros = get_any(name + ".qzeros", {k / group, n / 8});
    if (quantization_.method == QuantMethod::kAwq)
      return from_awq({get_any(name + ".qweight", {k, n / 8}), qzeros, scales}, group, name);
    GptqTensors t{get_any(name + ".qweight", {k / 8, n}), qzeros, scales, {}};
    if (checkpoint_.contains(name + ".g_idx")) t.g_idx = get_any(name + ".g_idx", {k});
    return from_gptq(t, group, {quantization_.symmetric, quantization_.zero_offset}, name);
  }

  TensorView keep_or_place(Tensor host) {
    if (!backend_.shares_host_memory()) return place(host.view());
    out_.owned.push_back(std::move(host));
    return out_.owned.back().view();
  }

  const Checkpoint& checkpoint_;
  const QuantizationConfig& quantization_;
  Backend& backend_;
  ModelWeights& out_;
  bool dequantize_int4_;
};

// InternLM2 packs q/k/v per KV head: [q_0 .. q_{G-1}, k, v] for each KV head h. Returns the
// (first row, number of rows) blocks of that tensor in canonical order (all q heads, all k
// heads, all v heads).
std::vector<std::pair<int64_t, int64_t>> internlm2_qkv_rows(const ModelConfig& c) {
  int64_t group = c.num_heads / c.num_kv_heads;
  int64_t d = c.head_dim;
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (int64_t head = 0; head < c.num_heads; ++head) rows.push_back({((head / group) * (group + 2) + head % group) * d, d});
  for (int64_t kv = 0; kv < c.num_kv_heads; ++kv) rows.push_back({(kv * (group + 2) + group) * d, d});
  for (int64_t kv = 0; kv < c.num_kv_heads; ++kv) rows.push_back({(kv * (group + 2) + group + 1) * d, d});
  return rows;
}

// A tensor-parallel rank's layer (tensor_parallel.h): its heads' q / k / v rows, its share of o_proj's
// input features, gate and up rows and down's input features.
LayerWeights load_layer(const ModelConfig& c, const NameScheme& n, int64_t index, WeightBuilder& b,
                        const ModelShard& s) {
  std::string p = n.layer_prefix + std::to_string(index) + ".";
  const int64_t hidden = c.hidden_size, q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  const int64_t d = c.head_dim;
  const int64_t q_begin = s.first_head * d, q_count = s.num_heads * d;
  const int64_t kv_begin = s.first_kv_head * d, kv_count = s.num_kv_heads * d;
  LayerWeights w;
  w.input_norm = b.place(b.get(p + n.input_norm, {hidden}));
  w.post_norm = b.place(b.get(p + n.post_norm, {hidden}));
  if (c.architecture == Architecture::kInternLM2) {
    std::vector<LinearPart> parts;
    std::vector<WeightBuilder::Rows> bias_rows;
    TensorView bias = c.attention_bias ? b.get(p + n.q_bias, {qkv_rows(c)}) : TensorView();
    const auto blocks = internlm2_qkv_rows(c);  // one per q head, then per k head, then per v head
    std::vector<std::pair<int64_t, int64_t>> mine(blocks.begin() + s.first_head,
                                                  blocks.begin() + s.first_head + s.num_heads);
    for (int64_t kind = 0; kind < 2; ++kind) {
      const auto first = blocks.begin() + c.num_heads + kind * c.num_kv_heads + s.first_kv_head;
      mine.insert(mine.end(), first, first + s.num_kv_heads);
    }
    for (auto [begin, count] : mine) {
      parts.push_back({p + n.wqkv, {qkv_rows(c), hidden}, begin, count});
      bias_rows.push_back({bias, begin, count});
    }
    w.qkv = b.linear(parts);
    if (c.attention_bias) w.qkv_bias = b.concat_rows(bias_rows, 0);
  } else {
    w.qkv = b.linear({{p + n.q, {q_rows, hidden}, q_begin, q_count},
                      {p + n.k, {kv_rows, hidden}, kv_begin, kv_count},
                      {p + n.v, {kv_rows, hidden}, kv_begin, kv_count}});
    if (c.attention_bias)
      w.qkv_bias = b.concat_rows({{b.get(p + n.q_bias, {q_rows}), q_begin, q_count},
                                  {b.get(p + n.k_bias, {kv_rows}), kv_begin, kv_count},
                                  {b.get(p + n.v_bias, {kv_rows}), kv_begin, kv_count}},
                                 0);
  }
  if (c.qk_norm) {
    w.q_norm = b.place(b.get(p + n.q_norm, {c.head_dim}));
    w.k_norm = b.place(b.get(p + n.k_norm, {c.head_dim}));
  }
  const bool split = s.num_heads != c.num_heads;
  w.o_proj = b.linear({{p + n.o_proj, {hidden, q_rows}, 0, hidden}}, q_begin, split ? q_count : 0);
  if (c.quantization.kv_cache_scales) {
    w.k_cache_scale = b.tensor_scale(p + "self_attn.k_scale");
    w.v_cache_scale = b.tensor_scale(p + "self_attn.v_scale");
  }
  const int64_t inter = c.intermediate_size, i_begin = s.first_intermediate, i_count = s.intermediate_size;
  w.gate_up = b.linear({{p + n.gate, {inter, hidden}, i_begin, i_count},
                        {p + n.up, {inter, hidden}, i_begin, i_count}});
  w.down = b.linear({{p + n.down, {hidden, inter}, 0, hidden}}, i_begin, split ? i_count : 0);
  return w;
}

}  // namespace

uint64_t LinearWeight::num_bytes() const {
  uint64_t total = 0;
  for (const TensorView* t : {&dense, &qweight, &scales, &zeros, &fp8, &fp8_scale})
    if (!t->empty()) total += t->num_bytes();
  return total;
}

void run_linear(Backend& backend, TensorView x, const LinearWeight& w, TensorView bias, TensorView y, bool silu_gate) {
  BRISK_CHECK(w.is_int4() || !silu_gate, "run_linear: silu_gate needs an int4 weight (gemm_w4a16)");
  if (w.is_fp8()) {
    backend.gemm_fp8({x, w.fp8, w.fp8_scale, w.input_scale, w.fp8_block_size, bias, y, w.fp8_row_blocks});
    return;
  }
  y = y.slice(0, 0, x.size(0));
  if (!w.is_int4()) {
    backend.gemm({x, w.dense, bias, y});
    return;
  }
  GemmW4A16Params p;
  p.x = x;
  p.qweight = w.qweight;
  p.scales = w.scales;
  p.zeros = w.zeros;
  p.group_size = w.group_size;
  p.bias = bias;
  p.y = y;
  p.layout = w.layout;
  p.silu_gate = silu_gate;
  backend.gemm_w4a16(p);
}

uint64_t ModelWeights::num_bytes() const {
  uint64_t total = embed.num_bytes() / std::max<int64_t>(embed.size(0), 1);  // one row per token
  total += final_norm.num_bytes() + lm_head.num_bytes();
  for (const LayerWeights& l : layers) {
    for (const TensorView* t : {&l.input_norm, &l.qkv_bias, &l.q_norm, &l.k_norm, &l.post_norm})
      if (!t->empty()) total += t->num_bytes();
    for (const LinearWeight* w : {&l.qkv, &l.o_proj, &l.gate_up, &l.down}) total += w->num_bytes();
  }
  return total;
}

ModelWeights load_weights(const ModelConfig& config, const std::filesystem::path& model_dir,
                          Backend& backend, bool dequantize_int4, const LoadProgress& on_progress,
                          const ModelShard& shard) {
  const ModelShard s = shard.num_heads > 0 ? shard : model_shard(config, 0, 1);
  ModelWeights weights;
  auto checkpoint = std::make_shared<Checkpoint>(Checkpoint::open(model_dir));
  weights.checkpoint = checkpoint;
  WeightBuilder b(*checkpoint, config.quantization, backend, weights, dequantize_int4);
  NameScheme n = names_for(config.architecture);
  const Shape vocab_shape{config.vocab_size, config.hidden_size};
  const int64_t v_begin = s.first_vocab, v_end = s.first_vocab + s.vocab_size;
  weights.embed = b.place(b.get(n.embed, vocab_shape).slice(0, v_begin, v_end));
  weights.final_norm = b.place(b.get(n.final_norm, {config.hidden_size}));
  if (config.tie_word_embeddings) {
    weights.lm_head = weights.embed;
  } else {
    weights.lm_head = b.place(b.get(n.lm_head, vocab_shape).slice(0, v_begin, v_end));
  }
  for (int64_t i = 0; i < config.num_layers; ++i) {
    weights.layers.push_back(load_layer(config, n, i, b, s));
    if (on_progress) on_progress(i + 1, config.num_layers);
  }
  spdlog::debug("loaded {} layers from {}", config.num_layers, model_dir.string());
  return weights;
}

std::vector<std::string> linear_module_names(const ModelConfig& config) {
  const NameScheme n = names_for(config.architecture);
  std::vector<std::string> names;
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = n.layer_prefix + std::to_string(i) + ".";
    if (config.architecture == Architecture::kInternLM2) {
      names.push_back(p + n.wqkv);
    } else {
      for (const std::string* m : {&n.q, &n.k, &n.v}) names.push_back(p + *m);
    }
    for (const std::string* m : {&n.o_proj, &n.gate, &n.up, &n.down}) names.push_back(p + *m);
  }
  return names;
}

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Fills a new host tensor with uniform values of standard deviation `std` (or ones) and places
// it in the backend's memory. Chunks of fixed size get their own generator state, so the values
// do not depend on the number of threads (8B-parameter shapes fill in seconds).
TensorView dummy(Backend& backend, ModelWeights& out, DType dtype, Shape shape, float std, uint64_t& rng) {
  Tensor host(cpu_allocator(), dtype, shape);
  const float half_width = std * std::sqrt(3.0f);
  const uint64_t tensor_seed = splitmix64(rng);
  constexpr int64_t kChunk = 1 << 16;
  const int64_t num_elements = shape.num_elements();
  parallel_for((num_elements + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      uint64_t state = tensor_seed ^ (static_cast<uint64_t>(chunk) * 0xd1342543de82ef95ull);
      for (int64_t i = chunk * kChunk; i < std::min(num_elements, (chunk + 1) * kChunk); ++i) {
        float v = std == 0.0f ? 1.0f : (static_cast<float>(splitmix64(state) >> 40) / 16777216.0f * 2 - 1) * half_width;
        store_float(host, i, v);
      }
    }
  });
  if (!backend.shares_host_memory()) return to_backend(backend, host, out.owned);
  out.owned.push_back(std::move(host));
  return out.owned.back().view();
}

// A random FP8 layer: uniform values of standard deviation `std` in e4m3 with one scale for all
// rows and blocks, and for static activation scales an input scale for activations up to +-8.
LinearWeight dummy_fp8_linear(Backend& backend, ModelWeights& out, const QuantizationConfig& q, int64_t n, int64_t k,
                              float std, uint64_t& rng) {
  const bool blocks = q.fp8_weights == Fp8WeightScales::kBlock;
  const int64_t groups = blocks ? (k + kFp8BlockSize - 1) / kFp8BlockSize : 1;
  const float half_width = std * std::sqrt(3.0f), scale = half_width / kE4M3Max;
  Tensor weight(cpu_allocator(), DType::kF8E4M3, {n, k});
  const uint64_t tensor_seed = splitmix64(rng);
  parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      uint64_t state = tensor_seed ^ (static_cast<uint64_t>(r) * 0xd1342543de82ef95ull);
      for (int64_t i = 0; i < k; ++i) {
        const float u = static_cast<float>(splitmix64(state) >> 40) / 16777216.0f * 2 - 1;  // [-1, 1)
        weight.data_as<uint8_t>()[r * k + i] = float_to_e4m3(u * kE4M3Max);
      }
    }
  });
  Tensor weight_scale(cpu_allocator(), DType::kF32, {n, groups});
  std::fill_n(weight_scale.data_as<float>(), n * groups, scale);
  LinearWeight w;
  w.fp8_block_size = blocks ? kFp8BlockSize : 0;
  w.fp8_row_blocks = blocks;
  w.fp8 = to_backend(backend, weight, out.owned);
  w.fp8_scale = to_backend(backend, weight_scale, out.owned);
  if (backend.shares_host_memory()) {
    out.owned.push_back(std::move(weight));
    out.owned.push_back(std::move(weight_scale));
  }
  if (q.fp8_activations == Fp8Activations::kStatic) {
    Tensor input_scale(cpu_allocator(), DType::kF32, {1});
    input_scale.data_as<float>()[0] = 8.0f / kE4M3Max;
    w.input_scale = to_backend(backend, input_scale, out.owned);
    if (backend.shares_host_memory()) out.owned.push_back(std::move(input_scale));
  }
  return w;
}

// A random linear layer: dense, or int4 (random codes, zero point 8, one scale for all groups
// giving the dense layer's std) when the config says the model is quantized.
LinearWeight dummy_linear(Backend& backend, ModelWeights& out, const ModelConfig& c, int64_t n, int64_t k,
                          float std, uint64_t& rng) {
  LinearWeight w;
  if (c.quantization.method == QuantMethod::kNone) {
    w.dense = dummy(backend, out, c.dtype, {n, k}, std, rng);
    return w;
  }
  if (c.quantization.method == QuantMethod::kFp8) return dummy_fp8_linear(backend, out, c.quantization, n, k, std, rng);
  const int64_t group = c.quantization.group_size > 0 ? c.quantization.group_size : k;
  BRISK_CHECK(k % group == 0 && k % 16 == 0,
              "dummy weights: in_features {} must be a multiple of 16 and of the group size {}", k, group);
  Tensor qweight(cpu_allocator(), DType::kI4, {n, k});
  const uint64_t tensor_seed = splitmix64(rng);
  uint64_t* words = static_cast<uint64_t*>(qweight.view().data());  // n * k / 2 bytes
  parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      uint64_t state = tensor_seed ^ (static_cast<uint64_t>(r) * 0xd1342543de82ef95ull);
      for (int64_t i = 0; i < k / 16; ++i) words[r * (k / 16) + i] = splitmix64(state);
    }
  });
  Tensor scales(cpu_allocator(), DType::kF16, {n, k / group});
  for (int64_t i = 0; i < scales.view().num_elements(); ++i) store_float(scales, i, std / 4.6f);  // std of q - 8
  w.group_size = static_cast<int>(group);
  w.qweight = to_backend(backend, qweight, out.owned);
  w.layout = backend.repack_int4(w.qweight);
  w.scales = to_backend(backend, scales, out.owned);
  if (backend.shares_host_memory()) {
    out.owned.push_back(std::move(qweight));
    out.owned.push_back(std::move(scales));
  }
  return w;
}

}  // namespace

ModelWeights make_dummy_weights(const ModelConfig& c, Backend& backend, uint64_t seed, const LoadProgress& on_progress) {
  ModelWeights w;
  uint64_t rng = seed;
  const DType dt = c.dtype;
  const float std = 0.02f;
  const int64_t hidden = c.hidden_size;
  w.embed = dummy(backend, w, dt, {c.vocab_size, hidden}, std, rng);
  w.final_norm = dummy(backend, w, dt, {hidden}, 0.0f, rng);
  w.lm_head = c.tie_word_embeddings ? w.embed : dummy(backend, w, dt, {c.vocab_size, hidden}, std, rng);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights l;
    l.input_norm = dummy(backend, w, dt, {hidden}, 0.0f, rng);
    l.post_norm = dummy(backend, w, dt, {hidden}, 0.0f, rng);
    l.qkv = dummy_linear(backend, w, c, qkv_rows(c), hidden, std, rng);
    if (c.attention_bias) l.qkv_bias = dummy(backend, w, dt, {qkv_rows(c)}, std, rng);
    if (c.qk_norm) {
      l.q_norm = dummy(backend, w, dt, {c.head_dim}, 0.0f, rng);
      l.k_norm = dummy(backend, w, dt, {c.head_dim}, 0.0f, rng);
    }
    l.o_proj = dummy_linear(backend, w, c, hidden, c.num_heads * c.head_dim, std, rng);
    l.gate_up = dummy_linear(backend, w, c, 2 * c.intermediate_size, hidden, std, rng);
    l.down = dummy_linear(backend, w, c, hidden, c.intermediate_size, std, rng);
    w.layers.push_back(l);
    if (on_progress) on_progress(i + 1, c.num_layers);
  }
  return w;
}

}  // namespace brisk
