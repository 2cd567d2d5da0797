// Tool calls forced in the model's own format (tool_choice named or "required").
#include <set>

#include <fmt/format.h>

#include "common/json.h"
#include "grammar/grammar_request.h"
#include "grammar/json_schema.h"
#include "grammar/structural_tag.h"

namespace pagellm::grammar {
namespace {

// What a call of `name` starts with, up to its arguments: the trigger of an "auto" call.
std::string HermesHead(const std::string& name) {
  return fmt::format("<tool_call>\n{{\"name\": {}, \"arguments\": ", OrderedJson(name).dump());
}
std::string XmlHead(const std::string& name) { return fmt::format("<tool_call>\n<function={}>\n", name); }

// hermes (Qwen3): the arguments are the tool's schema as JSON.
StatusOr<int32_t> HermesCall(Grammar& g, const std::string& name, const OrderedJson& params, const JsonWhitespace& ws) {
  PAGELLM_ASSIGN_OR_RETURN(int32_t args, AddJsonSchema(g, params, ws));
  return g.AddSeq({g.AddLiteral(HermesHead(name)), args, g.AddLiteral("}\n</tool_call>")});
}

// A string value in the XML form: raw text without '<' (it would end the value), not
// starting with a newline (the parser strips one) or n/N (the parser reads "null",
// in any case, as null).
int32_t RawString(Grammar& g, int32_t min, int32_t max) {
  int32_t first = g.AddClass({{'<', '<'}, {'\n', '\n'}, {'n', 'n'}, {'N', 'N'}}, /*negate=*/true);
  int32_t rest = g.AddClass({{'<', '<'}}, /*negate=*/true);
  if (max == 0) return g.AddEmpty();
  int32_t body = g.AddSeq({first, g.AddRepeat(rest, std::max(0, min - 1), max < 0 ? -1 : max - 1)});
  return min > 0 ? body : g.AddOptional(body);
}

// How the qwen3_coder parser types a value (parsers/param_convert.h): by "type" (a
// string, or a list's first non-null entry), else by the first non-null anyOf/oneOf
// branch, else as a string. The grammar must write what that reading makes valid.
std::string ParserType(const OrderedJson& s) {
  if (!s.is_object()) return "string";
  if (s.contains("type")) {
    const OrderedJson& t = s["type"];
    if (t.is_string()) return t.get<std::string>();
    for (const OrderedJson& e : t.is_array() ? t : OrderedJson::array()) {
      if (e.is_string() && e != "null") return e.get<std::string>();
    }
  }
  for (const char* k : {"anyOf", "oneOf"}) {
    for (const OrderedJson& branch : s.contains(k) && s[k].is_array() ? s[k] : OrderedJson::array()) {
      if (std::string t = ParserType(branch); t != "null") return t;
    }
  }
  return "string";
}

// Whether `text` reads back unchanged as a raw value (see RawString).
bool IsRawSafe(const std::string& text) {
  return !text.empty() && text.find('<') == std::string::npos && text[0] != '\n' && text[0] != 'n' && text[0] != 'N';
}

// A value the parser keeps as a string: raw text, one of the enum/const strings, or
// refused when the schema asks for more than the raw form can show.
StatusOr<int32_t> XmlString(Grammar& g, const OrderedJson& schema) {
  static const std::set<std::string> kAllowed = {"type", "description", "title", "default", "examples",
                                                 "minLength", "maxLength", "enum", "const"};
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (!kAllowed.count(it.key())) {
      return InvalidArgumentError(fmt::format("tool parameter: '{}' on a string is not supported in the qwen3_coder format", it.key()));
    }
  }
  if (schema.contains("type") && schema["type"] != "string") {
    return InvalidArgumentError("tool parameter: a type list is not supported in the qwen3_coder format");
  }
  if (schema.contains("enum") || schema.contains("const")) {
    OrderedJson values = schema.contains("const") ? OrderedJson::array({schema["const"]}) : schema["enum"];
    std::vector<int32_t> alts;
    for (const OrderedJson& v : values.is_array() ? values : OrderedJson::array()) {
      if (!v.is_string() || !IsRawSafe(v.get<std::string>())) {
        return InvalidArgumentError(fmt::format("tool parameter: enum value {} cannot be written in the qwen3_coder format", v.dump()));
      }
      alts.push_back(g.AddLiteral(v.get<std::string>()));
    }
    if (alts.empty()) return InvalidArgumentError("tool parameter: enum must be a non-empty list");
    return g.AddAlt(std::move(alts));
  }
  auto num = [&](const char* k, int32_t d) { return schema.contains(k) && schema[k].is_number() ? schema[k].get<int32_t>() : d; };
  return RawString(g, num("minLength", 0), num("maxLength", -1));
}

StatusOr<int32_t> XmlValue(Grammar& g, const OrderedJson& schema, const JsonWhitespace& ws) {
  if (ParserType(schema) == "string") return XmlString(g, schema.is_object() ? schema : OrderedJson::object());
  // Other types: JSON, which the parser loads as such (compact: no whitespace runs).
  JsonWhitespace compact = ws;
  compact.disable = true;
  return AddJsonSchema(g, schema, compact);
}

StatusOr<int32_t> XmlCall(Grammar& g, const std::string& name, const OrderedJson& params, const JsonWhitespace& ws) {
  std::vector<int32_t> seq = {g.AddLiteral(XmlHead(name))};
  OrderedJson props = params.value("properties", OrderedJson::object());
  std::set<std::string> required;
  for (const OrderedJson& r : params.value("required", OrderedJson::array())) {
    if (r.is_string()) required.insert(r.get<std::string>());
  }
  for (const std::string& r : required) {
    if (!props.contains(r)) return InvalidArgumentError(fmt::format("tool '{}': required parameter '{}' has no schema", name, r));
  }
  for (auto it = props.begin(); it != props.end(); ++it) {
    PAGELLM_ASSIGN_OR_RETURN(int32_t value, XmlValue(g, it.value(), ws));
    int32_t p = g.AddSeq({g.AddLiteral(fmt::format("<parameter={}>\n", it.key())), value, g.AddLiteral("\n</parameter>\n")});
    seq.push_back(required.count(it.key()) ? p : g.AddOptional(p));
  }
  seq.push_back(g.AddLiteral("</function>\n</tool_call>"));
  return g.AddSeq(std::move(seq));
}

}  // namespace

