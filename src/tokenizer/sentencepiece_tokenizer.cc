#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace brisk {

SentencePieceTokenizer::SentencePieceTokenizer(const std::filesystem::path& file, TokenizerConfig config)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  auto status = processor_->Load(file.string());
  if (!status.ok())
    throw_error(ErrorCode::kCorruptData, "{}: not a readable SentencePiece model: {}", file.string(),
                status.ToString());
  for (int id = 0; id < processor_->GetPieceSize(); ++id) {
    if (!is_special(id)) continue;
    AddedToken token;
    token.id = id;
    token.content = processor_->IdToPiece(id);
    token.special = true;
    specials_.add(std::move(token));
  }
  for (const char* candidate : {"a", "x", "0", "."}) {
    int id = processor_->PieceToId(candidate);
    if (id == processor_->unk_id() || is_special(id)) continue;
    std::string text;
    processor_->Decode(std::vector<int>{id}, &text);
    if (!text.empty() && text[0] != ' ') {
      anchor_id_ = id;
      anchor_text_ = text;
      break;
    }
  }
  add_bos_ = config.add_bos_token.value_or(true);
  add_eos_ = config.add_eos_token.value_or(false);
  auto optional_id = [](int id) -> std::optional<int32_t> { return id >= 0 ? std::optional<int32_t>(id) : std::nullopt; };
  set_config(std::move(config), optional_id(processor_->bos_id()), optional_id(processor_->eos_id()));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string valid = utf8::to_valid(text);
  std::vector<int32_t> ids;
  if (add_special_tokens && add_bos_ && bos_token_id()) ids.push_back(*bos_token_id());
  std::vector<int> piece_ids;
  for (const AddedSplit& split : specials_.split(valid, false)) {
    if (split.token_id >= 0) {
      ids.push_back(split.token_id);
      continue;
    }
    if (split.text.empty()) continue;
    piece_ids.clear();
    auto status = processor_->Encode(split.text, &piece_ids);
    if (!status.ok()) throw_error(ErrorCode::kInternal, "SentencePiece encode failed: {}", status.ToString());
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  }
  if (add_special_tokens && add_eos_ && eos_token_id()) ids.push_back(*eos_token_id());
  return ids;
}

int32_t SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::optional<int32_t> SentencePieceTokenizer::token_to_id(std::string_view token) const {
  int id = processor_->PieceToId(token);
  // PieceToId answers unk_id for unknown pieces.
  if (id == processor_->unk_id() && processor_->IdToPiece(id) != token) return std::nullopt;
  return id;
}

std::optional<std::string> SentencePieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= processor_->GetPieceSize()) return std::nullopt;
  return processor_->IdToPiece(id);
}

bool SentencePieceTokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= processor_->GetPieceSize()) return false;
  return processor_->IsControl(id) || processor_->IsUnknown(id);
}

bool SentencePieceTokenizer::is_partial_token(int32_t id) const {
  return id >= 0 && id < processor_->GetPieceSize() && processor_->IsByte(id);
}

std::string SentencePieceTokenizer::decode_run(const std::vector<int>& run, bool continuation) const {
  std::string text;
  if (!continuation || anchor_id_ < 0) {
    processor_->Decode(run, &text);
    return text;
  }
  std::vector<int> anchored;
  anchored.reserve(run.size() + 1);
  anchored.push_back(anchor_id_);
  anchored.insert(anchored.end(), run.begin(), run.end());
  processor_->Decode(anchored, &text);
  return text.substr(std::min(anchor_text_.size(), text.size()));
}

std::string SentencePieceTokenizer::decode_window(std::span<const int32_t> ids, bool skip_special_tokens,
                                                  bool continuation) const {
  std::string text;
  std::vector<int> run;
  bool after_text = continuation;
  auto flush = [&] {
    if (run.empty()) return;
    text += decode_run(run, after_text);
    after_text = true;
    run.clear();
  };
  for (int32_t id : ids) {
    if (id < 0 || id >= processor_->GetPieceSize()) continue;
    if (is_special(id)) {
      if (skip_special_tokens) continue;
      flush();
      text += processor_->IdToPiece(id);
      after_text = true;
    } else {
      run.push_back(id);
    }
  }
  flush();
  return text;
}

}  // namespace brisk
