#include "tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pcre2_regex.h"
#include "tokenizer/utf8.h"

namespace brisk {
namespace {

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Span {
  size_t begin, end;
  bool is_match;
};

// Every byte of `text` covered by alternating non-match/match spans (HF's Pattern::find_matches).
using Matcher = std::function<std::vector<Span>(const std::string& text)>;

Behavior parse_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  throw_error(ErrorCode::kCorruptData, "{}: unknown split behavior '{}'", where, name);
}

std::vector<Span> spans_from_matches(const std::string& text,
                                     const std::vector<std::pair<size_t, size_t>>& matches) {
  std::vector<Span> spans;
  if (text.empty()) return {{0, 0, false}};
  size_t prev = 0;
  for (auto [begin, end] : matches) {
    if (prev != begin) spans.push_back({prev, begin, false});
    spans.push_back({begin, end, true});
    prev = end;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), false});
  return spans;
}

Matcher regex_matcher(std::shared_ptr<Pcre2Regex> regex) {
  return [regex](const std::string& text) { return spans_from_matches(text, regex->find_all(text)); };
}

// Each code point satisfying `pred` is one match (HF's `impl Pattern for Fn(char) -> bool`).
Matcher char_matcher(std::function<bool(char32_t)> pred) {
  return [pred](const std::string& text) {
    std::vector<std::pair<size_t, size_t>> matches;
    for (size_t i = 0; i < text.size();) {
      size_t begin = i;
      char32_t cp = utf8::decode(text, i);
      if (pred(cp)) matches.emplace_back(begin, i);
    }
    return spans_from_matches(text, matches);
  };
}

// Applies HF's NormalizedString::split: merges spans per behaviour, drops removed and empty ones.
void split_pieces(std::vector<PreToken>& pieces, const Matcher& matcher, Behavior behavior,
                  bool invert) {
  std::vector<PreToken> out;
  out.reserve(pieces.size() * 2);
  for (auto& piece : pieces) {
    std::vector<Span> spans = matcher(piece.text);
    if (invert)
      for (auto& s : spans) s.is_match = !s.is_match;
    std::vector<Span> kept;  // is_match here means "remove"
    bool previous_match = false;
    switch (behavior) {
      case Behavior::kRemoved:
        kept = spans;
        break;
      case Behavior::kIsolated:
        for (auto s : spans) kept.push_back({s.begin, s.end, false});
        break;
      case Behavior::kContiguous:
        for (auto s : spans) {
          if (s.is_match == previous_match && !kept.empty()) kept.back().end = s.end;
          else kept.push_back({s.begin, s.end, false});
          previous_match = s.is_match;
        }
        break;
      case Behavior::kMergedWithPrevious:
        for (auto s : spans) {
          if (s.is_match && !previous_match && !kept.empty()) kept.back().end = s.end;
          else kept.push_back({s.begin, s.end, false});
          previous_match = s.is_match;
        }
        break;
      case Behavior::kMergedWithNext:
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
          if (it->is_match && !previous_match && !kept.empty()) kept.back().begin = it->begin;
          else kept.push_back({it->begin, it->end, false});
          previous_match = it->is_match;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    }
    for (const auto& s : kept) {
      if (s.is_match || s.end == s.begin) continue;
      out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_input_start && s.begin == 0});
    }
  }
  pieces = std::move(out);
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Matcher matcher, Behavior behavior, bool invert)
      : matcher_(std::move(matcher)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_pieces(pieces, matcher_, behavior_, invert_);
  }

 private:
  Matcher matcher_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::shared_ptr<Pcre2Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_)
      for (auto& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text = " " + p.text;  // (insert(0, " ") trips a GCC 12 -Wrestrict false positive)
    if (regex_) split_pieces(pieces, regex_matcher(regex_), Behavior::kIsolated, false);
    for (auto& p : pieces) {
      std::string mapped;
      mapped.reserve(p.text.size() * 2);
      byte_level::encode(p.text, mapped);
      p.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<Pcre2Regex> regex_;  // null when use_regex is false
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (auto& p : pieces) {
      std::string text;
      for (char c : p.text) {
        if (c == ' ') text += replacement_;
        else text.push_back(c);
      }
      bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && p.at_input_start)))
        text.insert(0, replacement_);
      p.text = std::move(text);
    }
    if (split_) {
      std::string rep = replacement_;
      Matcher matcher = [rep](const std::string& text) {
        std::vector<std::pair<size_t, size_t>> matches;
        for (size_t pos = text.find(rep); pos != std::string::npos; pos = text.find(rep, pos + rep.size()))
          matches.emplace_back(pos, pos + rep.size());
        return spans_from_matches(text, matches);
      };
      split_pieces(pieces, matcher, Behavior::kMergedWithNext, false);
    }
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::string escape_literal(const std::string& literal) {
  std::string out;
  for (char c : literal) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool is_numeric(char32_t cp) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t cp) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

}  // namespace

