#include "backend/op_timing_backend.h"

#include <algorithm>

#include <fmt/format.h>

namespace brisk {
namespace {

// A weight's [out, in] shape names the layer it belongs to.
std::string shape_name(const char* op, const TensorView& w) { return fmt::format("{} {}x{}", op, w.size(0), w.size(1)); }

std::string attention_name(const char* op, const AttentionParams& p) {
  return fmt::format("{} ({})", op, p.max_query_len == 1 ? "one token a sequence" : "prompt chunks");
}

}  // namespace

template <typename Fn>
void OpTimingBackend::timed(std::string op, Fn&& run) {
  Pending p{std::move(op), label_, inner_->record_fence(), nullptr};
  run();
  p.end = inner_->record_fence();
  pending_.push_back(std::move(p));
}

void OpTimingBackend::flush() {
  for (Pending& p : pending_) {
    p.end->wait();
    OpTime& t = totals_[{p.label, p.op}];
    t.label = p.label;
    t.op = p.op;
    t.num_calls++;
    t.device_s += p.end->seconds_since(*p.start);
  }
  pending_.clear();
}

std::vector<OpTime> OpTimingBackend::totals() const {
  std::vector<OpTime> out;
  for (const auto& [key, t] : totals_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const OpTime& a, const OpTime& b) { return a.device_s > b.device_s; });
  return out;
}

void OpTimingBackend::copy(TensorView dst, TensorView src) { timed("copy", [&] { inner_->copy(dst, src); }); }
void OpTimingBackend::copy_async(TensorView dst, TensorView src) {
  timed("copy", [&] { inner_->copy_async(dst, src); });
}
void OpTimingBackend::convert(TensorView dst, TensorView src) { timed("convert", [&] { inner_->convert(dst, src); }); }
void OpTimingBackend::embedding(const EmbeddingParams& p) { timed("embedding", [&] { inner_->embedding(p); }); }
void OpTimingBackend::rms_norm(const RmsNormParams& p) {
  timed(p.residual.empty() ? "rms_norm" : "add + rms_norm", [&] { inner_->rms_norm(p); });
}
void OpTimingBackend::rope_kv_append(const RopeKvAppendParams& p) {
  timed("rope_kv_append", [&] { inner_->rope_kv_append(p); });
}
void OpTimingBackend::gemm(const GemmParams& p) { timed(shape_name("gemm", p.w), [&] { inner_->gemm(p); }); }
void OpTimingBackend::gemm_fp8(const GemmFp8Params& p) {
  timed(shape_name("gemm_fp8", p.weight), [&] { inner_->gemm_fp8(p); });
}

void OpTimingBackend::gemm_w4a16(const GemmW4A16Params& p) {
  timed(shape_name(p.silu_gate ? "gemm_w4a16 + silu" : "gemm_w4a16", p.qweight), [&] { inner_->gemm_w4a16(p); });
}
void OpTimingBackend::attention(const AttentionParams& p) {
  timed(attention_name("attention", p), [&] { inner_->attention(p); });
}
void OpTimingBackend::rope_append_attention(const RopeKvAppendParams& append, const AttentionParams& attn) {
  timed(attention_name("rope_kv_append + attention", attn), [&] { inner_->rope_append_attention(append, attn); });
}
void OpTimingBackend::silu_mul(const SiluMulParams& p) { timed("silu_mul", [&] { inner_->silu_mul(p); }); }
void OpTimingBackend::sample(const SampleParams& p) { timed("sample", [&] { inner_->sample(p); }); }
void OpTimingBackend::top_logprobs(const TopLogprobsParams& p) {
  timed("top_logprobs", [&] { inner_->top_logprobs(p); });
}
void OpTimingBackend::token_logprobs(const TokenLogprobsParams& p) {
  timed("token_logprobs", [&] { inner_->token_logprobs(p); });
}
void OpTimingBackend::feed_tokens(const FeedTokensParams& p) { timed("feed_tokens", [&] { inner_->feed_tokens(p); }); }
void OpTimingBackend::apply_token_bitmask(const TokenBitmaskParams& p) {
  timed("apply_token_bitmask", [&] { inner_->apply_token_bitmask(p); });
}

void OpTimingBackend::logit_bias(const LogitBiasParams& p) {
  timed("logit_bias", [&] { inner_->logit_bias(p); });
}

}  // namespace brisk
