// `brisk bench latency|throughput`: batch-1 TTFT and decode speed with the decode roofline
// ratio, and offline throughput over many requests submitted at once (random ids, or ShareGPT
// prompts with seeded output lengths).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/commands.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  EngineOptions engine;
  int64_t input_len = 128;
  int64_t output_len = 128;
  int num_iters = 3;
  int64_t num_prompts = 200;
  std::string dataset;    // ShareGPT json; empty: random ids
  std::string tokenizer;  // folder of the tokenizer for dataset prompts (default: the model's)
  double mean_output_len = 180;
  int64_t max_input_len = 1024;
  uint64_t seed = 0;
  double peak_bandwidth = 4.17e12;  // bytes/s: device-to-device copy on the H200 (GPU.md)
  bool json = false;
};

struct Timing {
  double ttft_s = 0;
  double tpot_s = 0;  // mean time per output token after the first
  int64_t num_tokens = 0;
};

// Drains a stream, timing its first and last tokens relative to `start`.
Timing drain(RequestStream& stream, Clock::time_point start) {
  Timing t;
  Clock::time_point first, last;
  while (true) {
    RequestEvent e = *stream.next();
    if (e.kind == RequestEvent::Kind::kFinished) {
      if (e.finish_reason == FinishReason::kError) throw Error(ErrorCode::kInvalidArgument, e.error);
      break;
    }
    last = e.time;
    if (t.num_tokens++ == 0) first = last;
  }
  t.ttft_s = std::chrono::duration<double>(first - start).count();
  if (t.num_tokens > 1) t.tpot_s = std::chrono::duration<double>(last - first).count() / (t.num_tokens - 1);
  return t;
}

std::vector<int32_t> random_ids(std::mt19937_64& rng, int64_t n, int64_t vocab) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = dist(rng);
  return ids;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p / 100 * values.size()))];
}

int run_latency(const BenchArgs& args) {
  auto engine = Engine::create(args.engine);
  std::mt19937_64 rng(args.seed);
  std::vector<Timing> runs;
  for (int i = 0; i <= args.num_iters; ++i) {  // iteration 0 warms up
    GenerationRequest r{random_ids(rng, args.input_len, engine->vocab_size()), {}};
    r.sampling.temperature = 0;
    r.sampling.max_tokens = args.output_len;
    r.sampling.ignore_eos = true;
    auto start = Clock::now();
    Timing t = drain(*engine->submit(std::move(r)), start);
    if (i > 0) runs.push_back(t);
  }
  double ttft = 0, tpot = 0;
  for (const Timing& t : runs) {
    ttft += t.ttft_s / runs.size();
    tpot += t.tpot_s / runs.size();
  }
  // A decode step reads every weight once plus the KV of the context (mean context length).
  const double step_bytes = static_cast<double>(engine->weight_bytes_per_step()) +
                            static_cast<double>(engine->kv_bytes_per_token()) * (args.input_len + args.output_len / 2.0);
  const double roofline_s = step_bytes / args.peak_bandwidth;
  nlohmann::json out = {{"bench", "latency"}, {"input_len", args.input_len}, {"output_len", args.output_len},
                        {"ttft_ms", ttft * 1e3}, {"tpot_ms", tpot * 1e3}, {"decode_tokens_per_s", tpot > 0 ? 1 / tpot : 0},
                        {"bytes_per_step", step_bytes}, {"achieved_bandwidth_gb_per_s", tpot > 0 ? step_bytes / tpot / 1e9 : 0},
                        {"roofline_ratio", tpot > 0 ? roofline_s / tpot : 0}};
  if (args.json) {
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print("batch 1, input {} / output {} tokens, {} runs\n", args.input_len, args.output_len, runs.size());
    fmt::print("TTFT {:.2f} ms | decode {:.2f} ms/token = {:.1f} tok/s | {:.1f} GB/s of weights+KV = {:.0f}% of "
               "the {:.2f} TB/s roofline\n", ttft * 1e3, tpot * 1e3, 1 / tpot, step_bytes / tpot / 1e9,
               100 * roofline_s / tpot, args.peak_bandwidth / 1e12);
  }
  return 0;
}

