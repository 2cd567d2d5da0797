#include "grammar/json_schema.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "grammar/regex_parser.h"

namespace pagellm::grammar {
namespace {

// Keywords that validate something we do not enforce: refused, never dropped.
const std::set<std::string> kRefused = {
    "not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas", "contains", "minContains",
    "maxContains", "patternProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
    "$recursiveRef", "multipleOf"};
const std::set<std::string> kStringKeys = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeys = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
const std::set<std::string> kArrayKeys = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"};
const std::set<std::string> kObjectKeys = {"properties", "required", "additionalProperties", "minProperties",
                                           "maxProperties"};
const std::set<std::string> kNonValidating = {"title", "description", "default", "examples", "$comment", "$schema",
                                              "$id", "id", "deprecated", "readOnly", "writeOnly", "$defs",
                                              "definitions", "$anchor", "contentMediaType", "contentEncoding",
                                              "nullable", "discriminator", "example", "x-order"};

bool IsValidationKeyword(const std::string& k) {
  static const std::set<std::string> kOther = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "items",
                                               "additionalItems"};
  return kRefused.count(k) || kStringKeys.count(k) || kNumberKeys.count(k) || kArrayKeys.count(k) ||
         kObjectKeys.count(k) || kOther.count(k);
}

int32_t ToInt(const OrderedJson& v, int32_t fallback) {
  if (!v.is_number()) return fallback;
  double d = v.get<double>();
  return d > 1e9 ? 1000000000 : d < 0 ? 0 : static_cast<int32_t>(d);
}

class SchemaCompiler {
 public:
  SchemaCompiler(Grammar& g, const OrderedJson& root, const JsonWhitespace& ws) : root_(root), g_(g), pieces_(g_, ws) {}

  // The schema as one rule of `g_`; returns a reference to it.
  StatusOr<int32_t> Run() {
    PAGELLM_RETURN_IF_ERROR(pieces_.Init());
    int32_t root = g_.DeclareRule(g_.UniqueName("schema"));
    PAGELLM_ASSIGN_OR_RETURN(int32_t body, Schema(root_, 0));
    g_.DefineRule(root, body);
    return g_.AddRef(root);
  }

 private:
  StatusOr<int32_t> Schema(const OrderedJson& s, int depth) {
    if (depth > 64) return InvalidArgumentError("schema nested deeper than 64 levels");
    if (s.is_boolean()) {
      if (s.get<bool>()) return pieces_.AnyValue();
      return InvalidArgumentError("schema 'false' matches nothing");
    }
    if (!s.is_object()) return InvalidArgumentError("a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (kRefused.count(it.key())) return Refuse(it.key());
    }
    if (s.value("uniqueItems", false) && s.value("maxItems", 2) > 1) return Refuse("uniqueItems");
    if (s.contains("$ref")) return RefWithSiblings(s, depth);
    if (s.contains("allOf")) return AllOf(s, depth);
    if (s.contains("anyOf") || s.contains("oneOf")) return Union(s, depth);
    if (s.contains("const") || s.contains("enum")) return Constants(s);
    return Typed(s, depth);
  }

  static Status Refuse(std::string_view keyword) {
    return InvalidArgumentError(fmt::format("JSON Schema keyword '{}' is not supported", keyword));
  }

  // Keywords besides `except` that constrain the value.
  static OrderedJson Siblings(const OrderedJson& s, std::initializer_list<const char*> except) {
    OrderedJson rest = OrderedJson::object();
    for (auto it = s.begin(); it != s.end(); ++it) {
      bool skip = kNonValidating.count(it.key()) > 0;
      for (const char* e : except) skip |= it.key() == e;
      if (!skip) rest[it.key()] = it.value();
    }
    return rest;
  }

  StatusOr<const OrderedJson*> Resolve(const OrderedJson& ref) {
    if (!ref.is_string()) return InvalidArgumentError("$ref must be a string");
    std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') return InvalidArgumentError(fmt::format("$ref '{}': only local references (#...) are supported", r));
    std::string pointer = r.substr(1);
    try {
      const OrderedJson& target = root_.at(OrderedJson::json_pointer(pointer));
      return &target;
    } catch (const std::exception&) {
      return InvalidArgumentError(fmt::format("$ref '{}' does not resolve", r));
    }
  }

