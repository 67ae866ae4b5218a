// `brisk bench latency|throughput|serve`: TTFT and decode speed of small batches (batch 1 by
// default) with the decode roofline ratio; offline throughput over many requests submitted at
// once to the engine; and the same requests sent to an OpenAI-compatible server over HTTP
// (bench_serve.cc). Workloads are random ids or ShareGPT conversations (bench_dataset.h).
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/bench_dataset.h"
#include "cli/bench_report.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/step_profile_report.h"
#include "core/error.h"
#include "core/file_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema_converter.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct LatencyArgs {
  EngineOptions engine;
  WorkloadOptions workload;  // random ids only: --input-len, --output-len, --seed
  int num_iters = 3;
  std::vector<int64_t> batch_sizes = {1};  // prompts submitted at once; each size is run in turn
  double peak_bandwidth = 4.17e12;  // bytes/s: device-to-device copy on the H200 (GPU.md)
  bool json = false;
};

struct ThroughputArgs {
  EngineOptions engine;
  WorkloadOptions workload;
  std::string json_schema;  // file: every request's output follows this schema
  bool json = false;
};

GenerationRequest greedy_request(const BenchRequest& r) {
  GenerationRequest request{r.prompt_ids, {}};
  request.sampling.temperature = 0;
  request.sampling.max_tokens = r.output_len;
  request.sampling.ignore_eos = true;
  return request;
}

// Drains a stream, timing its tokens relative to `start` (events carry the engine's times).
RequestRecord drain(RequestStream& stream, Clock::time_point start, int64_t prompt_tokens) {
  RequestRecord r;
  r.prompt_tokens = prompt_tokens;
  Clock::time_point last = start;
  while (true) {
    RequestEvent e = *stream.next();
    if (e.kind == RequestEvent::Kind::kFinished) {
      if (e.finish_reason == FinishReason::kError) r.error = e.error;
      break;
    }
    const double at = std::chrono::duration<double>(e.time - start).count();
    if (r.output_tokens++ == 0) r.ttft_s = at;
    else r.itl_s.push_back(std::chrono::duration<double>(e.time - last).count());
    r.e2e_s = at;
    last = e.time;
  }
  r.ok = r.error.empty() && r.output_tokens > 0;
  return r;
}

// One batch size's runs: every run submits `batch_size` distinct prompts at once.
nlohmann::json run_latency_batch(Engine& engine, const LatencyArgs& args, const Workload& workload, int64_t batch_size,
                                 size_t& next_prompt) {
  double ttft = 0, tpot = 0;
  for (int iter = 0; iter <= args.num_iters; ++iter) {  // the first warms up
    const auto start = Clock::now();
    std::vector<std::shared_ptr<RequestStream>> streams;
    std::vector<int64_t> prompt_tokens;
    for (int64_t i = 0; i < batch_size; ++i) {
      const BenchRequest& request = workload.requests[next_prompt++];
      streams.push_back(engine.submit(greedy_request(request)));
      prompt_tokens.push_back(static_cast<int64_t>(request.prompt_ids.size()));
    }
    // The batch's first token comes with its last prefill, its last with its last decode step.
    double first = 0, last = 0;
    int64_t output_tokens = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
      const RequestRecord r = drain(*streams[i], start, prompt_tokens[i]);
      if (!r.ok) throw Error(ErrorCode::kInvalidArgument, r.error);
      first = std::max(first, r.ttft_s);
      last = std::max(last, r.e2e_s);
      output_tokens = r.output_tokens;
    }
    if (iter == 0) continue;
    ttft += first / args.num_iters;
    if (output_tokens > 1) tpot += (last - first) / static_cast<double>(output_tokens - 1) / args.num_iters;
  }
  const int64_t input_len = args.workload.input_len, output_len = args.workload.output_len;
  // A decode step reads every weight once plus the KV of the batch's contexts (mean length).
  const double kv_bytes = static_cast<double>(engine.kv_bytes_per_token()) * static_cast<double>(batch_size) *
                         (static_cast<double>(input_len) + static_cast<double>(output_len) / 2.0);
  const double step_bytes = static_cast<double>(engine.weight_bytes_per_step()) + kv_bytes;
  const double roofline_s = step_bytes / args.peak_bandwidth;
  return {{"batch_size", batch_size}, {"ttft_ms", ttft * 1e3}, {"tpot_ms", tpot * 1e3},
          {"decode_tokens_per_s", tpot > 0 ? static_cast<double>(batch_size) / tpot : 0},
          {"bytes_per_step", step_bytes}, {"achieved_bandwidth_gb_per_s", tpot > 0 ? step_bytes / tpot / 1e9 : 0},
          {"roofline_ratio", tpot > 0 ? roofline_s / tpot : 0}};
}

int run_latency(LatencyArgs& args) {
  for (int64_t b : args.batch_sizes) {
    if (b > args.engine.max_num_seqs)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--batch-size {} exceeds --max-num-seqs {}", b,
                                                           args.engine.max_num_seqs));
  }
  auto engine = Engine::create(args.engine);
  int64_t num_prompts = 0;
  for (int64_t b : args.batch_sizes) num_prompts += (args.num_iters + 1) * b;
  args.workload.num_prompts = num_prompts;
  const Workload workload = make_workload(args.workload, model_limits(*engine, args.engine.model_dir));
  nlohmann::json out = {{"bench", "latency"}, {"input_len", args.workload.input_len},
                        {"output_len", args.workload.output_len}, {"runs", nlohmann::json::array()}};
  size_t next_prompt = 0;
  for (int64_t b : args.batch_sizes) out["runs"].push_back(run_latency_batch(*engine, args, workload, b, next_prompt));
  if (args.json) {
    fmt::print("{}\n", out.dump());
    return 0;
  }
  fmt::print("input {} / output {} tokens, {} runs per batch size\n", args.workload.input_len,
             args.workload.output_len, args.num_iters);
  for (const nlohmann::json& r : out["runs"]) {
    const double tpot_ms = r["tpot_ms"];
    fmt::print("batch {:4d}: TTFT {:.2f} ms | decode {:.2f} ms/step = {:.1f} tok/s | {:.1f} GB/s of weights+KV = "
               "{:.0f}% of the {:.2f} TB/s roofline\n", r["batch_size"].get<int64_t>(), r["ttft_ms"].get<double>(),
               tpot_ms, r["decode_tokens_per_s"].get<double>(), r["achieved_bandwidth_gb_per_s"].get<double>(),
               100 * r["roofline_ratio"].get<double>(), args.peak_bandwidth / 1e12);
  }
  return 0;
}

