// Builders of HfTokenizer from the three BPE file layouts brisk reads.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tokenizer/hf_tokenizer.h"

namespace brisk {

// tokenizer.json (HF `tokenizers` serialization). Non-BPE models throw kUnsupported.
std::unique_ptr<HfTokenizer> load_tokenizer_json(const std::filesystem::path& file, TokenizerConfig config);
std::unique_ptr<HfTokenizer> parse_tokenizer_json(const std::string& json_text, const std::string& where,
                                                  TokenizerConfig config);

// vocab.json + merges.txt in `dir`: byte-level BPE with GPT-2's regex, or Qwen2's regex and
// special tokens when the vocabulary is Qwen2's (151643 entries or a Qwen2 tokenizer class).
std::unique_ptr<HfTokenizer> load_vocab_merges(const std::filesystem::path& dir, TokenizerConfig config);

// A tiktoken rank file (lines "<base64 token> <rank>"), with Llama-3's regex and special tokens
// (from the config's added_tokens_decoder, else Llama-3.1's defaults after the last rank).
std::unique_ptr<HfTokenizer> load_tiktoken(const std::filesystem::path& file, TokenizerConfig config);

// True when `head` (the first bytes of a tokenizer.model) looks like a tiktoken rank file
// rather than a SentencePiece protobuf.
bool looks_like_tiktoken(const std::string& head);

// Qwen2's pre-tokenizer regex and Llama-3's (also used for tiktoken files).
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace brisk
