#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "tokenizer/pcre2_regex.h"
#include "tokenizer/utf8.h"

namespace brisk {
namespace {

class UnicodeFormNormalizer final : public Normalizer {
 public:
  explicit UnicodeFormNormalizer(std::string form) : form_(std::move(form)) {}
  void normalize(std::string& text) const override { text = unicode_normalize(text, form_); }

 private:
  std::string form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      char32_t cp = utf8::decode(text, i);
      utf8::append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
    text = std::move(out);
  }
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  // HF leaves an empty string empty so that splitting never creates lone prefixes.
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!utf8::is_whitespace(utf8::decode(text, next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t next = start;
        if (!utf8::is_whitespace(utf8::decode(text, next))) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      char32_t cp = utf8::decode(text, i);
      if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) != UTF8PROC_CATEGORY_MN)
        utf8::append(out, cp);
    }
    text = std::move(out);
  }
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<Pcre2Regex> regex, std::string literal, std::string content)
      : regex_(std::move(regex)), literal_(std::move(literal)), content_(std::move(content)) {}
  void normalize(std::string& text) const override;

 private:
  std::unique_ptr<Pcre2Regex> regex_;  // null when the pattern is a literal string
  std::string literal_;
  std::string content_;
};

void ReplaceNormalizer::normalize(std::string& text) const {
  std::string out;
  size_t last = 0;
  if (regex_) {
    for (auto [begin, end] : regex_->find_all(text)) {
      if (begin == end) continue;
      out.append(text, last, begin - last);
      out += content_;
      last = end;
    }
  } else {
    if (literal_.empty()) return;
    for (size_t pos = text.find(literal_); pos != std::string::npos;
         pos = text.find(literal_, last)) {
      out.append(text, last, pos - last);
      out += content_;
      last = pos + literal_.size();
    }
  }
  out.append(text, last, std::string::npos);
  text = std::move(out);
}

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::string unicode_normalize(const std::string& text, const std::string& form) {
  int options = UTF8PROC_STABLE;
  if (form == "NFC") options |= UTF8PROC_COMPOSE;
  else if (form == "NFD") options |= UTF8PROC_DECOMPOSE;
  else if (form == "NFKC") options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
  else if (form == "NFKD") options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
  else throw_error(ErrorCode::kInvalidArgument, "unknown Unicode normalization form '{}'", form);
  utf8proc_uint8_t* result = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                    static_cast<utf8proc_ssize_t>(text.size()), &result,
                                    static_cast<utf8proc_option_t>(options));
  if (n < 0) throw_error(ErrorCode::kInternal, "{} normalization failed: {}", form, utf8proc_errmsg(n));
  std::string out(reinterpret_cast<char*>(result), static_cast<size_t>(n));
  std::free(result);
  return out;
}

std::unique_ptr<Normalizer> Normalizer::from_json(const nlohmann::json& spec,
                                                  const std::string& where) {
  if (spec.is_null()) return nullptr;
  std::string type = spec.value("type", "");
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
    return std::make_unique<UnicodeFormNormalizer>(type);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(spec.at("prepend").get<std::string>());
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(spec.value("strip_left", true), spec.value("strip_right", true));
  if (type == "Replace") {
    const auto& pattern = spec.at("pattern");
    std::string content = spec.at("content").get<std::string>();
    if (pattern.contains("Regex"))
      return std::make_unique<ReplaceNormalizer>(
          std::make_unique<Pcre2Regex>(pattern["Regex"].get<std::string>(), where + ".pattern"), "",
          content);
    return std::make_unique<ReplaceNormalizer>(nullptr, pattern.at("String").get<std::string>(), content);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    const auto& list = spec.at("normalizers");
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = from_json(list[i], fmt::format("{}.normalizers[{}]", where, i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  throw_error(ErrorCode::kUnsupported, "{}: normalizer type '{}' is not supported", where, type);
}

}  // namespace brisk
