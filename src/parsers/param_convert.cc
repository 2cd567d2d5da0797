#include "parsers/param_convert.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "parsers/text_scan.h"

namespace pagellm::parsers {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "type" of one schema node: a string, or the first non-null string of a list, or the
// first non-null anyOf/oneOf branch. "" when the node names no type.
std::string TypeOfSchema(const OrderedJson& schema, int depth = 0) {
  if (!schema.is_object() || depth > 8) return "";
  auto type_it = schema.find("type");
  if (type_it != schema.end()) {
    if (type_it->is_string()) return Lower(type_it->get<std::string>());
    if (type_it->is_array()) {
      for (const OrderedJson& t : *type_it) {
        if (t.is_string() && Lower(t.get<std::string>()) != "null") return Lower(t.get<std::string>());
      }
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    auto it = schema.find(key);
    if (it == schema.end() || !it->is_array()) continue;
    for (const OrderedJson& branch : *it) {
      std::string t = TypeOfSchema(branch, depth + 1);
      if (!t.empty() && t != "null") return t;
    }
  }
  return "";
}

// Python int(): optional sign and digits, surrounding whitespace allowed.
bool ParseInteger(std::string_view s, OrderedJson* out) {
  std::string t(TrimSpace(s));
  if (t.empty()) return false;
  size_t i = (t[0] == '+' || t[0] == '-') ? 1 : 0;
  if (i == t.size()) return false;
  for (size_t j = i; j < t.size(); ++j) {
    if (t[j] < '0' || t[j] > '9') return false;
  }
  errno = 0;
  long long v = std::strtoll(t.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = v;
  return true;
}

// Python float() followed by vLLM's "integral -> int" step; inf/nan stay strings
// because vLLM's int(float) raises on them.
bool ParseNumber(std::string_view s, OrderedJson* out) {
  std::string t(TrimSpace(s));
  if (t.empty() || t.find_first_of("xXpP") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return false;
  if (v == std::trunc(v) && std::fabs(v) < 9.2e18) {
    *out = static_cast<long long>(v);
  } else {
    *out = v;
  }
  return true;
}

OrderedJson LiteralFallback(std::string_view value) {
  OrderedJson parsed = OrderedJson::parse(value.begin(), value.end(), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) return parsed;
  std::string_view t = TrimSpace(value);
  if (t == "True") return true;
  if (t == "False") return false;
  if (t == "None") return nullptr;
  return std::string(value);
}

}  // namespace

const OrderedJson* FindToolProperties(const OrderedJson& tools, std::string_view name) {
  if (!tools.is_array()) return nullptr;
  for (const OrderedJson& tool : tools) {
    if (!tool.is_object()) continue;
    // Chat-completions shape {"type", "function": {...}}; Responses shape is flat.
    const OrderedJson& fn = tool.contains("function") ? tool["function"] : tool;
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string()) continue;
    if (fn["name"].get<std::string>() != name) continue;
    auto params = fn.find("parameters");
    if (params == fn.end() || !params->is_object()) return nullptr;
    auto props = params->find("properties");
    if (props != params->end() && props->is_object()) return &*props;
    return &*params;
  }
  return nullptr;
}

std::string ParamSchemaType(const OrderedJson* properties, std::string_view param) {
  if (properties == nullptr) return "";
  auto it = properties->find(std::string(param));
  if (it == properties->end()) return "";
  std::string type = TypeOfSchema(*it);
  return type.empty() ? "string" : type;
}

OrderedJson ConvertParamValue(std::string_view value, const OrderedJson* properties,
                              std::string_view param) {
  if (Lower(value) == "null") return nullptr;
  std::string type = ParamSchemaType(properties, param);
  if (type.empty()) return std::string(value);
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" ||
      type == "enum") {
    return std::string(value);
  }
  OrderedJson out;
  if (StartsWith(type, "int") || StartsWith(type, "uint") || StartsWith(type, "long") ||
      StartsWith(type, "short") || StartsWith(type, "unsigned")) {
    return ParseInteger(value, &out) ? out : OrderedJson(std::string(value));
  }
  if (StartsWith(type, "num") || StartsWith(type, "float")) {
    return ParseNumber(value, &out) ? out : OrderedJson(std::string(value));
  }
  if (type == "boolean" || type == "bool" || type == "binary") return Lower(value) == "true";
  return LiteralFallback(value);
}

}  // namespace pagellm::parsers