std::unique_ptr<PreTokenizer> PreTokenizer::byte_level_with_regex(const std::string& pattern,
                                                                  const std::string& where) {
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  steps.push_back(std::make_unique<SplitPreTokenizer>(
      regex_matcher(std::make_shared<Pcre2Regex>(pattern, where)), Behavior::kIsolated, false));
  steps.push_back(std::make_unique<ByteLevelPreTokenizer>(false, nullptr));
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

std::unique_ptr<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  std::string type = spec.value("type", "");
  if (type == "ByteLevel") {
    std::shared_ptr<Pcre2Regex> regex;
    if (spec.value("use_regex", true)) regex = std::make_shared<Pcre2Regex>(kGpt2Pattern, where);
    return std::make_unique<ByteLevelPreTokenizer>(spec.value("add_prefix_space", true), regex);
  }
  if (type == "Split") {
    const auto& pattern = spec.at("pattern");
    std::string regex = pattern.contains("Regex") ? pattern["Regex"].get<std::string>()
                                                   : escape_literal(pattern.at("String").get<std::string>());
    return std::make_unique<SplitPreTokenizer>(
        regex_matcher(std::make_shared<Pcre2Regex>(regex, where + ".pattern")),
        parse_behavior(spec.at("behavior").get<std::string>(), where + ".behavior"), spec.value("invert", false));
  }
  if (type == "Metaspace") {
    std::string scheme = spec.value("prepend_scheme", "");
    auto prepend = MetaspacePreTokenizer::Prepend::kAlways;
    if (scheme == "first") prepend = MetaspacePreTokenizer::Prepend::kFirst;
    else if (scheme == "never") prepend = MetaspacePreTokenizer::Prepend::kNever;
    else if (scheme.empty() && !spec.value("add_prefix_space", true)) prepend = MetaspacePreTokenizer::Prepend::kNever;
    return std::make_unique<MetaspacePreTokenizer>(spec.value("replacement", "\u2581"), prepend,
                                                   spec.value("split", true));
  }
  if (type == "Digits")
    return std::make_unique<SplitPreTokenizer>(
        char_matcher(is_numeric), spec.value("individual_digits", false) ? Behavior::kIsolated : Behavior::kContiguous,
        false);
  if (type == "Punctuation")
    return std::make_unique<SplitPreTokenizer>(
        char_matcher(is_punctuation), parse_behavior(spec.value("behavior", "Isolated"), where + ".behavior"), false);
  if (type == "Whitespace")
    return std::make_unique<SplitPreTokenizer>(
        regex_matcher(std::make_shared<Pcre2Regex>(R"(\w+|[^\w\s]+)", where)), Behavior::kRemoved, true);
  if (type == "WhitespaceSplit")
    return std::make_unique<SplitPreTokenizer>(char_matcher(utf8::is_whitespace), Behavior::kRemoved, false);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    const auto& list = spec.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = from_json(list[i], fmt::format("{}.pretokenizers[{}]", where, i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  throw_error(ErrorCode::kUnsupported, "{}: pre-tokenizer type '{}' is not supported", where, type);
}

}  // namespace brisk
