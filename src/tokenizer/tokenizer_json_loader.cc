// tokenizer.json -> HfTokenizer.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/file_util.h"
#include "tokenizer/hf_tokenizer_loader.h"

namespace brisk {
namespace {

using nlohmann::json;

// Old files write a merge as one string "left right"; a few vocabularies (Llama-2) hold tokens
// that contain spaces, so the split point is the one whose two halves and concatenation are
// all tokens.
std::pair<std::string, std::string> split_merge_string(const std::string& merge, const TokenIdMap& vocab,
                                                       const std::string& where, size_t index) {
  size_t first = merge.find(' ');
  if (first == std::string::npos)
    throw_error(ErrorCode::kCorruptData, "{}: model.merges[{}] '{}' is not two tokens separated by a space", where,
                index, merge);
  if (merge.find(' ', first + 1) == std::string::npos) return {merge.substr(0, first), merge.substr(first + 1)};
  for (size_t pos = first; pos != std::string::npos; pos = merge.find(' ', pos + 1)) {
    std::string left = merge.substr(0, pos), right = merge.substr(pos + 1);
    if (vocab.count(left) && vocab.count(right) && vocab.count(left + right)) return {left, right};
  }
  return {merge.substr(0, first), merge.substr(first + 1)};
}

std::unique_ptr<BpeModel> parse_model(const json& model, const std::string& where) {
  std::string type = model.value("type", "");
  if (type.empty() && model.contains("merges")) type = "BPE";  // very old files omit the type
  if (type != "BPE")
    throw_error(ErrorCode::kUnsupported, "{}: model type '{}' is not supported (brisk reads BPE models only)", where,
                type);
  if (!model.contains("vocab") || !model["vocab"].is_object())
    throw_error(ErrorCode::kCorruptData, "{}: field 'model.vocab' is missing or not an object", where);
  TokenIdMap vocab;
  vocab.reserve(model["vocab"].size());
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer())
      throw_error(ErrorCode::kCorruptData, "{}: model.vocab['{}'] is not an integer id", where, token);
    vocab.emplace(token, id.get<int32_t>());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  if (model.contains("merges")) {
    const auto& list = model["merges"];
    if (!list.is_array()) throw_error(ErrorCode::kCorruptData, "{}: field 'model.merges' is not a list", where);
    merges.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const auto& m = list[i];
      if (m.is_string()) {
        merges.push_back(split_merge_string(m.get<std::string>(), vocab, where, i));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        throw_error(ErrorCode::kCorruptData, "{}: model.merges[{}] is neither \"a b\" nor [\"a\", \"b\"]", where, i);
      }
    }
  }
  BpeOptions options;
  if (model.contains("unk_token") && model["unk_token"].is_string()) options.unk_token = model["unk_token"].get<std::string>();
  options.byte_fallback = model.value("byte_fallback", false);
  options.fuse_unk = model.value("fuse_unk", false);
  options.ignore_merges = model.value("ignore_merges", false);
  if (model.contains("continuing_subword_prefix") && model["continuing_subword_prefix"].is_string())
    options.continuing_subword_prefix = model["continuing_subword_prefix"].get<std::string>();
  if (model.contains("end_of_word_suffix") && model["end_of_word_suffix"].is_string())
    options.end_of_word_suffix = model["end_of_word_suffix"].get<std::string>();
  return std::make_unique<BpeModel>(std::move(vocab), merges, std::move(options), where + ": model");
}

// Reduces a post-processor to what it adds around a single sequence.
void parse_post_processor(const json& spec, const std::string& where, std::vector<int32_t>& prefix,
                          std::vector<int32_t>& suffix) {
  if (spec.is_null()) return;
  std::string type = spec.value("type", "");
  if (type == "ByteLevel") return;  // only trims offsets
  if (type == "Sequence") {
    const auto& list = spec.at("processors");
    for (size_t i = 0; i < list.size(); ++i) {
      std::vector<int32_t> p, s;
      parse_post_processor(list[i], fmt::format("{}.processors[{}]", where, i), p, s);
      prefix.insert(prefix.begin(), p.begin(), p.end());
      suffix.insert(suffix.end(), s.begin(), s.end());
    }
    return;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    prefix.push_back(spec.at("cls").at(1).get<int32_t>());
    suffix.push_back(spec.at("sep").at(1).get<int32_t>());
    return;
  }
  if (type == "TemplateProcessing") {
    const auto& specials = spec.value("special_tokens", json::object());
    bool seen_sequence = false;
    for (const auto& item : spec.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      std::string name = item.at("SpecialToken").at("id").get<std::string>();
      if (!specials.contains(name))
        throw_error(ErrorCode::kCorruptData, "{}: template names special token '{}' missing from special_tokens",
                    where, name);
      for (const auto& id : specials[name].at("ids")) (seen_sequence ? suffix : prefix).push_back(id.get<int32_t>());
    }
    return;
  }
  throw_error(ErrorCode::kUnsupported, "{}: post-processor type '{}' is not supported", where, type);
}

}  // namespace

std::unique_ptr<HfTokenizer> parse_tokenizer_json(const std::string& json_text, const std::string& where,
                                                  TokenizerConfig config) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) throw_error(ErrorCode::kCorruptData, "{}: not valid JSON", where);
  if (!j.is_object()) throw_error(ErrorCode::kCorruptData, "{}: top level is not a JSON object", where);
  if (!j.contains("model") || !j["model"].is_object())
    throw_error(ErrorCode::kCorruptData, "{}: field 'model' is missing", where);
  HfTokenizer::Parts parts;
  try {
    parts.model = parse_model(j["model"], where);
    parts.normalizer = Normalizer::from_json(j.value("normalizer", json()), where + ": normalizer");
    parts.pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", json()), where + ": pre_tokenizer");
    parts.decoder = Decoder::from_json(j.value("decoder", json()), where + ": decoder");
    parse_post_processor(j.value("post_processor", json()), where + ": post_processor", parts.prefix_ids,
                         parts.suffix_ids);
    if (j.contains("added_tokens")) {
      for (const auto& t : j["added_tokens"]) {
        AddedToken token;
        token.id = t.at("id").get<int32_t>();
        token.content = t.at("content").get<std::string>();
        token.special = t.value("special", false);
        token.lstrip = t.value("lstrip", false);
        token.rstrip = t.value("rstrip", false);
        token.single_word = t.value("single_word", false);
        token.normalized = t.value("normalized", !token.special);
        token.normalized_content = token.content;
        if (token.normalized && parts.normalizer) parts.normalizer->normalize(token.normalized_content);
        parts.added.add(std::move(token));
      }
    }
  } catch (const json::exception& e) {
    throw_error(ErrorCode::kCorruptData, "{}: {}", where, e.what());
  }
  return std::make_unique<HfTokenizer>(std::move(parts), std::move(config));
}

std::unique_ptr<HfTokenizer> load_tokenizer_json(const std::filesystem::path& file, TokenizerConfig config) {
  return parse_tokenizer_json(read_text_file(file), file.string(), std::move(config));
}

}  // namespace brisk
