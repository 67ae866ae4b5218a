// The client of `brisk bench serve`: sends a workload to an OpenAI-compatible server as
// streaming /v1/completions requests (token-id prompts, ignore_eos, greedy) and times every
// chunk of every stream. Boost.Beast on one Asio thread with C++20 coroutines: a request in
// flight is a coroutine and a socket, not a thread, so thousands can stream at once.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cli/bench_dataset.h"
#include "cli/bench_report.h"

namespace brisk::cli {

struct ServerAddress {
  std::string host;
  std::string port;
  std::string path_prefix;  // what comes before /v1/...: empty or "/prefix"
  std::string url() const;  // "http://host:port/prefix"
};

// "http://HOST[:PORT][/PREFIX]" (port 80 by default); anything else is a clear error.
ServerAddress parse_base_url(const std::string& url);

struct LoadOptions {
  double request_rate = std::numeric_limits<double>::infinity();  // Poisson arrivals per second; inf: all at once
  int64_t max_concurrency = 0;   // most requests in flight; 0: no cap
  uint64_t seed = 0;             // of the arrival gaps
  double request_timeout_s = 600;  // longest wait for the server's next bytes within one request
  std::string api_key;           // sent as "Authorization: Bearer <key>" when not empty
};

struct LoadResult {
  std::vector<RequestRecord> records;  // in workload order
  double seconds = 0;                  // first send to last completion
};

class BenchHttpClient {
 public:
  BenchHttpClient(ServerAddress address, LoadOptions options);
  ~BenchHttpClient();

  // GET /v1/models: the id of the first model served. Throws brisk::Error naming the URL when the
  // server cannot be reached or does not answer with a model list.
  std::string model_name();
  // Sends every request; a request that fails (connection, HTTP status, error event, timeout)
  // is recorded with its error and does not stop the others.
  LoadResult run(const std::vector<BenchRequest>& requests, const std::string& model);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk::cli
