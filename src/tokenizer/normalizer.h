// Normalizers of HF tokenizer.json ("normalizer" field): Unicode forms, Lowercase, Prepend,
// Replace, Strip, StripAccents and Sequence. Offsets are not tracked because brisk only
// needs ids, so a normalizer is a plain string-to-string function.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace brisk {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;

  // Builds the normalizer described by `spec`; `where` names the file and field for errors.
  // Types brisk does not implement (e.g. Precompiled, BertNormalizer) throw kUnsupported.
  static std::unique_ptr<Normalizer> from_json(const nlohmann::json& spec, const std::string& where);
};

// Applies a Unicode normalization form ("NFC", "NFD", "NFKC", "NFKD") with utf8proc.
std::string unicode_normalize(const std::string& text, const std::string& form);

}  // namespace brisk
