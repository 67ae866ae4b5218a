#include "server/anthropic_request.h"

#include <limits>

#include "core/json_util.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

// A string, or a list of blocks of which only text is supported, as one string.
std::string read_text(const Json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw_invalid(param, "'{}' must be a string or a list of content blocks", param);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& block = content[i];
    const std::string where = fmt::format("{}[{}]", param, i);
    if (!block.is_object() || block.value("type", "") != "text" || !block.contains("text") ||
        !block["text"].is_string())
      throw_invalid(where, "'{}' must be a text block {{\"type\": \"text\", \"text\": ...}}", where);
    if (!text.empty()) text += "\n";
    text += block["text"].get<std::string>();
  }
  return text;
}

// One Anthropic message -> one or more chat messages (tool results become tool messages, first).
void read_message(const Json& message, size_t index, Json& out) {
  const std::string where = fmt::format("messages[{}]", index);
  if (!message.is_object()) throw_invalid(where, "'{}' must be an object with 'role' and 'content'", where);
  Fields f(message, where + ".");
  const std::string role = f.string("role").value_or("");
  if (role != "user" && role != "assistant")
    throw_invalid(where + ".role", "'{}.role' must be user or assistant, got '{}'", where, role);
  const Json* content = f.get("content");
  if (!content) throw_invalid(where + ".content", "'{}.content' is required", where);
  if (content->is_string()) {
    out.push_back({{"role", role}, {"content", content->get<std::string>()}});
    return;
  }
  if (!content->is_array()) throw_invalid(where + ".content", "'{}.content' must be a string or a list", where);
  std::string text;
  Json tool_calls = Json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& block = (*content)[i];
    const std::string at = fmt::format("{}.content[{}]", where, i);
    if (!block.is_object()) throw_invalid(at, "'{}' must be a content block object", at);
    Fields b(block, at + ".");
    const std::string type = b.string("type").value_or("");
    if (type == "text") {
      if (!text.empty()) text += "\n";
      text += b.string("text").value_or("");
    } else if (type == "tool_use" && role == "assistant") {
      const std::optional<std::string> id = b.string("id"), name = b.string("name");
      if (!id || !name) throw_invalid(at, "a tool_use block needs 'id' and 'name'");
      const Json* input = b.get("input");
      tool_calls.push_back({{"id", *id}, {"type", "function"},
                            {"function", {{"name", *name}, {"arguments", input ? *input : Json::object()}}}});
    } else if (type == "tool_result" && role == "user") {
      const std::optional<std::string> id = b.string("tool_use_id");
      if (!id) throw_invalid(at, "a tool_result block needs 'tool_use_id'");
      const Json* result = b.get("content");
      std::string result_text = result ? read_text(*result, at + ".content") : "";
      if (b.boolean("is_error").value_or(false)) result_text = "Error: " + result_text;
      out.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", result_text}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      // Past reasoning is not shown to the model again (chat templates drop it too).
    } else if (type == "image" || type == "document") {
      throw_invalid(at, "'{}' blocks are not supported: brisk serves text models", type);
    } else {
      throw_invalid(at, "content block type '{}' is not supported on a{} {} message", type,
                    role == "assistant" ? "n" : "", role);
    }
  }
  if (!tool_calls.empty()) {
    out.push_back({{"role", "assistant"}, {"content", text}, {"tool_calls", std::move(tool_calls)}});
  } else if (!text.empty() || role == "assistant" || out.empty() || out.back()["role"] != "tool") {
    out.push_back({{"role", role}, {"content", text}});
  }
}

