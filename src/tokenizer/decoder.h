// Decoders of HF tokenizer.json ("decoder" field): ByteLevel, Replace, ByteFallback, Fuse,
// Strip, Metaspace and Sequence. A decoder rewrites the list of token strings; the final
// text is their concatenation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace brisk {

struct DecodeState {
  // The first token continues text decoded earlier (streaming windows): rules that only
  // apply at the very start of the output (Metaspace's first space, Strip after Fuse) skip it.
  bool continuation = false;
  // Set once the list holds one string standing for all tokens (after Fuse or ByteLevel).
  bool fused = false;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const = 0;

  static std::unique_ptr<Decoder> from_json(const nlohmann::json& spec, const std::string& where);
  static std::unique_ptr<Decoder> byte_level();
};

// The byte of a "<0xAB>" byte-fallback token, or -1 for any other token.
int byte_fallback_value(const std::string& token);

}  // namespace brisk