  StatusOr<int32_t> RefWithSiblings(const OrderedJson& s, int depth) {
    PAGELLM_ASSIGN_OR_RETURN(const OrderedJson* target, Resolve(s["$ref"]));
    OrderedJson rest = Siblings(s, {"$ref"});
    if (rest.empty()) return RefRule(s["$ref"].get<std::string>(), *target, depth);
    PAGELLM_ASSIGN_OR_RETURN(OrderedJson merged, MergeSchemas(*target, rest));
    return Schema(merged, depth + 1);
  }

  // One rule per reference target, so recursive schemas become recursive rules.
  StatusOr<int32_t> RefRule(const std::string& ref, const OrderedJson& target, int depth) {
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return g_.AddRef(it->second);
    int32_t rule = g_.DeclareRule(g_.UniqueName("ref"));
    ref_rules_[ref] = rule;
    PAGELLM_ASSIGN_OR_RETURN(int32_t body, Schema(target, depth + 1));
    g_.DefineRule(rule, body);
    return g_.AddRef(rule);
  }

  // Follows $ref chains (for merging, which needs the schemas themselves).
  StatusOr<OrderedJson> Flatten(const OrderedJson& s, int depth) {
    if (depth > 32) return InvalidArgumentError("allOf: $ref chain too deep");
    if (!s.is_object() || !s.contains("$ref")) return s;
    PAGELLM_ASSIGN_OR_RETURN(const OrderedJson* target, Resolve(s["$ref"]));
    PAGELLM_ASSIGN_OR_RETURN(OrderedJson t, Flatten(*target, depth + 1));
    OrderedJson rest = Siblings(s, {"$ref"});
    return rest.empty() ? t : MergeSchemas(t, rest);
  }

  StatusOr<int32_t> AllOf(const OrderedJson& s, int depth) {
    if (!s["allOf"].is_array()) return InvalidArgumentError("allOf must be an array");
    PAGELLM_ASSIGN_OR_RETURN(OrderedJson merged, Flatten(Siblings(s, {"allOf"}), 0));
    for (const OrderedJson& part : s["allOf"]) {
      PAGELLM_ASSIGN_OR_RETURN(OrderedJson flat, Flatten(part, 0));
      if (flat.is_object() && flat.contains("allOf")) {
        PAGELLM_ASSIGN_OR_RETURN(flat, FlattenAllOf(flat, depth));
      }
      PAGELLM_ASSIGN_OR_RETURN(merged, MergeSchemas(merged, flat));
    }
    return Schema(merged, depth + 1);
  }

  StatusOr<OrderedJson> FlattenAllOf(const OrderedJson& s, int depth) {
    PAGELLM_ASSIGN_OR_RETURN(OrderedJson merged, Flatten(Siblings(s, {"allOf"}), 0));
    for (const OrderedJson& part : s["allOf"]) {
      PAGELLM_ASSIGN_OR_RETURN(OrderedJson flat, Flatten(part, 0));
      PAGELLM_ASSIGN_OR_RETURN(merged, MergeSchemas(merged, flat));
    }
    return merged;
  }

  StatusOr<int32_t> Union(const OrderedJson& s, int depth) {
    bool one = s.contains("oneOf");
    if (s.contains("oneOf") && s.contains("anyOf")) return Refuse("anyOf together with oneOf");
    const OrderedJson& branches = s[one ? "oneOf" : "anyOf"];
    if (!branches.is_array() || branches.empty()) return InvalidArgumentError(one ? "oneOf must be a non-empty array" : "anyOf must be a non-empty array");
    OrderedJson rest = Siblings(s, {"anyOf", "oneOf"});
    std::vector<OrderedJson> flat;
    for (const OrderedJson& b : branches) {
      PAGELLM_ASSIGN_OR_RETURN(OrderedJson f, Flatten(b, 0));
      if (!rest.empty()) {
        PAGELLM_ASSIGN_OR_RETURN(f, MergeSchemas(rest, f));
      }
      flat.push_back(std::move(f));
    }
    if (one) {
      for (size_t i = 0; i < flat.size(); ++i) {
        for (size_t j = i + 1; j < flat.size(); ++j) {
          if (!ExcludesSchema(flat[i], flat[j]) && !ExcludesSchema(flat[j], flat[i])) {
            return Refuse(fmt::format("oneOf (branches {} and {} are not provably disjoint)", i, j));
          }
        }
      }
    }
    std::vector<int32_t> alts;
    for (size_t i = 0; i < flat.size(); ++i) {
      // Unmerged branches keep their $ref (and so recursion) intact.
      bool plain = rest.empty();
      PAGELLM_ASSIGN_OR_RETURN(int32_t e, Schema(plain ? branches[i] : flat[i], depth + 1));
      alts.push_back(e);
    }
    return g_.AddAlt(std::move(alts));
  }

