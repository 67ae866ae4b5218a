#include "engine_test_util.h"

#include <chrono>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace brisk::testing {

std::vector<RequestResult> collect_samples(RequestStream& stream, int32_t num_samples) {
  std::vector<RequestResult> results(num_samples);
  std::vector<bool> finished(num_samples, false);
  for (int32_t num_finished = 0; num_finished < num_samples;) {
    auto event = stream.next(std::chrono::seconds(60));
    if (!event) throw std::runtime_error("request stream stalled for 60 s");
    if (event->index < 0 || event->index >= num_samples || finished[event->index])
      throw std::runtime_error("event for sample " + std::to_string(event->index) + " out of range or after its end");
    RequestResult& result = results[event->index];
    if (!event->prompt_logprobs.empty()) {
      if (result.prompt_logprobs_event >= 0) throw std::runtime_error("prompt_logprobs delivered twice");
      result.prompt_logprobs_event = static_cast<int32_t>(result.tokens.size());
      result.prompt_logprobs = std::move(event->prompt_logprobs);
    }
    result.text += event->text;
    if (event->kind == RequestEvent::Kind::kToken) {
      result.tokens.push_back(event->token);
      result.logprobs.push_back(event->logprob);
      result.top_logprobs.push_back(event->top_logprobs);
      continue;
    }
    result.finish_reason = event->finish_reason;
    result.error = event->error;
    result.num_cached_prompt_tokens = event->num_cached_prompt_tokens;
    finished[event->index] = true;
    num_finished++;
  }
  return results;
}

RequestResult collect(RequestStream& stream) { return collect_samples(stream, 1)[0]; }

RequestResult run_request(Engine& engine, GenerationRequest request) {
  return collect(*engine.submit(std::move(request)));
}

std::filesystem::path synthetic_tokenizer_model_dir() {
  const std::filesystem::path dir = make_temp_dir("brisk-synthetic-model");
  std::filesystem::copy_file(test_data_dir() / "tokenizer" / "synthetic_bytelevel" / "tokenizer.json",
                             dir / "tokenizer.json");
  auto config = nlohmann::json::parse(
      read_file(test_data_dir() / "models" / "llama-gqa4-hd64-tied-llama3rope-bf16" / "config.json"));
  config["vocab_size"] = 768;
  config["eos_token_id"] = 1;
  write_file(dir / "config.json", config.dump());
  return dir;
}

}  // namespace brisk::testing
