#include "server/prompt_logprobs_json.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace brisk::server {
namespace {

using Json = nlohmann::json;

std::string decoded(const Tokenizer* tokenizer, int32_t token) {
  if (!tokenizer) return fmt::format("token_id:{}", token);
  const int32_t ids[] = {token};
  return tokenizer->decode(ids, /*skip_special_tokens=*/false);
}

// JSON has no infinity: a logprob of -inf is reported as vLLM clamps it.
Json entry(const Tokenizer* tokenizer, int32_t token, float logprob, int32_t rank) {
  return {{"logprob", std::max(logprob, -9999.0f)}, {"rank", rank}, {"decoded_token", decoded(tokenizer, token)}};
}

}  // namespace

Json prompt_logprobs_json(const std::vector<PromptLogprob>& scores, int32_t num_top, const Tokenizer* tokenizer) {
  Json out = Json::array();
  for (const PromptLogprob& p : scores) {
    if (p.rank == 0) {  // the first token: nothing precedes it
      out.push_back(nullptr);
      continue;
    }
    Json position = Json::object();
    position[std::to_string(p.token)] = entry(tokenizer, p.token, p.logprob, p.rank);
    const size_t count = std::min<size_t>(p.top_logprobs.size(), static_cast<size_t>(std::max(num_top, 0)));
    for (size_t j = 0; j < count; ++j) {
      const TokenLogprob& alt = p.top_logprobs[j];
      if (alt.token != p.token) position[std::to_string(alt.token)] = entry(tokenizer, alt.token, alt.logprob,
                                                                           static_cast<int32_t>(j + 1));
    }
    out.push_back(std::move(position));
  }
  return out;
}

}  // namespace brisk::server
