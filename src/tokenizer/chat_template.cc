#include "tokenizer/chat_template.h"

#include "core/error.h"
#include "tokenizer/jinja/interpreter.h"

namespace brisk {

ChatTemplate ChatTemplate::parse(std::string source, std::string name) {
  jinja::Template parsed = jinja::Template::parse(source, std::move(name));
  return ChatTemplate(std::move(parsed), std::move(source));
}

ChatTemplate ChatTemplate::from_tokenizer_config(const nlohmann::ordered_json& config,
                                                 const std::string& name) {
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null())
    throw_error(ErrorCode::kNotFound, "tokenizer config has no chat_template");
  if (it->is_string()) return parse(it->get<std::string>(), "chat_template");
  BRISK_CHECK(it->is_array(), "tokenizer config: chat_template must be a string or a list of "
              "{{name, template}}, got {}", it->type_name());
  std::string names;
  for (const auto& entry : *it) {
    BRISK_CHECK(entry.is_object() && entry.contains("name") && entry.contains("template"),
                "tokenizer config: chat_template list entries need 'name' and 'template'");
    const std::string entry_name = entry.at("name").get<std::string>();
    if (entry_name == name)
      return parse(entry.at("template").get<std::string>(), "chat_template[" + entry_name + "]");
    names += (names.empty() ? "" : ", ") + entry_name;
  }
  throw_error(ErrorCode::kNotFound, "tokenizer config has no chat template named '{}' (has: {})",
              name, names);
}

std::string ChatTemplate::render(const nlohmann::json& context,
                                 const ChatTemplateRenderOptions& options) const {
  return render(nlohmann::ordered_json(context), options);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context,
                                 const ChatTemplateRenderOptions& options) const {
  BRISK_CHECK(context.is_object(), "chat template '{}': the context must be a JSON object, got {}",
              name(), context.type_name());
  jinja::ValueDict globals;
  // transformers' globals come first; context keys of the same name replace them.
  globals.items.emplace_back(
      jinja::Value("raise_exception"),
      jinja::Value::callable("raise_exception", [](jinja::CallArgs& args, jinja::Interpreter& interp) -> jinja::Value {
        std::string message = args.positional.empty() ? "" : args.positional[0].to_str();
        interp.fail("raise_exception: " + message);
      }));
  std::optional<std::tm> fixed = options.now;
  globals.items.emplace_back(
      jinja::Value("strftime_now"),
      jinja::Value::callable("strftime_now", [fixed](jinja::CallArgs& args, jinja::Interpreter& interp) {
        if (args.positional.size() != 1 || !args.positional[0].is_string())
          interp.fail("strftime_now() takes one format string");
        std::tm tm{};
        if (fixed) {
          tm = *fixed;
        } else {
          std::time_t t = std::time(nullptr);
          localtime_r(&t, &tm);
        }
        char buf[512];
        size_t n = std::strftime(buf, sizeof(buf), args.positional[0].as_string().c_str(), &tm);
        return jinja::Value(std::string(buf, n));
      }));
  for (const auto& [key, value] : context.items())
    globals.set(jinja::Value(key), jinja::Value::from_json(value));
  return template_.render(globals);
}

nlohmann::ordered_json make_chat_template_context(const ChatTemplateInputs& inputs) {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = inputs.messages;
  context["tools"] = inputs.tools;
  context["documents"] = inputs.documents;
  context["add_generation_prompt"] = inputs.add_generation_prompt;
  context["bos_token"] = inputs.bos_token;
  context["eos_token"] = inputs.eos_token;
  for (const auto& [key, value] : inputs.extra.items()) context[key] = value;
  return context;
}

nlohmann::ordered_json special_tokens_from_tokenizer_config(const nlohmann::ordered_json& config) {
  auto content = [](const nlohmann::ordered_json& token) -> nlohmann::ordered_json {
    if (token.is_string()) return token;
    if (token.is_object() && token.contains("content")) return token.at("content");
    return nullptr;
  };
  nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token"}) {
    auto it = config.find(key);
    if (it == config.end()) continue;
    nlohmann::ordered_json value = content(*it);
    if (!value.is_null()) tokens[key] = value;
  }
  auto extra = config.find("additional_special_tokens");
  if (extra != config.end() && extra->is_array()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& token : *extra) {
      nlohmann::ordered_json value = content(token);
      if (!value.is_null()) list.push_back(value);
    }
    tokens["additional_special_tokens"] = list;
  }
  return tokens;
}

}  // namespace brisk