Json read_tools(const Json& tools) {
  if (!tools.is_array()) throw_invalid("tools", "'tools' must be a list of tool definitions");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = fmt::format("tools[{}]", i);
    if (!tools[i].is_object()) throw_invalid(where, "'{}' must be an object", where);
    Fields t(tools[i], where + ".");
    const std::string type = t.string("type").value_or("custom");
    if (type != "custom")
      throw_invalid(where, "tool type '{}' is not supported: brisk runs no server tools; define the tool with "
                    "'name', 'description' and 'input_schema'", type);
    const std::optional<std::string> name = t.string("name");
    if (!name) throw_invalid(where + ".name", "'{}.name' is required", where);
    const Json* schema = t.get("input_schema");
    if (!schema || !schema->is_object())
      throw_invalid(where + ".input_schema", "'{}.input_schema' must be an object", where);
    Json function = {{"name", *name}};
    if (std::optional<std::string> description = t.string("description")) function["description"] = *description;
    function["parameters"] = *schema;
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

// {"type": "auto" | "none" | "any" | "tool", "name"?, "disable_parallel_tool_use"?}: "any" is
// OpenAI's "required", "tool" a named function; both constrain the output (tool_choice.h).
void read_tool_choice(const Json& choice, ChatRequest& r) {
  const std::string type = choice.is_object() ? choice.value("type", "") : "";
  if (type == "none") r.tool_choice.mode = ToolChoice::Mode::kNone;
  else if (type == "any") r.tool_choice.mode = ToolChoice::Mode::kRequired;
  else if (type == "tool") r.tool_choice.mode = ToolChoice::Mode::kFunction;
  else if (type != "auto")
    throw_invalid("tool_choice", "'tool_choice' must be {{\"type\": ...}} with type auto, any, tool or none, got {}",
                  describe_json(choice));
  Fields c(choice, "tool_choice.");
  r.parallel_tool_calls = !c.boolean("disable_parallel_tool_use").value_or(false);
  if (r.tool_choice.mode != ToolChoice::Mode::kFunction) return;
  std::optional<std::string> name = c.string("name");
  if (!name) throw_invalid("tool_choice.name", "'tool_choice' of type tool needs 'name'");
  r.tool_choice.function = *name;
}

ChatRequest read_request(std::string_view body, bool need_max_tokens) {
  Json j = parse_request_body(body);
  Fields f(j);
  ChatRequest r;
  GenerationOptions& o = r.options;
  o.model = f.string("model").value_or("");
  o.max_tokens = f.integer("max_tokens", 1, std::numeric_limits<int32_t>::max());
  if (need_max_tokens && !o.max_tokens) throw_invalid("max_tokens", "'max_tokens' is required");
  read_float(f, "temperature", o.sampling.temperature, 0, 1e6, false, "[0, inf)");
  read_float(f, "top_p", o.sampling.top_p, 0, 1, true, "(0, 1]");
  o.sampling.top_k = static_cast<int32_t>(f.integer("top_k", -1, std::numeric_limits<int32_t>::max()).value_or(0));
  if (const Json* stop = f.get("stop_sequences")) {
    if (!stop->is_array()) throw_invalid("stop_sequences", "'stop_sequences' must be a list of strings");
    for (const Json& s : *stop) {
      if (!s.is_string() || s.get<std::string>().empty())
        throw_invalid("stop_sequences", "'stop_sequences' must hold non-empty strings, got {}", describe_json(s));
      o.sampling.stop.push_back(s.get<std::string>());
    }
  }
  o.stream = f.boolean("stream").value_or(false);

  r.messages = Json::array();
  if (const Json* system = f.get("system"))
    r.messages.push_back({{"role", "system"}, {"content", read_text(*system, "system")}});
  const Json* messages = f.get("messages");
  if (!messages || !messages->is_array() || messages->empty())
    throw_invalid("messages", "'messages' must be a non-empty list of messages");
  for (size_t i = 0; i < messages->size(); ++i) read_message((*messages)[i], i, r.messages);
  if (const Json* tools = f.get("tools")) {
    r.tools = read_tools(*tools);
    if (r.tools.empty()) r.tools = nullptr;
  }
  if (const Json* choice = f.get("tool_choice")) read_tool_choice(*choice, r);
  // Extended thinking switches the template's thinking on or off (Qwen3's enable_thinking).
  if (const Json* thinking = f.get("thinking")) {
    const std::string type = thinking->is_object() ? thinking->value("type", "") : "";
    if (type != "enabled" && type != "disabled")
      throw_invalid("thinking", "'thinking' must be {{\"type\": \"enabled\", ...}} or {{\"type\": \"disabled\"}}");
    r.chat_template_kwargs["enable_thinking"] = type == "enabled";
  }
  f.reject("mcp_servers", "brisk connects to no MCP servers");
  f.reject("container", "brisk runs no code containers");
  r.options.constraint = tool_choice_constraint(r.tool_choice, r.tools, r.parallel_tool_calls);
  return r;
}

}  // namespace

ChatRequest parse_messages_request(std::string_view body) { return read_request(body, true); }

ChatRequest parse_count_tokens_request(std::string_view body) { return read_request(body, false); }

}  // namespace brisk::server