  StatusOr<int32_t> Constants(const OrderedJson& s) {
    OrderedJson values = OrderedJson::array();
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) return InvalidArgumentError("enum must be an array");
      for (const OrderedJson& v : s["enum"]) {
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
      }
    }
    OrderedJson rest = Siblings(s, {"const", "enum", "type"});
    for (auto it = rest.begin(); it != rest.end(); ++it) {
      // Unknown keys (vendor extensions) validate nothing; known ones might exclude values.
      if (IsValidationKeyword(it.key())) return Refuse(fmt::format("{} together with enum/const", it.key()));
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      if (s["type"].is_string()) types.push_back(s["type"]);
      else for (const OrderedJson& t : s["type"]) types.push_back(t.is_string() ? t.get<std::string>() : "");
    }
    std::vector<int32_t> alts;
    std::set<std::string> seen;
    for (const OrderedJson& v : values) {
      if (!types.empty() && !ValueHasType(v, types)) continue;
      std::string text = v.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
      if (seen.insert(text).second) alts.push_back(g_.AddLiteral(text));
    }
    if (alts.empty()) return InvalidArgumentError("enum/const: no value satisfies the schema");
    return g_.AddAlt(std::move(alts));
  }

  static bool ValueHasType(const OrderedJson& v, const std::vector<std::string>& types) {
    for (const std::string& t : types) {
      if ((t == "string" && v.is_string()) || (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null()) ||
          (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
          (t == "number" && v.is_number()) ||
          (t == "integer" && (v.is_number_integer() || v.is_number_unsigned()))) {
        return true;
      }
    }
    return false;
  }

  static bool HasAny(const OrderedJson& s, const std::set<std::string>& keys) {
    for (const std::string& k : keys) {
      if (s.contains(k)) return true;
    }
    return false;
  }

  StatusOr<int32_t> Typed(const OrderedJson& s, int depth) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      if (s["type"].is_string()) {
        types.push_back(s["type"]);
      } else if (s["type"].is_array()) {
        for (const OrderedJson& t : s["type"]) types.push_back(t.is_string() ? t.get<std::string>() : "?");
      } else {
        return InvalidArgumentError("type must be a string or an array");
      }
    } else {
      // No type: only the types the keywords talk about (a sound restriction).
      if (HasAny(s, kObjectKeys)) types.push_back("object");
      if (HasAny(s, kArrayKeys)) types.push_back("array");
      if (HasAny(s, kStringKeys)) types.push_back("string");
      if (HasAny(s, kNumberKeys)) types.push_back("number");
      if (types.empty()) return pieces_.AnyValue();
    }
    std::vector<int32_t> alts;
    for (const std::string& t : types) {
      PAGELLM_ASSIGN_OR_RETURN(int32_t e, OneType(s, t, depth));
      alts.push_back(e);
    }
    if (alts.empty()) return InvalidArgumentError("type: empty list of types");
    return g_.AddAlt(std::move(alts));
  }

  StatusOr<int32_t> OneType(const OrderedJson& s, const std::string& t, int depth) {
    if (t == "string") return String(s);
    if (t == "integer") return NumberOf(s, /*integer=*/true);
    if (t == "number") return NumberOf(s, false);
    if (t == "boolean") return g_.AddAlt({g_.AddLiteral("true"), g_.AddLiteral("false")});
    if (t == "null") return g_.AddLiteral("null");
    if (t == "array") return Array(s, depth);
    if (t == "object") return Object(s, depth);
    return InvalidArgumentError(fmt::format("unknown type '{}'", t));
  }

  StatusOr<int32_t> String(const OrderedJson& s) {
    int32_t min = ToInt(s.value("minLength", OrderedJson(0)), 0);
    int32_t max = s.contains("maxLength") ? ToInt(s["maxLength"], -1) : -1;
    bool bounded = min > 0 || max >= 0;
    if (max >= 0 && min > max) return InvalidArgumentError("minLength > maxLength");
    if (max > 10000) return Refuse("maxLength above 10000");
    if (s.contains("pattern") || s.contains("format")) {
      if (bounded) return Refuse(s.contains("pattern") ? "pattern together with minLength/maxLength" : "format together with minLength/maxLength");
      if (s.contains("pattern") && s.contains("format")) return Refuse("pattern together with format");
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) return InvalidArgumentError("format must be a string");
      auto content = pieces_.Format(s["format"].get<std::string>());
      if (!content.ok()) return Refuse(fmt::format("format '{}'", s["format"].get<std::string>()));
      return g_.AddSeq({g_.AddLiteral("\""), *content, g_.AddLiteral("\"")});
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return InvalidArgumentError("pattern must be a string");
      RegexOptions opts;
      opts.search = true;
      opts.emit_class = [this](Grammar&, const std::vector<CodepointRange>& r) { return pieces_.EncodedClass(r); };
      auto body = CompileRegex(g_, s["pattern"].get<std::string>(), opts);
      if (!body.ok()) return InvalidArgumentError(fmt::format("pattern: {}", body.status().message()));
      return g_.AddSeq({g_.AddLiteral("\""), *body, g_.AddLiteral("\"")});
    }
    return pieces_.StringOf(pieces_.Char(), min, max);
  }

  StatusOr<int32_t> NumberOf(const OrderedJson& s, bool integer) {
    NumberBounds b;
    auto num = [&](const char* k) -> std::optional<double> {
      if (s.contains(k) && s[k].is_number()) return s[k].get<double>();
      return std::nullopt;
    };
    b.minimum = num("minimum");
    b.maximum = num("maximum");
    // Draft 4 spells exclusivity as booleans; later drafts as numbers.
    if (s.contains("exclusiveMinimum")) {
      if (s["exclusiveMinimum"].is_boolean()) b.exclusive_minimum = s["exclusiveMinimum"].get<bool>();
      else if (auto v = num("exclusiveMinimum"); v && (!b.minimum || *v >= *b.minimum)) b.minimum = v, b.exclusive_minimum = true;
    }
    if (s.contains("exclusiveMaximum")) {
      if (s["exclusiveMaximum"].is_boolean()) b.exclusive_maximum = s["exclusiveMaximum"].get<bool>();
      else if (auto v = num("exclusiveMaximum"); v && (!b.maximum || *v <= *b.maximum)) b.maximum = v, b.exclusive_maximum = true;
    }
    // Numeric formats (OpenAPI's, checked by ajv-formats): int32/int64 are integers,
    // int32 within 32 bits; float/double add nothing.
    std::string format = s.contains("format") && s["format"].is_string() ? s["format"].get<std::string>() : "";
    if (format == "int32") {
      b.minimum = std::max(b.minimum.value_or(-2147483648.0), -2147483648.0);
      b.maximum = std::min(b.maximum.value_or(2147483647.0), 2147483647.0);
    }
    if (format == "int32" || format == "int64") integer = true;
    return integer ? pieces_.Integer(b) : pieces_.Number(b);
  }

  StatusOr<int32_t> Array(const OrderedJson& s, int depth);
  StatusOr<int32_t> Object(const OrderedJson& s, int depth);
  StatusOr<int32_t> Properties(const std::vector<std::pair<std::string, int32_t>>& kvs, const std::vector<bool>& required);

  // A subschema as a rule of its own, so the NFA builder may call it instead of
  // copying it when it is large.
  StatusOr<int32_t> SubRule(const OrderedJson& s, int depth) {
    PAGELLM_ASSIGN_OR_RETURN(int32_t e, Schema(s, depth + 1));
    if (g_.expr(e).kind == ExprKind::kRef) return e;
    return g_.AddRef(g_.AddRule(g_.UniqueName("s"), e));
  }

  int32_t Comma() { return g_.AddSeq({pieces_.Ws(), g_.AddLiteral(","), pieces_.Ws()}); }

  const OrderedJson& root_;
  Grammar& g_;
  JsonPieces pieces_;
  std::map<std::string, int32_t> ref_rules_;
};


