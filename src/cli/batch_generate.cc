#include "cli/batch_generate.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/prompt_input.h"
#include "core/error.h"
#include "core/json_util.h"

namespace brisk::cli {
namespace {

struct Line {
  GenerationRequest request;
};

template <typename T>
void read_field(const nlohmann::json& j, const char* key, T& out, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return;
  try {
    out = j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw_error(ErrorCode::kInvalidArgument, "{}: field '{}' has the wrong type ({})", where, key, j[key].dump());
  }
}

// OpenAI's logit_bias, {"token id": bias} (logit_bias_value clamps the biases); the engine refuses
// tokens outside the vocabulary or named twice.
void read_logit_bias(const nlohmann::json& j, SamplingParams& s, const std::string& where) {
  if (!j.contains("logit_bias") || j["logit_bias"].is_null()) return;
  const nlohmann::json& bias = j["logit_bias"];
  BRISK_CHECK(bias.is_object(), "{}: field 'logit_bias' must be an object of token ids to biases, got {}", where,
              describe_json(bias));
  for (const auto& [key, value] : bias.items()) {
    const std::optional<int32_t> token = token_id_key(key);
    BRISK_CHECK(token && value.is_number(), "{}: field 'logit_bias' maps token ids to numbers, got \"{}\": {}", where,
                key, describe_json(value));
    s.logit_bias.emplace_back(*token, logit_bias_value(value));
  }
}

GenerationRequest parse_line(const std::string& text, const std::string& where, const SamplingParams& defaults,
                             const Tokenizer* tokenizer) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kInvalidArgument, "{}: not valid JSON: {}", where, e.what());
  }
  BRISK_CHECK(j.is_object(), "{}: each line must be a JSON object", where);
  GenerationRequest r;
  r.sampling = defaults;
  if (j.contains("prompt_ids")) {
    read_field(j, "prompt_ids", r.prompt_ids, where);
  } else if (j.contains("prompt")) {
    BRISK_CHECK(j["prompt"].is_string(), "{}: 'prompt' must be a string", where);
    BRISK_CHECK(tokenizer != nullptr, "{}: a text prompt needs a tokenizer in the model folder (use prompt_ids)", where);
    r.prompt_ids = tokenizer->encode(j["prompt"].get<std::string>(), /*add_special_tokens=*/true);
  } else {
    throw_error(ErrorCode::kInvalidArgument, "{}: needs 'prompt' (text) or 'prompt_ids' (list of ids)", where);
  }
  SamplingParams& s = r.sampling;
  read_field(j, "max_tokens", s.max_tokens, where);
  read_field(j, "min_tokens", s.min_tokens, where);
  read_field(j, "temperature", s.temperature, where);
  read_field(j, "top_p", s.top_p, where);
  read_field(j, "top_k", s.top_k, where);
  read_field(j, "min_p", s.min_p, where);
  read_field(j, "repetition_penalty", s.repetition_penalty, where);
  read_field(j, "frequency_penalty", s.frequency_penalty, where);
  read_field(j, "presence_penalty", s.presence_penalty, where);
  read_logit_bias(j, s, where);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t seed = 0;
    read_field(j, "seed", seed, where);
    s.seed = seed;
  }
  read_field(j, "ignore_eos", s.ignore_eos, where);
  read_field(j, "stop_token_ids", s.stop_token_ids, where);
  if (j.contains("stop") && j["stop"].is_string()) {
    s.stop = {j["stop"].get<std::string>()};
  } else {
    read_field(j, "stop", s.stop, where);
  }
  return r;
}

}  // namespace

int run_batch_generate(const EngineOptions& engine_options, const SamplingParams& defaults,
                       const std::string& input_path, const std::string& output_path) {
  std::ifstream in(input_path);
  if (!in) throw_error(ErrorCode::kNotFound, "--input: cannot open {}", input_path);
  auto tokenizer = Tokenizer::from_folder_if_any(engine_options.model_dir);
  std::vector<GenerationRequest> requests;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    requests.push_back(parse_line(text, fmt::format("{} line {}", input_path, line), defaults, tokenizer.get()));
  }
  BRISK_CHECK(!requests.empty(), "--input {} holds no requests", input_path);
  std::ofstream out(output_path);
  if (!out) throw_error(ErrorCode::kInvalidArgument, "--output: cannot write {}", output_path);

  auto engine = Engine::create(engine_options);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (auto& r : requests) streams.push_back(engine->submit(r));
  const bool progress = isatty(STDERR_FILENO);
  int64_t num_failed = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    nlohmann::json result = {{"index", i}};
    std::vector<int32_t> tokens;
    std::string output_text;
    std::optional<std::chrono::steady_clock::time_point> first;
    while (true) {
      RequestEvent e = *streams[i]->next();
      output_text += e.text;
      if (e.kind == RequestEvent::Kind::kFinished) {
        result["finish_reason"] = finish_reason_name(e.finish_reason);
        if (e.finish_reason == FinishReason::kError) {
          result["error"] = e.error;
          ++num_failed;
        }
        result["e2e_ms"] = std::chrono::duration<double, std::milli>(e.time - start).count();
        result["num_prompt_tokens"] = e.num_prompt_tokens;
        result["num_cached_prompt_tokens"] = e.num_cached_prompt_tokens;
        break;
      }
      if (!first) first = e.time;
      tokens.push_back(e.token);
    }
    result["token_ids"] = tokens;
    if (engine->has_tokenizer()) result["text"] = output_text;
    if (first) result["ttft_ms"] = std::chrono::duration<double, std::milli>(*first - start).count();
    out << result.dump() << "\n";
    if (progress) fmt::print(stderr, "\r[{:>5}/{}] requests done", i + 1, streams.size());
  }
  if (progress) fmt::print(stderr, "\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "{} requests in {:.2f} s ({} failed); results in {}\n", requests.size(), seconds, num_failed,
             output_path);
  return num_failed == 0 ? 0 : 1;
}

}  // namespace brisk::cli