// --json-schema: the schema with compact separators, over the workload's tokenizer.
std::shared_ptr<const grammar::CompiledGrammar> compile_schema(const ThroughputArgs& args, const Engine& engine) {
  const std::string& folder = args.workload.tokenizer.empty() ? args.engine.model_dir : args.workload.tokenizer;
  auto vocab = std::make_shared<grammar::TokenVocab>(
      grammar::TokenVocab::from_tokenizer(*Tokenizer::from_folder(folder), engine.eos_token_ids()));
  const grammar::Grammar g = grammar::json_schema_to_grammar(read_text_file(args.json_schema), {.any_whitespace = false});
  return std::make_shared<grammar::CompiledGrammar>(g, std::move(vocab));
}

int run_throughput(ThroughputArgs& args) {
  auto engine = Engine::create(args.engine);
  const Workload workload = make_workload(args.workload, model_limits(*engine, args.engine.model_dir));
  fmt::print(stderr, "{}\n", workload.description);
  // The schema is compiled (its token-mask cache filled) inside the timed run, as a server compiles
  // it when the first request asks for it.
  const auto start = Clock::now();
  std::shared_ptr<const grammar::CompiledGrammar> schema;
  if (!args.json_schema.empty()) {
    schema = compile_schema(args, *engine);
    const size_t positions = schema->precompute();
    fmt::print(stderr, "json schema compiled in {:.2f} s ({} grammar positions)\n",
               std::chrono::duration<double>(Clock::now() - start).count(), positions);
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const BenchRequest& r : workload.requests) {
    GenerationRequest request = greedy_request(r);
    request.sampling.grammar = schema;
    streams.push_back(engine->submit(std::move(request)));
  }
  std::vector<RequestRecord> records;
  for (size_t i = 0; i < streams.size(); ++i)
    records.push_back(drain(*streams[i], start, static_cast<int64_t>(workload.requests[i].prompt_ids.size())));
  const BenchSummary summary = summarize(records, std::chrono::duration<double>(Clock::now() - start).count());
  nlohmann::json out = summary_json("throughput", summary);
  out["preemptions"] = engine->stats().num_preemptions;
  if (schema) out["json_schema"] = args.json_schema;
  if (args.engine.enable_jump_forward) {
    const EngineStats stats = engine->stats();
    out["forced_tokens"] = stats.num_forced_tokens;
    fmt::print(stderr, "jump-forward: {} of {} generated tokens were forced\n", stats.num_forced_tokens,
               stats.num_generated_tokens);
  }
  report_step_profile(*engine, args.engine, out);
  if (args.json) fmt::print("{}\n", out.dump());
  else print_summary_lines(summary);
  return report_failures(records);
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto latency = std::make_shared<LatencyArgs>();
  auto throughput = std::make_shared<ThroughputArgs>();
  CLI::App* bench =
      app.add_subcommand("bench", "Benchmarks: latency (small batches), offline throughput, and serving over HTTP");
  bench->require_subcommand(1);

  CLI::App* lat =
      bench->add_subcommand("latency", "Time to first token and decode speed of small batches, with the roofline");
  add_engine_options(lat, latency->engine);
  lat->add_option("--input-len", latency->workload.input_len, "prompt tokens (random ids)")->capture_default_str();
  lat->add_option("--output-len", latency->workload.output_len, "generated tokens")->capture_default_str();
  lat->add_option("--num-iters", latency->num_iters, "timed runs after one warm-up")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lat->add_option("--batch-size", latency->batch_sizes, "requests submitted at once; a list (1,8,16) runs each")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lat->add_option("--seed", latency->workload.seed, "seed of the random prompts")->capture_default_str();
  lat->add_option("--peak-bandwidth", latency->peak_bandwidth, "bytes/s of the roofline")->capture_default_str();
  lat->add_flag("--json", latency->json, "print one JSON object");

  CLI::App* thr = bench->add_subcommand(
      "throughput", "Many requests submitted to the engine at once: requests/s, tokens/s, TTFT/TPOT/ITL percentiles");
  thr->footer("Example:\n  brisk bench throughput --model DIR --dataset sharegpt.json --num-prompts 1000\n"
              "The workload line (stderr) gives the requests' mean and median prompt and output tokens.");
  add_engine_options(thr, throughput->engine);
  add_workload_options(thr, throughput->workload);
  thr->add_option("--json-schema", throughput->json_schema,
                  "constrain every output to this JSON schema file (compact separators): the cost of structured "
                  "output; a schema the outputs cannot complete keeps their lengths")
      ->check(CLI::ExistingFile);
  thr->add_flag("--json", throughput->json, "print one JSON object");

  Runner serve = add_bench_serve_command(*bench);
  return [lat, thr, latency, throughput, serve] {
    if (lat->parsed()) return run_latency(*latency);
    if (thr->parsed()) return run_throughput(*throughput);
    return serve();
  };
}

}  // namespace brisk::cli
