#include "server/tool_choice.h"

#include <vector>

#include "core/json_util.h"
#include "server/api_error.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kNamedShape = "{\"type\": \"function\", \"function\": {\"name\": ...}}";

std::string describe(const ToolChoice& choice) {
  return choice.mode == ToolChoice::Mode::kRequired ? "\"required\"" : "'" + choice.function + "'";
}

// The tools' function names, in order; every forced choice needs them.
std::vector<std::string> function_names(const Json& tools) {
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& function = tools[i]["function"];
    auto name = function.find("name");
    if (name == function.end() || !name->is_string())
      throw_invalid(fmt::format("tools[{}].function.name", i), "'tools[{}].function.name' (a string) is required", i);
    names.push_back(name->get<std::string>());
  }
  return names;
}

// A function's parameters schema; a function without parameters takes an empty object.
Json parameters_of(const Json& tool) {
  auto parameters = tool["function"].find("parameters");
  if (parameters == tool["function"].end() || parameters->is_null() ||
      (parameters->is_object() && parameters->empty()))
    return {{"type", "object"}, {"properties", Json::object()}};
  return *parameters;
}

// "required": an array of {"name", "parameters"} objects, one branch per tool. Definitions the
// parameters refer to ("#/$defs/..."), which point into the document's root, move to the root
// of the combined schema.
Json required_schema(const Json& tools, const std::vector<std::string>& names, bool parallel_tool_calls) {
  Json branches = Json::array();
  Json definitions = Json::object();
  for (size_t i = 0; i < tools.size(); ++i) {
    Json parameters = parameters_of(tools[i]);
    for (const char* keyword : {"$defs", "definitions"}) {
      if (!parameters.is_object() || !parameters.contains(keyword)) continue;
      for (auto& [name, schema] : parameters[keyword].items()) {
        Json& defs = definitions[keyword];
        if (defs.contains(name) && defs[name] != schema)
          throw_invalid("tools", "the tools define '{}/{}' differently; with tool_choice \"required\" their "
                        "definitions share one schema", keyword, name);
        defs[name] = schema;
      }
      parameters.erase(keyword);
    }
    Json name = {{"type", "string"}, {"enum", {names[i]}}};
    branches.push_back({{"type", "object"},
                        {"properties", {{"name", std::move(name)}, {"parameters", std::move(parameters)}}},
                        {"required", {"name", "parameters"}}});
  }
  Json schema = {{"type", "array"}, {"items", {{"anyOf", std::move(branches)}}}, {"minItems", 1}};
  if (!parallel_tool_calls) schema["maxItems"] = 1;
  for (auto& [keyword, defs] : definitions.items()) schema[keyword] = defs;
  return schema;
}

}  // namespace

ToolChoice read_chat_tool_choice(const Json& value) {
  ToolChoice choice;
  if (value.is_string()) {
    const std::string mode = value.get<std::string>();
    if (mode == "auto") return choice;
    if (mode == "none") choice.mode = ToolChoice::Mode::kNone;
    else if (mode == "required") choice.mode = ToolChoice::Mode::kRequired;
    else throw_invalid("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {}, got '{}'",
                       kNamedShape, mode);
    return choice;
  }
  const Json* function = value.is_object() && value.contains("function") ? &value["function"] : nullptr;
  if (!function || !function->is_object() || !function->contains("name") || !(*function)["name"].is_string() ||
      (*function)["name"].get<std::string>().empty() || value.value("type", "function") != "function")
    throw_invalid("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {}, got {}", kNamedShape,
                  describe_json(value));
  choice.mode = ToolChoice::Mode::kFunction;
  choice.function = (*function)["name"].get<std::string>();
  return choice;
}

std::optional<OutputConstraint> tool_choice_constraint(const ToolChoice& choice, const Json& tools,
                                                       bool parallel_tool_calls) {
  if (!choice.forced()) return std::nullopt;
  if (!tools.is_array() || tools.empty())
    throw_invalid("tool_choice", "'tool_choice' {} needs 'tools' to choose from", describe(choice));
  const std::vector<std::string> names = function_names(tools);
  if (choice.mode == ToolChoice::Mode::kRequired) {
    try {
      OutputConstraint c = json_schema_constraint(required_schema(tools, names, parallel_tool_calls), "tools");
      c.param = "tool_choice";
      return c;
    } catch (const ApiError&) {
      // Name the tool at fault: the first whose parameters do not convert on their own.
      for (size_t i = 0; i < tools.size(); ++i)
        json_schema_constraint(parameters_of(tools[i]), fmt::format("tools[{}].function.parameters", i));
      throw;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != choice.function) continue;
    OutputConstraint c =
        json_schema_constraint(parameters_of(tools[i]), fmt::format("tools[{}].function.parameters", i));
    c.param = "tool_choice";
    return c;
  }
  std::string known;
  for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
  throw_invalid("tool_choice", "'tool_choice' names the function '{}', which is not among 'tools' ({})",
                choice.function, known);
}

}  // namespace brisk::server
