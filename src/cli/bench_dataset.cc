#include "cli/bench_dataset.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_report.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

// vLLM's is_valid_sequence bounds.
constexpr int64_t kMinLen = 4;
constexpr int64_t kMaxPromptLen = 1024;
constexpr int64_t kMaxTotalLen = 2048;
// Seeded output lengths of prompt-only files are clipped to this.
constexpr int64_t kMaxSampledOutputLen = 2048;

// The first human turn of one conversation and the "gpt" answer right after it, if any.
struct Conversation {
  std::string prompt;
  std::optional<std::string> answer;
};

const nlohmann::json* turn(const nlohmann::json& turns, size_t i, const char* from) {
  if (turns.size() <= i || !turns[i].is_object()) return nullptr;
  const nlohmann::json& t = turns[i];
  if (!t.contains("from") || t["from"] != from || !t.contains("value") || !t["value"].is_string()) return nullptr;
  return &t["value"];
}

std::vector<Conversation> read_conversations(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_error(ErrorCode::kNotFound, "--dataset: cannot open {}", path);
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kCorruptData, "--dataset {} is not valid JSON: {}", path, e.what());
  }
  BRISK_CHECK(data.is_array(), "--dataset {}: expected a ShareGPT list of {{\"id\", \"conversations\"}} objects", path);
  std::vector<Conversation> conversations;
  for (const nlohmann::json& entry : data) {
    if (!entry.is_object() || !entry.contains("conversations") || !entry["conversations"].is_array()) continue;
    const nlohmann::json& turns = entry["conversations"];
    const nlohmann::json* prompt = turn(turns, 0, "human");
    if (prompt == nullptr) continue;
    Conversation c{prompt->get<std::string>(), std::nullopt};
    if (const nlohmann::json* answer = turn(turns, 1, "gpt")) c.answer = answer->get<std::string>();
    conversations.push_back(std::move(c));
  }
  return conversations;
}

std::unique_ptr<Tokenizer> dataset_tokenizer(const WorkloadOptions& options, const ModelLimits& model) {
  if (!options.tokenizer.empty()) return Tokenizer::from_folder(options.tokenizer);
  if (model.model_dir.empty() || !model.has_tokenizer)
    throw_error(ErrorCode::kNotFound, "--dataset needs a tokenizer: {} has none; give --tokenizer DIR",
                model.model_dir.empty() ? std::string("the target") : "model folder " + model.model_dir.string());
  return Tokenizer::from_folder(model.model_dir);
}

// Stops at `wanted` requests; fewer means the file holds no more usable conversations. The
// answer counts as the tokens of its text alone, what a model generates for it (vLLM's sampler
// also counts the special tokens its tokenizer adds, a BOS for Llama-style ones).
std::vector<BenchRequest> answered_requests(const std::vector<Conversation>& conversations, const Tokenizer& tokenizer,
                                            int64_t max_total_len, size_t wanted) {
  std::vector<BenchRequest> requests;
  for (const Conversation& c : conversations) {
    if (requests.size() >= wanted) break;
    if (!c.answer) continue;
    std::vector<int32_t> prompt = tokenizer.encode(c.prompt, /*add_special_tokens=*/true);
    const auto prompt_len = static_cast<int64_t>(prompt.size());
    const auto output_len = static_cast<int64_t>(tokenizer.encode(*c.answer, /*add_special_tokens=*/false).size());
    if (prompt_len < kMinLen || output_len < kMinLen || prompt_len > kMaxPromptLen ||
        prompt_len + output_len > max_total_len)
      continue;
    requests.push_back({std::move(prompt), output_len});
  }
  return requests;
}

// Output lengths are drawn later (after any repeats), as for random prompts.
std::vector<BenchRequest> unanswered_requests(const std::vector<Conversation>& conversations,
                                              const Tokenizer& tokenizer, int64_t max_input_len, size_t wanted) {
  std::vector<BenchRequest> requests;
  for (const Conversation& c : conversations) {
    if (requests.size() >= wanted) break;
    std::vector<int32_t> prompt = tokenizer.encode(c.prompt, /*add_special_tokens=*/true);
    if (static_cast<int64_t>(prompt.size()) < kMinLen) continue;
    if (static_cast<int64_t>(prompt.size()) > max_input_len) prompt.resize(max_input_len);
    requests.push_back({std::move(prompt), 0});
  }
  return requests;
}

