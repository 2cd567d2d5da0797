// allOf merging and oneOf disjointness for the JSON Schema compiler.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "grammar/json_schema.h"

namespace pagellm::grammar {
namespace {

const std::set<std::string> kMinKeys = {"minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"};
const std::set<std::string> kMaxKeys = {"maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"};
const std::set<std::string> kUnvalidated = {"markdownDescription", "deprecationMessage", "errorMessage",
                                            "nullable", "example", "$anchor", "contentMediaType"};
const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$comment", "$schema",
                                            "$id", "id", "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};

std::vector<std::string> TypesOf(const OrderedJson& s) {
  if (!s.contains("type")) return {};
  if (s["type"].is_string()) return {s["type"].get<std::string>()};
  std::vector<std::string> out;
  for (const OrderedJson& t : s["type"]) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  return out;
}

OrderedJson IntersectTypes(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& t : a) {
    for (const std::string& u : b) {
      if (t == u) out.push_back(t);
      else if (t == "integer" && u == "number") out.push_back("integer");
      else if (t == "number" && u == "integer") out.push_back("integer");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out.size() == 1 ? OrderedJson(out[0]) : OrderedJson(out);
}

// Restricts object properties of `merged` to what `part` allows beyond its own.
Status ApplyAdditional(const OrderedJson& part, OrderedJson* merged) {
  if (!part.contains("additionalProperties") || part["additionalProperties"] == OrderedJson(true)) return OkStatus();
  const OrderedJson& add = part["additionalProperties"];
  OrderedJson own = part.value("properties", OrderedJson::object());
  OrderedJson& props = (*merged)["properties"];
  for (auto it = props.begin(); it != props.end();) {
    if (own.contains(it.key())) {
      ++it;
      continue;
    }
    if (add == OrderedJson(false)) {
      for (const OrderedJson& r : merged->value("required", OrderedJson::array())) {
        if (r == it.key()) return InvalidArgumentError(fmt::format("allOf: required property '{}' is forbidden by additionalProperties", it.key()));
      }
      it = props.erase(it);
    } else {
      *it = OrderedJson{{"allOf", {*it, add}}};
      ++it;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<OrderedJson> MergeSchemas(const OrderedJson& a, const OrderedJson& b) {
  if (a == OrderedJson(true) || a == OrderedJson::object()) return b;
  if (b == OrderedJson(true) || b == OrderedJson::object()) return a;
  if (!a.is_object() || !b.is_object()) return InvalidArgumentError("allOf: a subschema is false or not an object");
  OrderedJson out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    const OrderedJson& v = it.value();
    if (!out.contains(k) || kAnnotations.count(k)) {
      if (!out.contains(k)) out[k] = v;
      continue;
    }
    OrderedJson& cur = out[k];
    if (cur == v) continue;
    if (k == "properties") {
      for (auto p = v.begin(); p != v.end(); ++p) {
        cur[p.key()] = cur.contains(p.key()) ? OrderedJson{{"allOf", {cur[p.key()], p.value()}}} : p.value();
      }
    } else if (k == "required") {
      for (const OrderedJson& r : v) {
        if (std::find(cur.begin(), cur.end(), r) == cur.end()) cur.push_back(r);
      }
    } else if (k == "type") {
      cur = IntersectTypes(TypesOf(a), TypesOf(b));
      if (cur.empty()) return InvalidArgumentError("allOf: the subschemas' types do not intersect");
    } else if (k == "enum") {
      OrderedJson both = OrderedJson::array();
      for (const OrderedJson& x : cur) {
        if (std::find(v.begin(), v.end(), x) != v.end()) both.push_back(x);
      }
      cur = both;
    } else if (kMinKeys.count(k) && cur.is_number() && v.is_number()) {
      cur = std::max(cur.get<double>(), v.get<double>());
    } else if (kMaxKeys.count(k) && cur.is_number() && v.is_number()) {
      cur = std::min(cur.get<double>(), v.get<double>());
    } else if (k == "items" && cur.is_object() && v.is_object()) {
      cur = OrderedJson{{"allOf", {cur, v}}};
    } else if (k == "additionalProperties") {
      if (cur == OrderedJson(false) || v == OrderedJson(false)) cur = false;
      else return InvalidArgumentError("allOf: two different additionalProperties schemas");
    } else if (k.rfind("x-", 0) == 0 || kUnvalidated.count(k)) {
      // vendor extensions and annotations validate nothing: keep the first
    } else {
      return InvalidArgumentError(fmt::format("allOf: conflicting '{}' in the subschemas", k));
    }
  }
  if (out.contains("properties")) {
    PAGELLM_RETURN_IF_ERROR(ApplyAdditional(a, &out));
    PAGELLM_RETURN_IF_ERROR(ApplyAdditional(b, &out));
  }
  return out;
}

namespace {

// The JSON types our grammar can emit for `s` ("" = unknown / any).
std::set<std::string> EmittedTypes(const OrderedJson& s) {
  auto of_value = [](const OrderedJson& v) -> std::string {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "boolean";
    if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
    if (v.is_number()) return "number";
    if (v.is_string()) return "string";
    if (v.is_array()) return "array";
    return "object";
  };
  if (!s.is_object()) return {""};
  if (s.contains("const")) return {of_value(s["const"])};
  if (s.contains("enum") && s["enum"].is_array()) {
    std::set<std::string> out;
    for (const OrderedJson& v : s["enum"]) out.insert(of_value(v));
    return out;
  }
  std::vector<std::string> t = TypesOf(s);
  if (t.empty() || s.contains("anyOf") || s.contains("oneOf") || s.contains("allOf") || s.contains("$ref")) return {""};
  return std::set<std::string>(t.begin(), t.end());
}

bool TypeAllowed(const std::string& emitted, const std::set<std::string>& accepted) {
  if (accepted.count("")) return true;
  if (accepted.count(emitted)) return true;
  return emitted == "integer" && accepted.count("number");
}

}  // namespace

bool ExcludesSchema(const OrderedJson& a, const OrderedJson& b) {
  std::set<std::string> ta = EmittedTypes(a), tb = EmittedTypes(b);
  if (!ta.count("") && !tb.count("")) {
    bool any = false;
    for (const std::string& t : ta) any |= TypeAllowed(t, tb);
    if (!any) return true;
  }
  if (a.is_object() && b.is_object() && a.contains("const") && b.contains("const")) return a["const"] != b["const"];
  if (!a.is_object() || !b.is_object() || !a.contains("properties") || !b.contains("properties")) return false;
  // Objects: a never emits a key b requires, or a required key's constants differ.
  const OrderedJson& pa = a["properties"];
  const OrderedJson& pb = b["properties"];
  for (const OrderedJson& r : b.value("required", OrderedJson::array())) {
    if (r.is_string() && !pa.contains(r.get<std::string>())) return true;
  }
  for (const OrderedJson& r : a.value("required", OrderedJson::array())) {
    if (!r.is_string()) continue;
    std::string k = r.get<std::string>();
    if (!pa.contains(k) || !pb.contains(k)) {
      if (b.value("additionalProperties", OrderedJson(true)) == OrderedJson(false) && !pb.contains(k)) return true;
      continue;
    }
    const OrderedJson& x = pa[k];
    const OrderedJson& y = pb[k];
    if (x.is_object() && y.is_object() && x.contains("const") && y.contains("const") && x["const"] != y["const"]) return true;
    if (x.is_object() && y.is_object() && x.contains("const") && y.contains("enum") && y["enum"].is_array() &&
        std::find(y["enum"].begin(), y["enum"].end(), x["const"]) == y["enum"].end()) {
      return true;
    }
    if (x.is_object() && y.is_object() && x.contains("enum") && y.contains("const") && x["enum"].is_array() &&
        std::find(x["enum"].begin(), x["enum"].end(), y["const"]) == x["enum"].end()) {
      return true;
    }
  }
  return false;
}

}  // namespace pagellm::grammar
