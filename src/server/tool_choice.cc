#include "server/tool_choice.h"

#include <fmt/format.h>

namespace pagellm::server {

StatusOr<ToolChoice> ParseToolChoice(const OrderedJson& tc) {
  ToolChoice out;
  if (tc.is_string()) {
    std::string s = tc.get<std::string>();
    if (s != "auto" && s != "none" && s != "required") {
      return InvalidArgumentError(fmt::format("tool_choice: '{}' is not one of auto, none, required", s));
    }
    out.mode = s;
    return out;
  }
  if (!tc.is_object() || tc.value("type", OrderedJson()) != "function" || !tc.contains("function") ||
      !tc["function"].is_object() || !tc["function"].contains("name") || !tc["function"]["name"].is_string()) {
    return InvalidArgumentError(
        "tool_choice: must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  out.mode = "named";
  out.name = tc["function"]["name"].get<std::string>();
  return out;
}

namespace {

OrderedJson ParametersOf(const OrderedJson& function) {
  return function.contains("parameters") && !function["parameters"].is_null() ? function["parameters"]
                                                                              : OrderedJson{{"type", "object"}};
}

}  // namespace

StatusOr<std::optional<StructuredOutputsParams>> StrictAutoToolCallConstraint(const OrderedJson& tools,
                                                                              const std::string& tool_parser) {
  OrderedJson strict = OrderedJson::array();
  for (const OrderedJson& t : tools.is_array() ? tools : OrderedJson::array()) {
    const OrderedJson& f = t["function"];  // shape checked by ValidateTools
    if (f.value("strict", OrderedJson(false)) != true) continue;
    strict.push_back({{"name", f["name"].get<std::string>()}, {"parameters", ParametersOf(f)}});
  }
  if (strict.empty()) return std::optional<StructuredOutputsParams>();
  if (tool_parser != "hermes" && tool_parser != "qwen3_coder") {
    return InvalidArgumentError(fmt::format(
        "tools: \"strict\": true cannot be enforced with --tool-call-parser {} (hermes and qwen3_coder can)", tool_parser));
  }
  StructuredOutputsParams p;
  p.kind = StructuredOutputKind::kToolCalls;
  p.spec = OrderedJson{{"format", tool_parser}, {"mode", "auto"}, {"tools", strict}}.dump();
  return std::optional<StructuredOutputsParams>(std::move(p));
}

StatusOr<StructuredOutputsParams> ForcedToolCallConstraint(const ToolChoice& choice, const OrderedJson& tools,
                                                           const std::string& tool_parser) {
  if (!tools.is_array() || tools.empty()) {
    return InvalidArgumentError(fmt::format("tool_choice: '{}' needs a non-empty tools list", choice.mode));
  }
  OrderedJson spec_tools = OrderedJson::array();
  for (const OrderedJson& t : tools) {  // shape checked by ValidateTools
    const OrderedJson& f = t["function"];
    std::string name = f["name"].get<std::string>();
    if (choice.mode == "named" && name != choice.name) continue;
    spec_tools.push_back({{"name", name}, {"parameters", ParametersOf(f)}});
  }
  if (spec_tools.empty()) {
    return InvalidArgumentError(fmt::format("tool_choice: function '{}' is not in tools", choice.name));
  }
  StructuredOutputsParams p;
  p.kind = StructuredOutputKind::kToolCalls;
  OrderedJson spec = {{"format", tool_parser}, {"required", choice.mode == "required"}, {"tools", spec_tools}};
  p.spec = spec.dump();
  return p;
}

}  // namespace pagellm::server
