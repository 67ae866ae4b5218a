// A submitted request checked against the engine's limits at admission (engine.cc): the prompt's
// tokens, the sampling parameters, and whether prompt plus max_tokens fit the context and the cache.
#pragma once

#include <cstdint>
#include <string>

#include "engine/request.h"

namespace brisk {

struct RequestLimits {
  int64_t vocab_size = 0;
  int64_t max_num_seqs = 0;
  int64_t max_model_len = 0;
  int64_t block_size = 0;
  int64_t num_blocks = 0;  // the whole KV cache
  bool has_tokenizer = false;
};

// Empty when the request can run; otherwise what is wrong with it, naming the field.
std::string check_request(const Request& r, const RequestLimits& limits);

}  // namespace brisk