StatusOr<Grammar> ToolCallGrammar(const std::string& spec_text, const JsonWhitespace& ws) {
  OrderedJson spec = OrderedJson::parse(spec_text, nullptr, false);
  if (spec.is_discarded() || !spec.contains("tools") || !spec["tools"].is_array() || spec["tools"].empty()) {
    return InvalidArgumentError("tool-call constraint needs a non-empty tools list");
  }
  std::string format = spec.value("format", "hermes");
  if (format != "hermes" && format != "qwen3_coder") {
    return InvalidArgumentError(fmt::format("tool-call format '{}' cannot be constrained", format));
  }
  const std::string mode = spec.value("mode", "forced");
  if (mode != "forced" && mode != "auto") return InvalidArgumentError(fmt::format("tool-call mode '{}' is unknown", mode));
  Grammar g;
  std::vector<int32_t> calls;
  std::vector<std::string> heads;
  for (const OrderedJson& t : spec["tools"]) {
    std::string name = t.value("name", "");
    heads.push_back(format == "hermes" ? HermesHead(name) : XmlHead(name));
    OrderedJson params = t.value("parameters", OrderedJson{{"type", "object"}});
    auto call = format == "hermes" ? HermesCall(g, name, params, ws) : XmlCall(g, name, params, ws);
    if (!call.ok()) return call.status().WithPrefix(fmt::format("tool '{}'", name));
    calls.push_back(*call);
  }
  if (mode == "auto") {  // free text; a call of a listed tool is constrained from its head on
    g.SetRoot(g.AddRule("root", AddTriggeredText(g, std::move(heads), std::move(calls))));
    PAGELLM_RETURN_IF_ERROR(g.Validate());
    return g;
  }
  int32_t one = g.AddRef(g.AddRule("tool-call", g.AddAlt(std::move(calls))));
  int32_t root = one;
  if (spec.value("required", false)) {
    root = g.AddSeq({one, g.AddRepeat(g.AddSeq({g.AddLiteral("\n"), g.AddRef(g.FindRule("tool-call"))}), 0, -1)});
  }
  g.SetRoot(g.AddRule("root", root));
  PAGELLM_RETURN_IF_ERROR(g.Validate());
  return g;
}

}  // namespace pagellm::grammar