StatusOr<int32_t> SchemaCompiler::Array(const OrderedJson& s, int depth) {
  std::vector<OrderedJson> prefix;
  OrderedJson rest = true;
  if (s.contains("prefixItems") && s["prefixItems"].is_array()) {
    prefix.assign(s["prefixItems"].begin(), s["prefixItems"].end());
    rest = s.value("items", OrderedJson(true));
  } else if (s.contains("items") && s["items"].is_array()) {
    prefix.assign(s["items"].begin(), s["items"].end());
    rest = s.value("additionalItems", OrderedJson(true));
  } else {
    rest = s.value("items", OrderedJson(true));
  }
  int32_t n = static_cast<int32_t>(prefix.size());
  int32_t min = ToInt(s.value("minItems", OrderedJson(0)), 0);
  int32_t max = s.contains("maxItems") ? ToInt(s["maxItems"], -1) : -1;
  bool rest_ok = rest != OrderedJson(false);
  if (!rest_ok) max = max < 0 ? n : std::min(max, n);
  if (max >= 0 && min > max) return InvalidArgumentError("minItems > maxItems (or more items required than allowed)");
  if (std::max(min, max) > 1000) return Refuse("minItems/maxItems above 1000");
  int32_t open = g_.AddSeq({g_.AddLiteral("["), pieces_.Ws()});
  if (max == 0) return g_.AddSeq({open, g_.AddLiteral("]")});
  std::vector<int32_t> items;
  for (const OrderedJson& p : prefix) {
    PAGELLM_ASSIGN_OR_RETURN(int32_t e, SubRule(p, depth));
    items.push_back(e);
  }
  int32_t rest_expr = -1;
  if (rest_ok) {
    PAGELLM_ASSIGN_OR_RETURN(rest_expr, SubRule(rest, depth));
  }
  // tail(i): what follows once i items are out.
  int32_t tail;
  {
    int32_t lo = std::max(0, min - n);
    int32_t hi = max < 0 ? -1 : max - n;
    tail = (rest_ok && hi != 0) ? g_.AddRepeat(g_.AddSeq({Comma(), rest_expr}), lo, hi) : g_.AddEmpty();
  }
  for (int32_t i = n - 1; i >= 1; --i) {
    if (max >= 0 && i >= max) continue;
    int32_t item = g_.AddSeq({Comma(), items[i], tail});
    tail = i < min ? item : g_.AddOptional(item);
  }
  if (n == 0) {
    int32_t lo = std::max(0, min - 1);
    int32_t hi = max < 0 ? -1 : max - 1;
    tail = g_.AddRepeat(g_.AddSeq({Comma(), rest_expr}), lo, hi);
  }
  int32_t body = g_.AddSeq({n > 0 ? items[0] : rest_expr, tail, pieces_.Ws()});
  return g_.AddSeq({open, min > 0 ? body : g_.AddOptional(body), g_.AddLiteral("]")});
}