// Ids the model does not have: an error, unless the tokenizer substitutes for a model folder
// without one (dummy weights of a big shape tokenized with any tokenizer at hand): then the ids
// are folded into the vocabulary (id % vocab_size), which keeps the prompt lengths. Returns the
// number of ids folded.
int64_t fit_vocabulary(std::vector<BenchRequest>& requests, const WorkloadOptions& options, const ModelLimits& model) {
  if (model.vocab_size <= 0) return 0;
  const bool fold = !options.tokenizer.empty() && !model.has_tokenizer;
  int64_t num_folded = 0;
  for (BenchRequest& r : requests) {
    for (int32_t& id : r.prompt_ids) {
      if (id < model.vocab_size) continue;
      if (!fold)
        throw_error(ErrorCode::kInvalidArgument,
                    "--dataset: token id {} of the tokenizer in {} is outside the model's vocabulary of {} ids "
                    "(ids are only folded into it for a --tokenizer standing in for a model folder without one)",
                    id, options.tokenizer.empty() ? model.model_dir.string() : options.tokenizer, model.vocab_size);
      id = static_cast<int32_t>(id % model.vocab_size);
      num_folded++;
    }
  }
  return num_folded;
}

std::string length_stats(const std::vector<BenchRequest>& requests) {
  std::vector<double> prompts, outputs;
  for (const BenchRequest& r : requests) {
    prompts.push_back(static_cast<double>(r.prompt_ids.size()));
    outputs.push_back(static_cast<double>(r.output_len));
  }
  const Distribution p = distribution(prompts), o = distribution(outputs);
  return fmt::format("{} requests, prompt tokens mean {:.1f} / median {:g}, output tokens mean {:.1f} / median {:g}",
                     requests.size(), p.mean, p.p50, o.mean, o.p50);
}

// ShareGPT answers are long-tailed: gamma of shape 2 with the requested mean, within the context.
void sample_output_lengths(std::vector<BenchRequest>& requests, const WorkloadOptions& options, int64_t context) {
  std::mt19937_64 rng(options.seed);
  std::gamma_distribution<double> lengths(2.0, options.mean_output_len / 2.0);
  for (BenchRequest& r : requests) {
    const int64_t room = context - static_cast<int64_t>(r.prompt_ids.size());
    r.output_len = std::clamp<int64_t>(std::llround(lengths(rng)), 1, kMaxSampledOutputLen);
    r.output_len = std::max<int64_t>(1, std::min(r.output_len, room));
  }
}

Workload random_workload(const WorkloadOptions& options, const ModelLimits& model) {
  int64_t vocab_size = model.vocab_size;
  if (vocab_size <= 0 && !options.tokenizer.empty())
    vocab_size = Tokenizer::from_folder(options.tokenizer)->vocab_size();
  BRISK_CHECK(vocab_size > 0, "random prompts need a vocabulary to draw ids from: give --tokenizer DIR (its vocabulary)");
  BRISK_CHECK(options.input_len > 0 && options.output_len > 0,
              "--input-len ({}) and --output-len ({}) must be positive", options.input_len, options.output_len);
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int32_t> ids(0, static_cast<int32_t>(vocab_size - 1));
  Workload w;
  for (int64_t i = 0; i < options.num_prompts; ++i) {
    BenchRequest r{std::vector<int32_t>(options.input_len), options.output_len};
    for (int32_t& id : r.prompt_ids) id = ids(rng);
    w.requests.push_back(std::move(r));
  }
  w.description = fmt::format("workload: random token ids: {}", length_stats(w.requests));
  return w;
}

}  // namespace

ModelLimits model_limits(const Engine& engine, const std::filesystem::path& model_dir) {
  return {model_dir, engine.has_tokenizer(), engine.vocab_size(), engine.max_model_len()};
}

