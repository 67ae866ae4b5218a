#include "engine/stop_strings.h"

#include <algorithm>

namespace brisk {

StopStringMatcher::StopStringMatcher(const Tokenizer& tokenizer, bool skip_special_tokens,
                                     std::vector<std::string> stop, bool include_stop)
    : detokenizer_(tokenizer, skip_special_tokens), stop_(std::move(stop)), include_stop_(include_stop) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
}

size_t StopStringMatcher::held_back_length() const {
  size_t longest = 0;
  for (const std::string& s : stop_)
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > longest; --n)
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        longest = n;
        break;
      }
  return longest;
}

StopStringMatcher::Step StopStringMatcher::add(int32_t token) {
  Step step;
  if (stopped_) return step;
  pending_ += detokenizer_.add(token);
  // The earliest stop string in the pending text wins (held-back text never contained a whole
  // one, so a match always involves this token's text).
  size_t best = std::string::npos, best_len = 0;
  for (const std::string& s : stop_) {
    size_t at = pending_.find(s);
    if (at != std::string::npos && (at < best || (at == best && s.size() > best_len))) {
      best = at;
      best_len = s.size();
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    step.text = pending_.substr(0, include_stop_ ? best + best_len : best);
    step.stopped = stopped_ = true;
    pending_.clear();
    return step;
  }
  const size_t keep = held_back_length();
  step.text = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return step;
}

std::string StopStringMatcher::finish() {
  if (stopped_) return {};
  std::string rest = pending_ + detokenizer_.finish();
  pending_.clear();
  for (const std::string& s : stop_)  // the detokenizer's last held-back bytes may complete one
    if (size_t at = rest.find(s); at != std::string::npos) rest.resize(include_stop_ ? at + s.size() : at);
  return rest;
}

}  // namespace brisk
