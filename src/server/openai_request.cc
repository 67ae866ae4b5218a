#include "server/openai_request.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMaxN = 128;

std::vector<int32_t> read_ids(const Json& list, const std::string& param) {
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    std::optional<int64_t> id = json_int64(list[i]);
    if (!id || *id < 0 || *id > std::numeric_limits<int32_t>::max())
      throw_invalid(param, "'{}' must hold token ids (non-negative integers); item {} is {}", param, i,
                    describe_json(list[i]));
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

void read_stop(const Fields& f, SamplingParams& s) {
  if (const Json* stop = f.get("stop")) {
    if (stop->is_string()) {
      s.stop = {stop->get<std::string>()};
    } else if (stop->is_array()) {
      for (const Json& item : *stop) {
        if (!item.is_string()) throw_invalid("stop", "'stop' must be a string or a list of strings, got an item {}",
                                             describe_json(item));
        s.stop.push_back(item.get<std::string>());
      }
    } else {
      throw_invalid("stop", "'stop' must be a string or a list of strings, got {}", describe_json(*stop));
    }
    for (const std::string& text : s.stop)
      if (text.empty()) throw_invalid("stop", "'stop' strings must not be empty");
  }
  if (const Json* ids = f.get("stop_token_ids")) {
    if (!ids->is_array()) throw_invalid("stop_token_ids", "'stop_token_ids' must be a list of token ids");
    s.stop_token_ids = read_ids(*ids, "stop_token_ids");
  }
}

// {"token id": bias}: ids as decimal strings, biases clamped to [-100, 100] as OpenAI and vLLM do.
void read_logit_bias(const Fields& f, SamplingParams& s) {
  const Json* bias = f.get("logit_bias");
  if (bias == nullptr) return;
  const std::string name = f.name("logit_bias");
  if (!bias->is_object())
    throw_invalid(name, "'{}' must be an object of token ids to biases, got {}", name, describe_json(*bias));
  for (const auto& [key, value] : bias->items()) {
    const std::optional<int32_t> token = token_id_key(key);
    if (!token) throw_invalid(name, "'{}' keys must be token ids (non-negative integers), got \"{}\"", name, key);
    if (!value.is_number())
      throw_invalid(name, "'{}' values must be numbers; token {} has {}", name, key, describe_json(value));
    s.logit_bias.emplace_back(*token, logit_bias_value(value));
  }
  std::vector<int32_t> tokens;  // "1" and "01" name one token
  for (const auto& entry : s.logit_bias) tokens.push_back(entry.first);
  std::sort(tokens.begin(), tokens.end());
  if (auto twice = std::adjacent_find(tokens.begin(), tokens.end()); twice != tokens.end())
    throw_invalid(name, "'{}' names token {} twice", name, *twice);
}

void read_sampling(const Fields& f, SamplingParams& s) {
  s.n = static_cast<int32_t>(f.integer("n", 1, kMaxN).value_or(1));
  read_float(f, "temperature", s.temperature, 0, 1e6, false, "[0, inf)");
  read_float(f, "top_p", s.top_p, 0, 1, true, "(0, 1]");
  read_float(f, "min_p", s.min_p, 0, 1, false, "[0, 1]");
  read_float(f, "presence_penalty", s.presence_penalty, -2, 2, false, "[-2, 2]");
  read_float(f, "frequency_penalty", s.frequency_penalty, -2, 2, false, "[-2, 2]");
  read_float(f, "repetition_penalty", s.repetition_penalty, 0, 1e6, true, "(0, inf)");
  s.top_k = static_cast<int32_t>(f.integer("top_k", -1, std::numeric_limits<int32_t>::max()).value_or(0));
  if (const Json* seed = f.get("seed")) {
    if (seed->is_number_unsigned()) s.seed = seed->get<uint64_t>();
    else if (seed->is_number_integer()) s.seed = static_cast<uint64_t>(seed->get<int64_t>());
    else throw_invalid("seed", "'seed' must be an integer, got {}", describe_json(*seed));
  }
  s.min_tokens = f.integer("min_tokens", 0, std::numeric_limits<int32_t>::max()).value_or(0);
  s.ignore_eos = f.boolean("ignore_eos").value_or(false);
  s.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  s.include_stop_str_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  read_stop(f, s);
  read_logit_bias(f, s);
}

void reject_unsupported(const Fields& f) {
  f.reject("use_beam_search", "brisk does not do beam search");
  f.reject("logits_processors", "brisk has no custom logits processors");
}

// min_max_tokens: 0 where the endpoint can score a prompt without generating (completions).
GenerationOptions read_options(const Fields& f, int64_t min_max_tokens) {
  GenerationOptions o;
  o.model = f.string("model").value_or("");
  read_sampling(f, o.sampling);
  reject_unsupported(f);
  o.constraint = read_output_constraint(f);
  o.max_tokens = f.integer("max_tokens", min_max_tokens, std::numeric_limits<int32_t>::max());
  o.stream = f.boolean("stream").value_or(false);
  if (auto prompt_logprobs = f.integer("prompt_logprobs", 0, kMaxTopLogprobs)) {
    // As vLLM: a stream has nowhere to put them; 0 asks for nothing a client would miss.
    if (o.stream && *prompt_logprobs > 0)
      throw_invalid("prompt_logprobs", "'prompt_logprobs' is not available when 'stream' is true");
    if (!o.stream) o.sampling.prompt_logprobs = static_cast<int32_t>(*prompt_logprobs);
  }
  if (const Json* options = f.get("stream_options")) {
    if (!o.stream) throw_invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (!options->is_object()) throw_invalid("stream_options", "'stream_options' must be an object");
    o.include_usage = Fields(*options, "stream_options.").boolean("include_usage").value_or(false);
  }
  if (std::optional<int64_t> best_of = f.integer("best_of", 1, kMaxN); best_of && *best_of != o.sampling.n)
    throw_invalid("best_of", "'best_of' other than n is not supported (brisk returns every sample)");
  return o;
}

Prompt read_prompt_item(const Json& item) {
  if (item.is_string()) return item.get<std::string>();
  if (item.is_array()) return read_ids(item, "prompt");
  throw_invalid("prompt", "'prompt' must be a string, a list of strings, a list of token ids or a list of "
                "lists of token ids; got an item {}", describe_json(item));
}

std::vector<Prompt> read_prompts(const Fields& f) {
  const Json* prompt = f.get("prompt");
  if (!prompt) throw_invalid("prompt", "'prompt' is required");
  std::vector<Prompt> prompts;
  if (prompt->is_string()) {
    prompts.push_back(prompt->get<std::string>());
  } else if (prompt->is_array() && !prompt->empty() && prompt->front().is_number()) {
    prompts.push_back(read_ids(*prompt, "prompt"));
  } else if (prompt->is_array()) {
    for (const Json& item : *prompt) prompts.push_back(read_prompt_item(item));
  } else {
    throw_invalid("prompt", "'prompt' must be a string or a list, got {}", describe_json(*prompt));
  }
  if (prompts.empty()) throw_invalid("prompt", "'prompt' is an empty list");
  for (const Prompt& p : prompts)
    if (std::holds_alternative<std::vector<int32_t>>(p) && std::get<std::vector<int32_t>>(p).empty())
      throw_invalid("prompt", "'prompt' holds an empty list of token ids");
  return prompts;
}

// "content": a string, or a list of parts of which only text is supported. Where it may be null
// (an assistant message with tool_calls, as the openai SDK sends it) it becomes "": templates
// concatenate it as a string.
Json flatten_content(const Json& content, const std::string& param, bool may_be_null) {
  if (content.is_string()) return content;
  if (content.is_null()) {
    if (!may_be_null) throw_invalid(param, "'{}' is required", param);
    return "";
  }
  if (!content.is_array()) throw_invalid(param, "'{}' must be a string or a list of parts", param);
  std::string text;
  for (const Json& part : content) {
    if (!part.is_object()) throw_invalid(param, "'{}' parts must be objects like {{\"type\": \"text\", ...}}", param);
    Fields p(part, param + ".");
    std::string type = p.string("type").value_or("");
    if (type != "text") throw_invalid(param, "content part type '{}' is not supported (text only)", type);
    std::optional<std::string> part_text = p.string("text");
    if (!part_text) throw_invalid(param, "a text part of '{}' needs 'text'", param);
    if (!text.empty()) text += "\n";
    text += *part_text;
  }
  return text;
}

// Clients send a call's arguments as a JSON string (OpenAI's shape); templates expect the object
// (they write `arguments | tojson`), so the string is parsed, as vLLM does.
Json tool_calls_for_template(const Json& tool_calls, const std::string& where) {
  Json out = tool_calls;
  for (size_t i = 0; i < out.size(); ++i) {
    Json& call = out[i];
    if (!call.is_object()) throw_invalid(where, "'{}[{}]' must be an object", where, i);
    Json* function = call.contains("function") ? &call["function"] : nullptr;
    if (!function || !function->is_object() || !function->contains("name"))
      throw_invalid(where, "'{}[{}]' needs 'function' with 'name' and 'arguments'", where, i);
    auto arguments = function->find("arguments");
    if (arguments == function->end() || !arguments->is_string()) continue;
    Json parsed = Json::parse(arguments->get<std::string>(), nullptr, false);
    if (parsed.is_discarded())
      throw_invalid(where, "'{}[{}].function.arguments' is not valid JSON: {}", where, i, arguments->get<std::string>());
    *arguments = std::move(parsed);
  }
  return out;
}

Json read_message(const Json& message, size_t index) {
  std::string where = fmt::format("messages[{}]", index);
  if (!message.is_object()) throw_invalid(where, "'{}' must be an object with 'role' and 'content'", where);
  Fields f(message, where + ".");
  std::optional<std::string> role = f.string("role");
  if (!role) throw_invalid(where + ".role", "'{}.role' is required", where);
  if (*role == "developer") role = "system";  // OpenAI's newer name for the system role
  if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool")
    throw_invalid(where + ".role", "'{}.role' must be system, developer, user, assistant or tool, got '{}'", where,
                  *role);
  const Json* tool_calls = f.get("tool_calls");
  if (tool_calls && (*role != "assistant" || !tool_calls->is_array()))
    throw_invalid(where + ".tool_calls", "'{}.tool_calls' must be a list, on an assistant message", where);
  if (*role == "tool") f.string("tool_call_id");  // type check
  f.string("name");
  Json out = message;
  out["role"] = *role;
  if (tool_calls) out["tool_calls"] = tool_calls_for_template(*tool_calls, where + ".tool_calls");
  auto content = message.find("content");
  out["content"] = flatten_content(content == message.end() ? Json() : *content, where + ".content",
                                   *role == "assistant" && tool_calls);
  return out;
}

void read_chat_fields(const Fields& f, ChatRequest& r) {
  const Json* messages = f.get("messages");
  if (!messages) throw_invalid("messages", "'messages' is required");
  if (!messages->is_array()) throw_invalid("messages", "'messages' must be a list of messages");
  if (messages->empty()) throw_invalid("messages", "'messages' is empty: give at least one message");
  r.messages = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) r.messages.push_back(read_message((*messages)[i], i));
  if (const Json* tools = f.get("tools")) {
    if (!tools->is_array()) throw_invalid("tools", "'tools' must be a list of tool definitions");
    for (const Json& tool : *tools)
      if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object())
        throw_invalid("tools", "each tool must be an object like {{\"type\": \"function\", \"function\": {{...}}}}");
    if (!tools->empty()) r.tools = *tools;
  }
  r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  if (const Json* kwargs = f.get("chat_template_kwargs")) {
    if (!kwargs->is_object()) throw_invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    r.chat_template_kwargs = *kwargs;
  }
  f.reject("continue_final_message", "brisk always starts a new assistant message");
  f.reject("chat_template", "brisk renders the model folder's chat template");
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body) {
  Json j = parse_request_body(body);
  Fields f(j);
  CompletionRequest r;
  r.options = read_options(f, /*min_max_tokens=*/0);
  r.prompts = read_prompts(f);
  r.echo = f.boolean("echo").value_or(false);
  f.reject("suffix", "brisk does not do fill-in-the-middle completions");
  if (std::optional<int64_t> logprobs = f.integer("logprobs", 0, kMaxTopLogprobs)) {
    r.options.logprobs = true;
    r.options.sampling.top_logprobs = static_cast<int32_t>(*logprobs);
  }
  if (r.options.max_tokens == 0 && !r.echo)
    throw_invalid("max_tokens", "'max_tokens' 0 is only allowed with 'echo': true (the prompt is scored, nothing "
                  "is generated)");
  return r;
}

