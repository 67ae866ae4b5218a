#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/host_convert.h"
#include "core/parallel.h"
#include "model/safetensors.h"

namespace brisk {
namespace {

int64_t qkv_rows(const ModelConfig& c) { return (c.num_heads + 2 * c.num_kv_heads) * c.head_dim; }

// Tensor names of one architecture's checkpoint layout.
struct NameScheme {
  std::string embed, final_norm, lm_head;
  std::string layer_prefix;  // followed by the layer index and '.'
  std::string input_norm, post_norm, o_proj, gate, up, down;
  std::string q, k, v, q_bias, k_bias, v_bias, q_norm, k_norm;  // HF split layout
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
    n.wqkv = "attention.wqkv.weight";
    n.q_bias = "attention.wqkv.bias";
    n.o_proj = "attention.wo.weight";
    n.gate = "feed_forward.w1.weight";
    n.up = "feed_forward.w3.weight";
    n.down = "feed_forward.w2.weight";
    return n;
  }
  NameScheme n;
  n.embed = "model.embed_tokens.weight";
  n.final_norm = "model.norm.weight";
  n.lm_head = "lm_head.weight";
  n.layer_prefix = "model.layers.";
  n.input_norm = "input_layernorm.weight";
  n.post_norm = "post_attention_layernorm.weight";
  n.q = "self_attn.q_proj.weight";
  n.k = "self_attn.k_proj.weight";
  n.v = "self_attn.v_proj.weight";
  n.q_bias = "self_attn.q_proj.bias";
  n.k_bias = "self_attn.k_proj.bias";
  n.v_bias = "self_attn.v_proj.bias";
  n.q_norm = "self_attn.q_norm.weight";
  n.k_norm = "self_attn.k_norm.weight";
  n.o_proj = "self_attn.o_proj.weight";
  n.gate = "mlp.gate_proj.weight";
  n.up = "mlp.up_proj.weight";
  n.down = "mlp.down_proj.weight";
  return n;
}

// Builds canonical tensors in the backend's memory from host views (mapped checkpoint data).
class WeightBuilder {
 public:
  WeightBuilder(const Checkpoint& checkpoint, Backend& backend, ModelWeights& out)
      : checkpoint_(checkpoint), backend_(backend), out_(out) {}

  // The named tensor, checked against the expected shape.
  TensorView get(const std::string& name, const Shape& expected) const {
    if (!checkpoint_.contains(name))
      throw_error(ErrorCode::kNotFound, "model folder {}: tensor '{}' (expected shape {}) is missing",
                  checkpoint_.dir().string(), name, expected.to_string());
    TensorView t = checkpoint_.tensor(name);
    if (t.shape() != expected)
      throw_error(ErrorCode::kInvalidArgument,
                  "tensor '{}' in {} has shape {} but config.json implies {}", name,
                  checkpoint_.file_of(name).string(), t.shape().to_string(), expected.to_string());
    if (!is_floating(t.dtype()) || dtype_bits(t.dtype()) < 16)
      throw_error(ErrorCode::kUnsupported, "tensor '{}' in {} has dtype {}; expected f32, f16 or bf16",
                  name, checkpoint_.file_of(name).string(), dtype_name(t.dtype()));
    return t;
  }

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
    if (backend_.shares_host_memory()) return keep(std::move(host));
    return place(host.view());
  }

 private:
  TensorView keep(Tensor tensor) {
    out_.owned.push_back(std::move(tensor));
    return out_.owned.back().view();
  }

  const Checkpoint& checkpoint_;
  Backend& backend_;
  ModelWeights& out_;
};

// InternLM2 packs q/k/v per KV head: [q_0 .. q_{G-1}, k, v] for each KV head h. Returns the row
// blocks of that tensor in canonical order (all q heads, all k heads, all v heads).
std::vector<WeightBuilder::Rows> internlm2_qkv_rows(TensorView packed, const ModelConfig& c) {
  int64_t group = c.num_heads / c.num_kv_heads;
  int64_t d = c.head_dim;
  std::vector<WeightBuilder::Rows> rows;
  for (int64_t head = 0; head < c.num_heads; ++head)
    rows.push_back({packed, ((head / group) * (group + 2) + head % group) * d, d});
  for (int64_t kv = 0; kv < c.num_kv_heads; ++kv) rows.push_back({packed, (kv * (group + 2) + group) * d, d});
  for (int64_t kv = 0; kv < c.num_kv_heads; ++kv) rows.push_back({packed, (kv * (group + 2) + group + 1) * d, d});
  return rows;
}

