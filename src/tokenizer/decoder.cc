#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pcre2_regex.h"
#include "tokenizer/utf8.h"

namespace brisk {
namespace {

class ByteLevelDecoder final : public Decoder {
 public:
  // Tokens outside the byte alphabet (added tokens such as "你好") keep their own bytes.
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    std::string bytes;
    for (const auto& token : tokens) {
      size_t mark = bytes.size();
      if (!byte_level::decode(token, bytes)) {
        bytes.resize(mark);
        bytes += token;
      }
    }
    tokens.assign(1, utf8::to_valid(bytes));
    state.fused = true;
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<Pcre2Regex> regex, std::string literal, std::string content)
      : regex_(std::move(regex)), literal_(std::move(literal)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState&) const override {
    for (auto& token : tokens) token = replace(token);
  }

 private:
  std::string replace(const std::string& text) const {
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
      if (literal_.empty()) return text;
      for (size_t pos = text.find(literal_); pos != std::string::npos; pos = text.find(literal_, last)) {
        out.append(text, last, pos - last);
        out += content_;
        last = pos + literal_.size();
      }
    }
    out.append(text, last, std::string::npos);
    return out;
  }

  std::unique_ptr<Pcre2Regex> regex_;
  std::string literal_;
  std::string content_;
};

class ByteFallbackDecoder final : public Decoder {
 public:
  // A run of byte tokens becomes its text when the run is valid UTF-8, otherwise one U+FFFD
  // per byte (not per ill-formed subpart): HF's rule, kept for exact parity.
  void decode_chain(std::vector<std::string>& tokens, DecodeState&) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    auto flush = [&] {
      if (run.empty()) return;
      if (utf8::is_valid(run)) {
        out.push_back(run);
      } else {
        for (size_t i = 0; i < run.size(); ++i) out.emplace_back(utf8::kReplacementChar);
      }
      run.clear();
    };
    for (auto& token : tokens) {
      int byte = byte_fallback_value(token);
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
    state.fused = true;
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, code point)
      for (size_t pos = 0; pos < token.size();) {
        size_t at = pos;
        chars.emplace_back(at, utf8::decode(token, pos));
      }
      size_t cut_start = 0, cut_stop = 0;
      bool skip_start = i == 0 && state.fused && state.continuation;
      if (!skip_start)
        while (cut_start < start_ && cut_start < chars.size() && chars[cut_start].second == content_) ++cut_start;
      while (cut_stop < stop_ && cut_stop + cut_start < chars.size() &&
             chars[chars.size() - 1 - cut_stop].second == content_)
        ++cut_stop;
      size_t begin = cut_start < chars.size() ? chars[cut_start].first : token.size();
      size_t end = cut_stop == 0 ? token.size() : chars[chars.size() - cut_stop].first;
      token = end > begin ? token.substr(begin, end - begin) : std::string();
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepend) : replacement_(std::move(replacement)), prepend_(prepend) {}
  // HF drops every marker of the first token (not only the leading one) when a prefix is added.
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      bool first = i == 0 && !state.continuation && prepend_;
      std::string out;
      const std::string& token = tokens[i];
      for (size_t pos = 0; pos < token.size();) {
        if (token.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!first) out.push_back(' ');
          pos += replacement_.size();
        } else {
          out.push_back(token[pos++]);
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool prepend_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    for (const auto& step : steps_) step->decode_chain(tokens, state);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

char32_t single_char(const std::string& s, const std::string& where) {
  size_t pos = 0;
  if (s.empty() || !utf8::is_valid(s)) throw_error(ErrorCode::kCorruptData, "{}: expected one character", where);
  char32_t cp = utf8::decode(s, pos);
  if (pos != s.size()) throw_error(ErrorCode::kCorruptData, "{}: expected one character, got '{}'", where, s);
  return cp;
}

}  // namespace

int byte_fallback_value(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::unique_ptr<Decoder> Decoder::byte_level() { return std::make_unique<ByteLevelDecoder>(); }

std::unique_ptr<Decoder> Decoder::from_json(const nlohmann::json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  std::string type = spec.value("type", "");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(single_char(spec.at("content").get<std::string>(), where + ".content"),
                                          spec.value("start", 0), spec.value("stop", 0));
  if (type == "Metaspace") {
    std::string scheme = spec.value("prepend_scheme", "");
    bool prepend = scheme.empty() ? spec.value("add_prefix_space", true) : scheme != "never";
    return std::make_unique<MetaspaceDecoder>(spec.value("replacement", "\u2581"), prepend);
  }
  if (type == "Replace") {
    const auto& pattern = spec.at("pattern");
    std::string content = spec.at("content").get<std::string>();
    if (pattern.contains("Regex"))
      return std::make_unique<ReplaceDecoder>(
          std::make_unique<Pcre2Regex>(pattern["Regex"].get<std::string>(), where + ".pattern"), "", content);
    return std::make_unique<ReplaceDecoder>(nullptr, pattern.at("String").get<std::string>(), content);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    const auto& list = spec.at("decoders");
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = from_json(list[i], fmt::format("{}.decoders[{}]", where, i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  throw_error(ErrorCode::kUnsupported, "{}: decoder type '{}' is not supported", where, type);
}

}  // namespace brisk