// ShareGPT prompts (first human turn) tokenized with the given tokenizer, up to n of them.
std::vector<std::vector<int32_t>> sharegpt_prompts(const BenchArgs& args, int64_t n) {
  std::ifstream in(args.dataset);
  if (!in) throw_error(ErrorCode::kNotFound, "--dataset: cannot open {}", args.dataset);
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kCorruptData, "--dataset {} is not valid JSON: {}", args.dataset, e.what());
  }
  auto tokenizer = Tokenizer::from_folder(args.tokenizer.empty() ? args.engine.model_dir : args.tokenizer);
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& item : data) {
    if (static_cast<int64_t>(prompts.size()) >= n) break;
    if (!item.contains("conversations") || item["conversations"].empty()) continue;
    auto ids = tokenizer->encode(item["conversations"][0].value("value", ""), true);
    if (ids.size() < 4) continue;
    if (static_cast<int64_t>(ids.size()) > args.max_input_len) ids.resize(args.max_input_len);
    prompts.push_back(std::move(ids));
  }
  BRISK_CHECK(!prompts.empty(), "--dataset {} holds no usable prompts", args.dataset);
  while (static_cast<int64_t>(prompts.size()) < n) prompts.push_back(prompts[prompts.size() % prompts.size()]);
  return prompts;
}

