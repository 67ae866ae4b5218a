// Streaming text of one request with stop strings: feeds token ids through the incremental
// detokenizer and decides what text is final. Text that could be the start of a stop string is
// held back until the following tokens show it is not; a completed stop string ends the request
// and truncates the text before it (or after it, when the stop string is to be included).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/incremental_detokenizer.h"

namespace brisk {

class StopStringMatcher {
 public:
  StopStringMatcher(const Tokenizer& tokenizer, bool skip_special_tokens, std::vector<std::string> stop,
                    bool include_stop);

  struct Step {
    std::string text;  // text now final
    bool stopped = false;
  };
  // Adds one generated token.
  Step add(int32_t token);
  // The end of the request (not through a stop string): everything still held back.
  std::string finish();
  // The stop string that ended the text; empty when none did.
  const std::string& matched() const { return matched_; }

 private:
  // Length of the longest suffix of pending_ that is a proper prefix of some stop string.
  size_t held_back_length() const;

  IncrementalDetokenizer detokenizer_;
  std::vector<std::string> stop_;
  bool include_stop_;
  std::string pending_;  // decoded, not yet emitted
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace brisk