ChatRequest parse_chat_request(std::string_view body) {
  Json j = parse_request_body(body);
  Fields f(j);
  ChatRequest r;
  r.options = read_options(f, /*min_max_tokens=*/1);
  // max_completion_tokens is OpenAI's newer name for max_tokens and wins when both are given.
  if (auto max = f.integer("max_completion_tokens", 1, std::numeric_limits<int32_t>::max())) r.options.max_tokens = max;
  read_chat_fields(f, r);
  r.options.logprobs = f.boolean("logprobs").value_or(false);
  if (auto top = f.integer("top_logprobs", 0, kMaxTopLogprobs)) {
    if (!r.options.logprobs) throw_invalid("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    r.options.sampling.top_logprobs = static_cast<int32_t>(*top);
  }
  f.reject("functions", "use 'tools'");
  f.reject("function_call", "use 'tools'");
  f.reject("audio", "brisk generates text only");
  f.reject("prediction", "brisk has no predicted outputs");
  if (const Json* choice = f.get("tool_choice")) r.tool_choice = read_chat_tool_choice(*choice);
  r.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  if (r.tool_choice.forced()) {
    check_single_constraint(r.options.constraint, "tool_choice");
    r.options.constraint = tool_choice_constraint(r.tool_choice, r.tools, r.parallel_tool_calls);
  }
  if (const Json* modalities = f.get("modalities")) {
    if (*modalities != Json::array({"text"}))
      throw_invalid("modalities", "'modalities' other than [\"text\"] is not supported");
  }
  return r;
}

TokenizeRequest parse_tokenize_request(std::string_view body) {
  Json j = parse_request_body(body);
  Fields f(j);
  TokenizeRequest r;
  r.model = f.string("model").value_or("");
  r.prompt = f.string("prompt");
  if (f.get("messages")) {
    if (r.prompt) throw_invalid("prompt", "give either 'prompt' or 'messages', not both");
    ChatRequest chat;
    read_chat_fields(f, chat);
    r.chat = std::move(chat);
  } else if (!r.prompt) {
    throw_invalid("prompt", "'prompt' (text) or 'messages' (a chat) is required");
  }
  r.add_special_tokens = f.boolean("add_special_tokens").value_or(!r.chat);
  return r;
}

DetokenizeRequest parse_detokenize_request(std::string_view body) {
  Json j = parse_request_body(body);
  Fields f(j);
  DetokenizeRequest r;
  r.model = f.string("model").value_or("");
  const Json* tokens = f.get("tokens");
  if (!tokens || !tokens->is_array()) throw_invalid("tokens", "'tokens' (a list of token ids) is required");
  r.tokens = read_ids(*tokens, "tokens");
  return r;
}

}  // namespace brisk::server