LayerWeights load_layer(const ModelConfig& c, const NameScheme& n, int64_t index, WeightBuilder& b) {
  std::string p = n.layer_prefix + std::to_string(index) + ".";
  const int64_t hidden = c.hidden_size, q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  LayerWeights w;
  w.input_norm = b.place(b.get(p + n.input_norm, {hidden}));
  w.post_norm = b.place(b.get(p + n.post_norm, {hidden}));
  if (c.architecture == Architecture::kInternLM2) {
    TensorView packed = b.get(p + n.wqkv, {qkv_rows(c), hidden});
    w.qkv = b.concat_rows(internlm2_qkv_rows(packed, c), hidden);
    if (c.attention_bias)
      w.qkv_bias = b.concat_rows(internlm2_qkv_rows(b.get(p + n.q_bias, {qkv_rows(c)}), c), 0);
  } else {
    w.qkv = b.concat_rows({{b.get(p + n.q, {q_rows, hidden}), 0, q_rows},
                           {b.get(p + n.k, {kv_rows, hidden}), 0, kv_rows},
                           {b.get(p + n.v, {kv_rows, hidden}), 0, kv_rows}},
                          hidden);
    if (c.attention_bias)
      w.qkv_bias = b.concat_rows({{b.get(p + n.q_bias, {q_rows}), 0, q_rows},
                                  {b.get(p + n.k_bias, {kv_rows}), 0, kv_rows},
                                  {b.get(p + n.v_bias, {kv_rows}), 0, kv_rows}},
                                 0);
  }
  if (c.qk_norm) {
    w.q_norm = b.place(b.get(p + n.q_norm, {c.head_dim}));
    w.k_norm = b.place(b.get(p + n.k_norm, {c.head_dim}));
  }
  w.o_proj = b.place(b.get(p + n.o_proj, {hidden, q_rows}));
  const int64_t inter = c.intermediate_size;
  w.gate_up = b.concat_rows({{b.get(p + n.gate, {inter, hidden}), 0, inter},
                             {b.get(p + n.up, {inter, hidden}), 0, inter}},
                            hidden);
  w.down = b.place(b.get(p + n.down, {hidden, inter}));
  return w;
}

}  // namespace

uint64_t ModelWeights::num_bytes() const {
  uint64_t total = embed.num_bytes() / std::max<int64_t>(embed.size(0), 1);  // one row per token
  total += final_norm.num_bytes() + lm_head.num_bytes();
  for (const LayerWeights& l : layers)
    for (const TensorView* t : {&l.input_norm, &l.qkv, &l.qkv_bias, &l.q_norm, &l.k_norm, &l.o_proj, &l.post_norm,
                                &l.gate_up, &l.down})
      if (!t->empty()) total += t->num_bytes();
  return total;
}

ModelWeights load_weights(const ModelConfig& config, const std::filesystem::path& model_dir,
                          Backend& backend, const LoadProgress& on_progress) {
  ModelWeights weights;
  auto checkpoint = std::make_shared<Checkpoint>(Checkpoint::open(model_dir));
  weights.checkpoint = checkpoint;
  WeightBuilder b(*checkpoint, backend, weights);
  NameScheme n = names_for(config.architecture);
  weights.embed = b.place(b.get(n.embed, {config.vocab_size, config.hidden_size}));
  weights.final_norm = b.place(b.get(n.final_norm, {config.hidden_size}));
  if (config.tie_word_embeddings) {
    weights.lm_head = weights.embed;
  } else {
    weights.lm_head = b.place(b.get(n.lm_head, {config.vocab_size, config.hidden_size}));
  }
  for (int64_t i = 0; i < config.num_layers; ++i) {
    weights.layers.push_back(load_layer(config, n, i, b));
    if (on_progress) on_progress(i + 1, config.num_layers);
  }
  spdlog::debug("loaded {} layers from {}", config.num_layers, model_dir.string());
  return weights;
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
    l.qkv = dummy(backend, w, dt, {qkv_rows(c), hidden}, std, rng);
    if (c.attention_bias) l.qkv_bias = dummy(backend, w, dt, {qkv_rows(c)}, std, rng);
    if (c.qk_norm) {
      l.q_norm = dummy(backend, w, dt, {c.head_dim}, 0.0f, rng);
      l.k_norm = dummy(backend, w, dt, {c.head_dim}, 0.0f, rng);
    }
    l.o_proj = dummy(backend, w, dt, {hidden, c.num_heads * c.head_dim}, std, rng);
    l.gate_up = dummy(backend, w, dt, {2 * c.intermediate_size, hidden}, std, rng);
    l.down = dummy(backend, w, dt, {hidden, c.intermediate_size}, std, rng);
    w.layers.push_back(l);
    if (on_progress) on_progress(i + 1, c.num_layers);
  }
  return w;
}

}  // namespace brisk