StatusOr<int32_t> SchemaCompiler::Object(const OrderedJson& s, int depth) {
  OrderedJson props = s.value("properties", OrderedJson::object());
  if (!props.is_object()) return InvalidArgumentError("properties must be an object");
  OrderedJson add = s.value("additionalProperties", OrderedJson(true));
  std::set<std::string> required;
  for (const OrderedJson& r : s.value("required", OrderedJson::array())) {
    if (r.is_string()) required.insert(r.get<std::string>());
  }
  for (const std::string& r : required) {
    if (props.contains(r)) continue;
    if (add == OrderedJson(false)) return InvalidArgumentError(fmt::format("required property '{}' is not allowed by additionalProperties", r));
    props[r] = add.is_object() ? add : OrderedJson::object();
  }
  int32_t num_required = static_cast<int32_t>(required.size());
  int32_t open = g_.AddSeq({g_.AddLiteral("{"), pieces_.Ws()});
  if (props.empty()) {
    if (s.contains("minProperties") || s.contains("maxProperties")) {
      if (add == OrderedJson(false) && ToInt(s.value("minProperties", OrderedJson(0)), 0) == 0) return g_.AddSeq({open, g_.AddLiteral("}")});
      return Refuse(s.contains("minProperties") ? "minProperties" : "maxProperties");
    }
    if (add == OrderedJson(false)) return g_.AddSeq({open, g_.AddLiteral("}")});
    PAGELLM_ASSIGN_OR_RETURN(int32_t value, SubRule(add, depth));
    int32_t kv = g_.AddSeq({pieces_.StringOf(pieces_.Char(), 0, -1), pieces_.Ws(), g_.AddLiteral(":"), pieces_.Ws(), value});
    int32_t body = g_.AddSeq({kv, g_.AddRepeat(g_.AddSeq({Comma(), kv}), 0, -1), pieces_.Ws()});
    return g_.AddSeq({open, g_.AddOptional(body), g_.AddLiteral("}")});
  }
  if (ToInt(s.value("minProperties", OrderedJson(0)), 0) > num_required) return Refuse("minProperties");
  if (s.contains("maxProperties") && ToInt(s["maxProperties"], 0) < static_cast<int32_t>(props.size())) return Refuse("maxProperties");
  std::vector<std::pair<std::string, int32_t>> kvs;
  std::vector<bool> req;
  for (auto it = props.begin(); it != props.end(); ++it) {
    PAGELLM_ASSIGN_OR_RETURN(int32_t value, SubRule(it.value(), depth));
    int32_t key = g_.AddLiteral(OrderedJson(it.key()).dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
    kvs.push_back({it.key(), g_.AddSeq({key, pieces_.Ws(), g_.AddLiteral(":"), pieces_.Ws(), value})});
    req.push_back(required.count(it.key()) > 0);
  }
  PAGELLM_ASSIGN_OR_RETURN(int32_t body, Properties(kvs, req));
  if (num_required > 0) return g_.AddSeq({open, body, pieces_.Ws(), g_.AddLiteral("}")});
  return g_.AddSeq({open, g_.AddOptional(g_.AddSeq({body, pieces_.Ws()})), g_.AddLiteral("}")});
}

// Properties in order, optional ones optional, commas only between present ones:
//   after(i) = for j >= i: ("," kv_j) or ("," kv_j)?       (something came before)
//   first(i) = kv_i after(i+1) | first(i+1) (if kv_i is optional)
// first(0) emits at least one property.
StatusOr<int32_t> SchemaCompiler::Properties(const std::vector<std::pair<std::string, int32_t>>& kvs,
                                             const std::vector<bool>& required) {
  int32_t n = static_cast<int32_t>(kvs.size());
  std::vector<int32_t> after(n + 1);
  after[n] = g_.AddEmpty();
  for (int32_t i = n - 1; i >= 0; --i) {
    int32_t item = g_.AddSeq({Comma(), kvs[i].second});
    int32_t e = g_.AddSeq({required[i] ? item : g_.AddOptional(item), after[i + 1]});
    after[i] = g_.AddRef(g_.AddRule(g_.UniqueName("props"), e));
  }
  int32_t first = -1;
  for (int32_t i = n - 1; i >= 0; --i) {
    int32_t here = g_.AddSeq({kvs[i].second, after[i + 1]});
    first = (required[i] || first < 0) ? here : g_.AddAlt({here, first});
  }
  return first;
}

}  // namespace

StatusOr<int32_t> AddJsonSchema(Grammar& g, const OrderedJson& schema, const JsonWhitespace& ws) {
  return SchemaCompiler(g, schema, ws).Run();
}

StatusOr<Grammar> JsonSchemaToGrammar(const OrderedJson& schema, const JsonWhitespace& ws) {
  Grammar g;
  PAGELLM_ASSIGN_OR_RETURN(int32_t e, AddJsonSchema(g, schema, ws));
  g.SetRoot(g.AddRule(g.UniqueName("root"), e));
  PAGELLM_RETURN_IF_ERROR(g.Validate());
  return g;
}

StatusOr<Grammar> JsonObjectGrammar(const JsonWhitespace& ws) {
  return JsonSchemaToGrammar(OrderedJson{{"type", "object"}}, ws);
}

}  // namespace pagellm::grammar
