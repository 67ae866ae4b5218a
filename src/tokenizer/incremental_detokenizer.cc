#include "tokenizer/incremental_detokenizer.h"

#include <span>

#include "tokenizer/utf8.h"

namespace brisk {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string IncrementalDetokenizer::add(int32_t id) {
  ids_.push_back(id);
  // A skipped special token does not end a run of byte pieces: the pieces around it join.
  bool reaches_decoder = tokenizer_.id_to_token(id) && !(skip_special_tokens_ && tokenizer_.is_skipped_on_decode(id));
  if (reaches_decoder) last_is_partial_ = tokenizer_.is_partial_token(id);
  if (last_is_partial_) return {};
  return take_delta(false);
}

std::string IncrementalDetokenizer::finish() { return take_delta(true); }

std::string IncrementalDetokenizer::take_delta(bool final) {
  std::span<const int32_t> all(ids_);
  std::string prefix_text = tokenizer_.decode_window(all.subspan(prefix_offset_, read_offset_ - prefix_offset_),
                                                     skip_special_tokens_, continuation_);
  std::string new_text = tokenizer_.decode_window(all.subspan(prefix_offset_), skip_special_tokens_, continuation_);
  if (!final) {
    if (new_text.size() <= prefix_text.size()) return {};
    if (new_text.ends_with(utf8::kReplacementChar)) return {};
  }
  if (new_text.compare(0, prefix_text.size(), prefix_text) != 0) {
    // Not expected with the supported decoders; holding keeps the stream exact until finish().
    if (!final) return {};
  }
  std::string delta = new_text.size() > prefix_text.size() ? new_text.substr(prefix_text.size()) : std::string();
  for (size_t i = prefix_offset_; i < read_offset_ && !continuation_; ++i) {
    int32_t id = ids_[i];
    if (tokenizer_.id_to_token(id) && !(skip_special_tokens_ && tokenizer_.is_skipped_on_decode(id))) continuation_ = true;
  }
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return delta;
}

}  // namespace brisk
