#include "server/responses_request.h"

#include <limits>
#include <map>

#include "core/json_util.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// A content's text: a string, or parts of type input_text, output_text or text, joined with
// newlines as chat joins its text parts.
std::string read_text(const Json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw_invalid(param, "'{}' must be a string or a list of parts, got {}", param, describe_json(content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", param, i);
    if (!content[i].is_object())
      throw_invalid(where, "'{}' must be an object like {{\"type\": \"input_text\", \"text\": ...}}", where);
    Fields part(content[i], where + ".");
    const std::string type = part.string("type").value_or("");
    if (type != "input_text" && type != "output_text" && type != "text")
      throw_invalid(where + ".type", "content part type '{}' is not supported: brisk takes text only "
                    "(input_text, output_text)", type);
    std::optional<std::string> part_text = part.string("text");
    if (!part_text) throw_invalid(where + ".text", "'{}.text' is required", where);
    if (i > 0) text += "\n";
    text += *part_text;
  }
  return text;
}

std::string required_string(const Fields& f, const char* key) {
  std::optional<std::string> value = f.string(key);
  if (!value) throw_invalid(f.name(key), "'{}' is required", f.name(key));
  return *value;
}

// Input items -> chat messages as the chat template expects them: consecutive function calls
// (and a text message the model wrote just before them) form one assistant message with
// tool_calls; each function_call_output is a tool message.
class MessageBuilder {
 public:
  void add(const Json& item, size_t index) {
    const std::string where = fmt::format("input[{}]", index);
    if (!item.is_object()) throw_invalid(where, "'{}' must be an object (a message or an item)", where);
    Fields f(item, where + ".");
    std::optional<std::string> type = f.string("type");
    if (!type && f.get("role")) type = "message";  // the short form {"role", "content"}
    if (!type) throw_invalid(where + ".type", "'{}.type' is required", where);
    if (*type == "message") return message(f);
    if (*type == "function_call") return function_call(f);
    if (*type == "function_call_output") return function_call_output(f);
    if (*type == "reasoning") return;  // the model's earlier thinking: templates drop it anyway
    if (*type == "item_reference")
      throw_invalid(where + ".type", "'item_reference' is not supported: brisk keeps no items; send the item itself");
    throw_invalid(where + ".type", "input item type '{}' is not supported (message, function_call, "
                  "function_call_output and reasoning are)", *type);
  }

  void add_user_text(std::string text) { messages_.push_back({{"role", "user"}, {"content", std::move(text)}}); }
  Json take() { return std::move(messages_); }

 private:
  void message(const Fields& f) {
    std::string role = required_string(f, "role");
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role != "user" && role != "system" && role != "assistant")
      throw_invalid(f.name("role"), "'{}' must be user, system, developer or assistant, got '{}'", f.name("role"),
                    role);
    const Json* content = f.get("content");
    if (!content) throw_invalid(f.name("content"), "'{}' is required", f.name("content"));
    messages_.push_back({{"role", role}, {"content", read_text(*content, f.name("content"))}});
  }

  // Clients send arguments as a JSON string; templates expect the object (they write
  // `arguments | tojson`), so it is parsed, as chat does.
  void function_call(const Fields& f) {
    std::string call_id = required_string(f, "call_id");
    std::string name = required_string(f, "name");
    std::string arguments = required_string(f, "arguments");
    Json parsed = Json::parse(arguments, nullptr, false);
    if (parsed.is_discarded())
      throw_invalid(f.name("arguments"), "'{}' is not valid JSON: {}", f.name("arguments"), arguments);
    names_[call_id] = name;
    Json call = {{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", parsed}}}};
    if (messages_.empty() || messages_.back()["role"] != "assistant")
      messages_.push_back({{"role", "assistant"}, {"content", ""}});
    Json& assistant = messages_.back();
    if (!assistant.contains("tool_calls")) assistant["tool_calls"] = Json::array();
    assistant["tool_calls"].push_back(std::move(call));
  }

  void function_call_output(const Fields& f) {
    std::string call_id = required_string(f, "call_id");
    const Json* output = f.get("output");
    if (!output) throw_invalid(f.name("output"), "'{}' is required", f.name("output"));
    Json message = {{"role", "tool"}, {"tool_call_id", call_id}, {"content", read_text(*output, f.name("output"))}};
    // Some templates name the function a result belongs to.
    if (auto it = names_.find(call_id); it != names_.end()) message["name"] = it->second;
    messages_.push_back(std::move(message));
  }

  Json messages_ = Json::array();
  std::map<std::string, std::string> names_;  // call_id -> function name
};

Json read_input(const Fields& f, const std::optional<std::string>& instructions) {
  MessageBuilder builder;
  const Json* input = f.get("input");
  if (!input) throw_invalid("input", "'input' is required");
  if (input->is_string()) {
    builder.add_user_text(input->get<std::string>());
  } else if (input->is_array()) {
    for (size_t i = 0; i < input->size(); ++i) builder.add((*input)[i], i);
  } else {
    throw_invalid("input", "'input' must be a string or a list of items, got {}", describe_json(*input));
  }
  Json messages = builder.take();
  if (messages.empty()) throw_invalid("input", "'input' holds no messages");
  if (instructions) messages.insert(messages.begin(), Json{{"role", "system"}, {"content", *instructions}});
  return messages;
}

// Responses' function tools ({"type": "function", "name", "description", "parameters"}) in
// chat's shape; built-in tools run on OpenAI's side and have no counterpart here.
void read_tools(const Fields& f, ResponsesRequest& r) {
  const Json* tools = f.get("tools");
  if (!tools) return;
  if (!tools->is_array()) throw_invalid("tools", "'tools' must be a list of tool definitions");
  Json chat_tools = Json::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string where = fmt::format("tools[{}]", i);
    if (!(*tools)[i].is_object())
      throw_invalid(where, "'{}' must be an object like {{\"type\": \"function\", ...}}", where);
    Fields t((*tools)[i], where + ".");
    const std::string type = t.string("type").value_or("");
    if (type != "function")
      throw_invalid(t.name("type"), "tool type '{}' is not supported: brisk serves function tools only, not "
                    "built-in tools such as web_search or file_search", type);
    Json function = {{"name", required_string(t, "name")}};
    if (std::optional<std::string> description = t.string("description")) function["description"] = *description;
    if (const Json* parameters = t.get("parameters")) {
      if (!parameters->is_object())
        throw_invalid(t.name("parameters"), "'{}' must be a JSON schema object", t.name("parameters"));
      function["parameters"] = *parameters;
    }
    t.boolean("strict");  // type check: arguments are not constrained either way
    chat_tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  r.tools = *tools;
  if (!chat_tools.empty()) r.chat.tools = std::move(chat_tools);
}

// What needs stored state or features brisk lacks.
void reject_unsupported(const Fields& f) {
  if (f.get("previous_response_id"))
    throw_invalid("previous_response_id", "'previous_response_id' is not supported: brisk keeps no responses; "
                  "send the whole conversation in 'input'");
  f.reject("conversation", "brisk keeps no conversations; send the whole conversation in 'input'");
  if (f.boolean("background").value_or(false))
    throw_invalid("background", "'background' is not supported: brisk keeps no responses to poll, so it answers "
                  "in the foreground only");
  f.reject("prompt", "brisk has no stored prompt templates");
  f.reject("max_tool_calls", "brisk does not limit tool calls");
  if (f.integer("top_logprobs", 0, kMaxTopLogprobs).value_or(0) > 0)
    throw_invalid("top_logprobs", "'top_logprobs' is not supported on /v1/responses (use /v1/chat/completions)");
}

void read_text(const Fields& f, ResponsesRequest& r) {
  const Json* text = f.get("text");
  if (!text) return;
  if (!text->is_object()) throw_invalid("text", "'text' must be an object like {{\"format\": {{\"type\": \"text\"}}}}");
  Fields t(*text, "text.");
  t.string("verbosity");
  const Json* format = t.get("format");
  if (!format) return;
  r.chat.options.constraint = read_text_format(*format);
  r.text_format = *format;
}

// "none", "auto", "required" or {"type": "function", "name": ...}.
void read_tool_choice(const Fields& f, ResponsesRequest& r) {
  const Json* choice = f.get("tool_choice");
  if (!choice) return;
  if (*choice == "none" || *choice == "auto" || *choice == "required") {
    r.chat.tool_choice = read_chat_tool_choice(*choice);
  } else {
    const std::string type = choice->is_object() ? choice->value("type", "") : "";
    if (type != "function" || !choice->contains("name") || !(*choice)["name"].is_string())
      throw_invalid("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                    "{{\"type\": \"function\", \"name\": ...}}, got {}", describe_json(*choice));
    r.chat.tool_choice = {ToolChoice::Mode::kFunction, (*choice)["name"].get<std::string>()};
  }
  r.tool_choice = *choice;
}

void read_settings(const Fields& f, ResponsesRequest& r) {
  read_tool_choice(f, r);
  r.chat.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  if (const Json* metadata = f.get("metadata")) {
    if (!metadata->is_object()) throw_invalid("metadata", "'metadata' must be an object of strings");
    r.metadata = *metadata;
  }
  if (const Json* reasoning = f.get("reasoning")) {
    if (!reasoning->is_object()) throw_invalid("reasoning", "'reasoning' must be an object like {{\"effort\": ...}}");
    r.reasoning = *reasoning;
  }
  if (const Json* include = f.get("include"); include && !include->is_array())
    throw_invalid("include", "'include' must be a list of strings");
  r.truncation = f.string("truncation").value_or("disabled");
  if (r.truncation != "disabled" && r.truncation != "auto")
    throw_invalid("truncation", "'truncation' must be \"disabled\" or \"auto\", got '{}'", r.truncation);
  r.user = f.string("user");
  f.boolean("store");  // accepted: nothing is stored either way
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view body) {
  Json j = parse_request_body(body);
  Fields f(j);
  ResponsesRequest r;
  reject_unsupported(f);
  GenerationOptions& o = r.chat.options;
  o.model = f.string("model").value_or("");
  read_float(f, "temperature", o.sampling.temperature, 0, 1e6, false, "[0, inf)");
  read_float(f, "top_p", o.sampling.top_p, 0, 1, true, "(0, 1]");
  o.max_tokens = f.integer("max_output_tokens", 1, kMaxInt32);
  o.stream = f.boolean("stream").value_or(false);
  r.instructions = f.string("instructions");
  r.chat.messages = read_input(f, r.instructions);
  read_tools(f, r);
  read_settings(f, r);
  read_text(f, r);
  if (r.chat.tool_choice.forced()) {
    check_single_constraint(r.chat.options.constraint, "tool_choice");
    r.chat.options.constraint = tool_choice_constraint(r.chat.tool_choice, r.chat.tools, r.chat.parallel_tool_calls);
  }
  return r;
}

}  // namespace brisk::server