void add_workload_options(CLI::App* cmd, WorkloadOptions& o) {
  const char* group = "Workload";
  cmd->add_option("--num-prompts", o.num_prompts, "number of requests")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--input-len", o.input_len, "prompt tokens of random prompts (without --dataset)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--output-len", o.output_len, "generated tokens per random prompt (without --dataset)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--dataset", o.dataset,
                  "ShareGPT JSON: first human turns as prompts, the token counts of the answers after them as output "
                  "lengths (vLLM's filter: 4 <= prompt <= 1024, 4 <= output, prompt + output <= 2048); files "
                  "without answers get seeded output lengths (--mean-output-len)")
      ->group(group);
  cmd->add_option("--tokenizer", o.tokenizer,
                  "folder of the tokenizer for --dataset (default: the model's); for a model folder without a "
                  "tokenizer (dummy weights) ids past its vocabulary are folded into it (id % vocab_size)")
      ->group(group);
  cmd->add_option("--mean-output-len", o.mean_output_len, "mean of the seeded output lengths of files without answers")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--max-input-len", o.max_input_len, "files without answers: cut prompts to this many tokens")
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--allow-repeats", o.allow_repeats,
                "reuse dataset prompts when --num-prompts exceeds them (the prefix cache then serves the copies)")
      ->group(group);
  cmd->add_option("--seed", o.seed, "seed of random prompts and sampled output lengths (and of bench serve's arrivals)")
      ->capture_default_str()
      ->group(group);
}

Workload make_workload(const WorkloadOptions& options, const ModelLimits& model) {
  BRISK_CHECK(options.num_prompts > 0, "--num-prompts must be positive, got {}", options.num_prompts);
  if (options.dataset.empty()) return random_workload(options, model);
  const std::vector<Conversation> conversations = read_conversations(options.dataset);
  auto tokenizer = dataset_tokenizer(options, model);
  const bool answered = std::any_of(conversations.begin(), conversations.end(), [](const auto& c) { return c.answer; });
  const auto wanted = static_cast<size_t>(options.num_prompts);
  const size_t read_up_to = options.allow_repeats ? wanted : wanted + 1;  // one more tells "too few" from "enough"
  const int64_t context = model.max_model_len > 0 ? model.max_model_len : std::numeric_limits<int64_t>::max();
  Workload w;
  w.requests = answered ? answered_requests(conversations, *tokenizer, std::min(kMaxTotalLen, context), read_up_to)
                        : unanswered_requests(conversations, *tokenizer,
                                              std::min(options.max_input_len, context - 1), read_up_to);
  BRISK_CHECK(!w.requests.empty(), "--dataset {} holds no usable conversations ({} read; {})", options.dataset,
              conversations.size(), answered ? "none passes the length filter" : "every prompt is under 4 tokens");
  BRISK_CHECK(w.requests.size() >= wanted || options.allow_repeats,
              "--num-prompts {} exceeds the {} usable conversations of {}: ask for fewer, or give --allow-repeats "
              "to send prompts more than once", wanted, w.requests.size(), options.dataset);
  const size_t num_distinct = std::min(w.requests.size(), wanted);
  w.requests.resize(num_distinct);
  const int64_t num_folded = fit_vocabulary(w.requests, options, model);
  for (size_t i = num_distinct; i < wanted; ++i) w.requests.push_back(w.requests[i % num_distinct]);
  if (!answered) sample_output_lengths(w.requests, options, context);

  std::string notes;
  if (num_distinct < wanted) notes += fmt::format(", {} distinct prompts repeated", num_distinct);
  if (num_folded > 0) notes += fmt::format(", {} ids folded into the vocabulary of {}", num_folded, model.vocab_size);
  const std::string lengths = answered ? "output lengths of the answers"
                                       : fmt::format("no answers: seeded output lengths of mean {:g}",
                                                     options.mean_output_len);
  w.description = fmt::format("workload: {} ({}): {}{}", options.dataset, lengths, length_stats(w.requests), notes);
  return w;
}

}  // namespace brisk::cli
