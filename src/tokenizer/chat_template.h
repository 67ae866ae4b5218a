// Hugging Face chat templates: the Jinja2 `chat_template` of tokenizer_config.json rendered
// the way transformers' apply_chat_template does (trim_blocks, lstrip_blocks, loop controls,
// `{% generation %}`, the raise_exception and strftime_now globals, transformers' tojson).
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/template.h"

namespace brisk {

struct ChatTemplateRenderOptions {
  // Local calendar time that strftime_now() formats; absent means the current local time.
  // Tests and goldens pin it so "Today Date: ..." lines are reproducible.
  std::optional<std::tm> now;
};

class ChatTemplate {
 public:
  // Throws Error(kInvalidArgument) "name:line:column: what" on syntax errors and constructs
  // the interpreter does not support.
  static ChatTemplate parse(std::string source, std::string name = "chat_template");
  // The `chat_template` of a tokenizer_config.json: either a string or a list of
  // {"name", "template"} entries, of which `name` is chosen as transformers does ("default"
  // unless asked otherwise). Throws kNotFound when the config has no such template.
  static ChatTemplate from_tokenizer_config(const nlohmann::ordered_json& config,
                                            const std::string& name = "default");

  // `context` is the object of template variables (see make_chat_template_context). Key
  // order matters: `tojson` and dict iteration follow it, as Python dicts do, so prefer
  // ordered_json; a plain nlohmann::json renders its keys sorted. A `raise_exception(msg)`
  // in the template throws Error(kInvalidArgument) whose message contains msg.
  std::string render(const nlohmann::ordered_json& context,
                     const ChatTemplateRenderOptions& options = {}) const;
  std::string render(const nlohmann::json& context,
                     const ChatTemplateRenderOptions& options = {}) const;

  const std::string& name() const { return template_.name(); }
  // The template's text (what tool-call and reasoning formats are recognized by).
  const std::string& source() const { return source_; }

 private:
  ChatTemplate(jinja::Template t, std::string source) : template_(std::move(t)), source_(std::move(source)) {}
  jinja::Template template_;
  std::string source_;
};

// The variables transformers passes to a chat template. `tools` and `documents` stay null
// when absent (templates test `tools is not none`); `extra` holds further keyword arguments
// (enable_thinking, custom special tokens, date_string, ...) and overrides the others.
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools = nullptr;
  nlohmann::ordered_json documents = nullptr;
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

nlohmann::ordered_json make_chat_template_context(const ChatTemplateInputs& inputs);

// transformers' special_tokens_map from a tokenizer_config.json: bos/eos/unk/sep/pad/cls/mask
// tokens (plain strings or AddedToken objects with "content") and additional_special_tokens,
// as template variables. Put them in ChatTemplateInputs::extra (bos/eos also have fields).
nlohmann::ordered_json special_tokens_from_tokenizer_config(const nlohmann::ordered_json& config);

}  // namespace brisk