int run_throughput(const BenchArgs& args) {
  auto engine = Engine::create(args.engine);
  std::mt19937_64 rng(args.seed);
  std::vector<GenerationRequest> requests;
  std::vector<std::vector<int32_t>> prompts;
  if (!args.dataset.empty()) {
    prompts = sharegpt_prompts(args, args.num_prompts);
  } else {
    for (int64_t i = 0; i < args.num_prompts; ++i) prompts.push_back(random_ids(rng, args.input_len, engine->vocab_size()));
  }
  // Output lengths: fixed, or for datasets drawn from a gamma distribution (shape 2) with the
  // requested mean, as ShareGPT answers are long-tailed.
  std::gamma_distribution<double> lengths(2.0, args.mean_output_len / 2.0);
  for (auto& prompt : prompts) {
    int64_t out = args.dataset.empty() ? args.output_len : std::clamp<int64_t>(std::llround(lengths(rng)), 1, 2048);
    out = std::min<int64_t>(out, engine->max_model_len() - static_cast<int64_t>(prompt.size()));
    GenerationRequest r{prompt, {}};
    r.sampling.temperature = 0;
    r.sampling.max_tokens = std::max<int64_t>(out, 1);
    r.sampling.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  auto start = Clock::now();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (auto& r : requests) streams.push_back(engine->submit(r));
  std::vector<double> ttfts, tpots;
  int64_t output_tokens = 0, input_tokens = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    Timing t = drain(*streams[i], start);
    ttfts.push_back(t.ttft_s * 1e3);
    if (t.num_tokens > 1) tpots.push_back(t.tpot_s * 1e3);
    output_tokens += t.num_tokens;
    input_tokens += static_cast<int64_t>(requests[i].prompt_ids.size());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  nlohmann::json out = {
      {"bench", "throughput"}, {"num_requests", requests.size()}, {"input_tokens", input_tokens},
      {"output_tokens", output_tokens}, {"seconds", seconds}, {"requests_per_s", requests.size() / seconds},
      {"output_tokens_per_s", output_tokens / seconds}, {"total_tokens_per_s", (input_tokens + output_tokens) / seconds},
      {"ttft_ms", {{"p50", percentile(ttfts, 50)}, {"p90", percentile(ttfts, 90)}, {"p99", percentile(ttfts, 99)}}},
      {"tpot_ms", {{"p50", percentile(tpots, 50)}, {"p90", percentile(tpots, 90)}, {"p99", percentile(tpots, 99)}}},
      {"preemptions", engine->stats().num_preemptions}};
  if (args.json) {
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print("{} requests ({} input, {} output tokens) in {:.2f} s: {:.2f} req/s, {:.1f} output tok/s, "
               "{:.1f} total tok/s\n", requests.size(), input_tokens, output_tokens, seconds,
               requests.size() / seconds, output_tokens / seconds, (input_tokens + output_tokens) / seconds);
    fmt::print("TTFT ms p50/p90/p99 {:.1f}/{:.1f}/{:.1f} | TPOT ms p50/p90/p99 {:.2f}/{:.2f}/{:.2f}\n",
               percentile(ttfts, 50), percentile(ttfts, 90), percentile(ttfts, 99), percentile(tpots, 50),
               percentile(tpots, 90), percentile(tpots, 99));
  }
  return 0;
}

void add_common_options(CLI::App* cmd, BenchArgs& args) {
  cmd->add_option("--model", args.engine.model_dir, "Hugging Face model folder (config.json is enough with --dummy-weights)")
      ->required();
  cmd->add_option("--backend", args.engine.backend, "cpu or cuda")->capture_default_str();
  cmd->add_flag("--dummy-weights", args.engine.dummy_weights, "random weights from config.json alone");
  cmd->add_flag("--enforce-eager", args.engine.enforce_eager, "run decode steps op by op instead of CUDA graphs");
  cmd->add_option("--max-model-len", args.engine.max_model_len, "context length (default: max_position_embeddings)");
  cmd->add_option("--kv-cache-memory", args.engine.kv_cache_memory, "KV cache: fraction of free memory or size (4GiB)");
  cmd->add_option("--max-num-seqs", args.engine.max_num_seqs, "sequences running at once")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", args.engine.max_num_batched_tokens, "token budget of a step")
      ->capture_default_str();
  cmd->add_option("--input-len", args.input_len, "prompt tokens (random ids)")->capture_default_str();
  cmd->add_option("--output-len", args.output_len, "generated tokens per request")->capture_default_str();
  cmd->add_option("--seed", args.seed, "seed of prompts and output lengths")->capture_default_str();
  cmd->add_option("--peak-bandwidth", args.peak_bandwidth, "bytes/s of the roofline")->capture_default_str();
  cmd->add_flag("--json", args.json, "print one JSON object");
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto latency = std::make_shared<BenchArgs>();
  auto throughput = std::make_shared<BenchArgs>();
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: latency (batch 1) and offline throughput");
  bench->require_subcommand(1);
  CLI::App* lat = bench->add_subcommand("latency", "Batch-1 time to first token and decode speed, with the roofline ratio");
  add_common_options(lat, *latency);
  lat->add_option("--num-iters", latency->num_iters, "timed runs after one warm-up")->capture_default_str();
  CLI::App* thr = bench->add_subcommand("throughput", "Many requests at once: requests/s, tokens/s, TTFT/TPOT percentiles");
  add_common_options(thr, *throughput);
  thr->add_option("--num-prompts", throughput->num_prompts, "number of requests")->capture_default_str();
  thr->add_option("--dataset", throughput->dataset, "ShareGPT JSON file (first human turns as prompts)");
  thr->add_option("--tokenizer", throughput->tokenizer, "folder of the tokenizer for --dataset (default: the model's)");
  thr->add_option("--mean-output-len", throughput->mean_output_len, "mean of the seeded output lengths with --dataset")
      ->capture_default_str();
  thr->add_option("--max-input-len", throughput->max_input_len, "truncate dataset prompts to this many tokens")
      ->capture_default_str();
  return [lat, latency, throughput] { return lat->parsed() ? run_latency(*latency) : run_throughput(*throughput); };
}

}  // namespace brisk::cli
