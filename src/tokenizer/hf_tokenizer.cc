#include "tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace brisk {

HfTokenizer::HfTokenizer(Parts parts, TokenizerConfig config) : parts_(std::move(parts)) {
  BRISK_ASSERT(parts_.model != nullptr);
  std::optional<int32_t> default_bos;
  if (!parts_.prefix_ids.empty()) default_bos = parts_.prefix_ids.front();
  std::optional<int32_t> default_eos;
  if (!parts_.suffix_ids.empty()) default_eos = parts_.suffix_ids.back();
  set_config(std::move(config), default_bos, default_eos);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string valid = utf8::to_valid(text);
  std::vector<int32_t> ids;
  ids.reserve(valid.size() / 3 + 4);
  if (add_special_tokens) ids.insert(ids.end(), parts_.prefix_ids.begin(), parts_.prefix_ids.end());
  if (parts_.added.empty()) {
    encode_plain(valid, true, ids);
  } else {
    // Tokens with normalized=false match the raw text; the others the normalized pieces.
    for (const AddedSplit& raw : parts_.added.split(valid, false)) {
      if (raw.token_id >= 0) {
        ids.push_back(raw.token_id);
        continue;
      }
      std::string normalized(raw.text);
      if (parts_.normalizer) parts_.normalizer->normalize(normalized);
      for (const AddedSplit& piece : parts_.added.split(normalized, true)) {
        if (piece.token_id >= 0) ids.push_back(piece.token_id);
        else encode_plain(piece.text, raw.offset == 0 && piece.offset == 0, ids);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), parts_.suffix_ids.begin(), parts_.suffix_ids.end());
  return ids;
}

// Pre-tokenizes and tokenizes text that holds no added token (already normalized when the
// tokenizer has added tokens; normalized here otherwise).
void HfTokenizer::encode_plain(std::string_view text, bool at_input_start, std::vector<int32_t>& ids) const {
  std::vector<PreToken> pieces(1);
  pieces[0].text.assign(text);
  pieces[0].at_input_start = at_input_start;
  if (parts_.added.empty() && parts_.normalizer) parts_.normalizer->normalize(pieces[0].text);
  if (pieces[0].text.empty()) return;  // HF never pre-tokenizes an empty piece (no lone "▁")
  if (parts_.pre_tokenizer) parts_.pre_tokenizer->pre_tokenize(pieces);
  for (const auto& piece : pieces) parts_.model->tokenize(piece.text, ids);
}

int32_t HfTokenizer::vocab_size() const {
  int32_t size = parts_.model->num_ids();
  for (const auto& token : parts_.added.tokens()) size = std::max(size, token.id + 1);
  return size;
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  if (auto id = parts_.added.token_to_id(token)) return id;
  return parts_.model->token_to_id(token);
}

std::optional<std::string> HfTokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* token = parts_.added.find(id)) return token->content;
  if (const std::string* token = parts_.model->id_to_token(id)) return *token;
  return std::nullopt;
}

bool HfTokenizer::is_special(int32_t id) const { return parts_.added.is_special(id); }

bool HfTokenizer::is_skipped_on_decode(int32_t id) const {
  const AddedToken* added = parts_.added.find(id);
  return added && parts_.added.is_special_content(added->normalized ? added->normalized_content : added->content);
}

bool HfTokenizer::is_partial_token(int32_t id) const {
  return !parts_.added.find(id) && parts_.model->is_byte_fallback_id(id);
}

std::string HfTokenizer::decode_window(std::span<const int32_t> ids, bool skip_special_tokens,
                                       bool continuation) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* added = parts_.added.find(id)) {
      // HF 0.23 decodes a normalized added token as its normalized form, and skips a token
      // only when that form is the content of a special token (so Llama-2's normalized "<s>",
      // decoded as "▁<s>", survives skip_special_tokens).
      const std::string& text = added->normalized ? added->normalized_content : added->content;
      if (skip_special_tokens && parts_.added.is_special_content(text)) continue;
      tokens.push_back(text);
    } else if (const std::string* token = parts_.model->id_to_token(id)) {
      tokens.push_back(*token);
    }
  }
  std::string text;
  if (parts_.decoder) {
    DecodeState state;
    state.continuation = continuation;
    parts_.decoder->decode_chain(tokens, state);
    for (const auto& t : tokens) text += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 || continuation) text.push_back(' ');
      text += tokens[i];
    }
  }
  return text;
}

}  // namespace brisk
