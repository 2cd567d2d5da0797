// Jinja2 3.1 filters, plus transformers' tojson (json.dumps with ensure_ascii=False).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include <fmt/format.h>

#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/text_util.h"

namespace pagellm::chat {

std::string ArgString(const std::optional<Value>& v, const char* what, std::string fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_string()) ThrowTemplateError(fmt::format("{} must be a string, got {}", what, v->TypeName()));
  return v->str();
}

int64_t ArgInt(const std::optional<Value>& v, const char* what, int64_t fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) ThrowTemplateError(fmt::format("{} must be an integer, got {}", what, v->TypeName()));
  return v->as_int();
}

bool ArgBool(const std::optional<Value>& v, bool fallback) { return v ? v->Truthy() : fallback; }

namespace {

// "a.b.0" attribute paths of sort/map/selectattr/unique/join.
Value Attribute(Evaluator& ev, const Value& item, const Value& path) {
  if (path.is_int()) return ev.GetItem(item, path);
  Value v = item;
  for (const std::string& part : PySplit(path.str(), std::string("."), -1)) {
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    v = (v.is_list() && numeric) ? ev.GetItem(v, Value::Int(std::stoll(part))) : ev.GetItem(v, Value::String(part));
    if (v.is_undefined()) break;
  }
  return v;
}

std::optional<Value> AttrArg(CallArgs& args, size_t index) {
  std::optional<Value> attr = args.Take(index, "attribute");
  if (attr && attr->is_none()) return std::nullopt;
  return attr;
}

// Sort key: strings compare case-insensitively unless case_sensitive.
Value SortKey(Evaluator& ev, const Value& item, const std::optional<Value>& attr, bool case_sensitive) {
  Value key = attr ? Attribute(ev, item, *attr) : item;
  if (!case_sensitive && key.is_string()) return Value::String(AsciiLower(key.str()));
  return key;
}

Value FTrim(Evaluator&, const Value& v, CallArgs& a) {
  std::optional<Value> chars = a.Take(0, "chars");
  std::optional<std::string> c;
  if (chars && !chars->is_none()) c = ArgString(chars, "trim chars", "");
  return Value::String(PyStrip(v.ToString(), c, true, true));
}

Value FLength(Evaluator&, const Value& v, CallArgs&) {
  switch (v.kind()) {
    case ValueKind::kString: return Value::Int(static_cast<int64_t>(Utf8Length(v.str())));
    case ValueKind::kList: return Value::Int(static_cast<int64_t>(v.list().size()));
    case ValueKind::kDict: return Value::Int(static_cast<int64_t>(v.dict().size()));
    case ValueKind::kUndefined: return Value::Int(0);
    default: ThrowTemplateError(fmt::format("object of type '{}' has no len()", v.TypeName()));
  }
}

Value FFirst(Evaluator&, const Value& v, CallArgs&) {
  std::vector<Value> items = Iterate(v);
  return items.empty() ? Value::Undefined("first") : items.front();
}

Value FLast(Evaluator&, const Value& v, CallArgs&) {
  std::vector<Value> items = Iterate(v);
  return items.empty() ? Value::Undefined("last") : items.back();
}

Value FLower(Evaluator&, const Value& v, CallArgs&) { return Value::String(AsciiLower(v.ToString())); }
Value FUpper(Evaluator&, const Value& v, CallArgs&) { return Value::String(AsciiUpper(v.ToString())); }
Value FTitle(Evaluator&, const Value& v, CallArgs&) { return Value::String(JinjaTitle(v.ToString())); }
Value FCapitalize(Evaluator&, const Value& v, CallArgs&) { return Value::String(PyCapitalize(v.ToString())); }
Value FString(Evaluator&, const Value& v, CallArgs&) { return Value::String(v.ToString()); }
Value FSafe(Evaluator&, const Value& v, CallArgs&) { return v; }

Value FReplace(Evaluator&, const Value& v, CallArgs& a) {
  std::optional<Value> old_v = a.Take(0, "old"), new_v = a.Take(1, "new");
  if (!old_v || !new_v) ThrowTemplateError("replace needs 'old' and 'new' arguments");
  return Value::String(PyReplace(v.ToString(), old_v->ToString(), new_v->ToString(), ArgInt(a.Take(2, "count"), "count", -1)));
}

Value FJoin(Evaluator& ev, const Value& v, CallArgs& a) {
  std::string sep = ArgString(a.Take(0, "d"), "join separator", "");
  std::optional<Value> attr = AttrArg(a, 1);
  std::string out;
  bool first = true;
  for (const Value& item : Iterate(v)) {
    out += (first ? "" : sep) + (attr ? Attribute(ev, item, *attr) : item).ToString();
    first = false;
  }
  return Value::String(std::move(out));
}

Value FDefault(Evaluator&, const Value& v, CallArgs& a) {
  Value fallback = a.Take(0, "default_value").value_or(Value::String(""));
  bool boolean = ArgBool(a.Take(1, "boolean"), false);
  return (v.is_undefined() || (boolean && !v.Truthy())) ? fallback : v;
}

Value FItems(Evaluator&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::List();
  if (!v.is_dict()) ThrowTemplateError(fmt::format("can only get item pairs from a mapping, got {}", v.TypeName()));
  ValueList out;
  for (const auto& [k, val] : v.dict()) out.push_back(Value::Tuple({Value::String(k), val}));
  return Value::List(std::move(out));
}

Value FKeys(Evaluator&, const Value& v, CallArgs&) {
  if (!v.is_dict()) ThrowTemplateError(fmt::format("keys needs a mapping, got {}", v.TypeName()));
  return Value::List(Iterate(v));
}

Value FValues(Evaluator&, const Value& v, CallArgs&) {
  if (!v.is_dict()) ThrowTemplateError(fmt::format("values needs a mapping, got {}", v.TypeName()));
  ValueList out;
  for (const auto& [k, val] : v.dict()) out.push_back(val);
  return Value::List(std::move(out));
}

Value FList(Evaluator&, const Value& v, CallArgs&) { return Value::List(Iterate(v)); }

std::optional<double> ParseNumber(const std::string& text, bool integer) {
  std::string s = PyStrip(text, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  if (integer) {
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (*end == '\0') return static_cast<double>(i);
  }
  double d = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return d;
}

Value FInt(Evaluator&, const Value& v, CallArgs& a) {
  Value fallback = a.Take(0, "default").value_or(Value::Int(0));
  if (v.is_number()) return Value::Int(v.is_float() ? static_cast<int64_t>(std::trunc(v.as_double())) : v.as_int());
  if (v.is_string()) {
    std::optional<double> d = ParseNumber(v.str(), true);
    if (d && std::isfinite(*d)) return Value::Int(static_cast<int64_t>(std::trunc(*d)));
  }
  return fallback;
}

Value FFloat(Evaluator&, const Value& v, CallArgs& a) {
  Value fallback = a.Take(0, "default").value_or(Value::Float(0.0));
  if (v.is_number()) return Value::Float(v.as_double());
  if (v.is_string()) {
    if (std::optional<double> d = ParseNumber(v.str(), false)) return Value::Float(*d);
  }
  return fallback;
}

Value FAbs(Evaluator&, const Value& v, CallArgs&) {
  if (!v.is_number()) ThrowTemplateError(fmt::format("bad operand type for abs(): '{}'", v.TypeName()));
  return v.is_float() ? Value::Float(std::fabs(v.as_double())) : Value::Int(std::llabs(v.as_int()));
}

Value FRound(Evaluator&, const Value& v, CallArgs& a) {
  if (!v.is_number()) ThrowTemplateError(fmt::format("round needs a number, got {}", v.TypeName()));
  int64_t precision = ArgInt(a.Take(0, "precision"), "precision", 0);
  std::string method = ArgString(a.Take(1, "method"), "method", "common");
  double x = v.as_double(), scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::Float(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::Float(std::floor(x * scale) / scale);
  if (method != "common") ThrowTemplateError("round method must be 'common', 'ceil' or 'floor'");
  // printf rounds the exact binary value half-to-even, as Python's round() does.
  return Value::Float(std::stod(fmt::format("{:.{}f}", x, std::max<int64_t>(precision, 0))));
}

Value FEscape(Evaluator&, const Value& v, CallArgs&) {
  std::string out;
  for (char c : v.ToString()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::String(std::move(out));
}

Value FIndent(Evaluator&, const Value& v, CallArgs& a) {
  std::optional<Value> width = a.Take(0, "width");
  std::string indention = (width && width->is_string()) ? width->str() : std::string(ArgInt(width, "width", 4), ' ');
  bool first = ArgBool(a.Take(1, "first"), false), blank = ArgBool(a.Take(2, "blank"), false);
  std::vector<std::string> lines = PySplit(v.ToString() + "\n", std::string("\n"), -1);
  lines.pop_back();  // str.splitlines() drops the piece after the final newline
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    bool indent = i > 0 && (blank || !lines[i].empty());
    out += (indent ? indention : "") + lines[i];
  }
  return Value::String(first ? indention + out : out);
}

Value FMap(Evaluator& ev, const Value& v, CallArgs& a) {
  ValueList out;
  if (std::optional<Value> attr = AttrArg(a, 99)) {
    std::optional<Value> fallback = a.Take(99, "default");
    for (const Value& item : Iterate(v)) {
      Value got = Attribute(ev, item, *attr);
      out.push_back(got.is_undefined() && fallback ? *fallback : got);
    }
    return Value::List(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string()) ThrowTemplateError("map needs a filter name or attribute=");
  std::string filter = a.positional[0].str();
  CallArgs rest{ValueList(a.positional.begin() + 1, a.positional.end()), a.keyword, a.line};
  for (const Value& item : Iterate(v)) {
    CallArgs copy = rest;
    out.push_back(ev.ApplyFilter(filter, item, copy));
  }
  return Value::List(std::move(out));
}

// select/reject/selectattr/rejectattr share this: keep items whose test result == keep.
Value SelectImpl(Evaluator& ev, const Value& v, CallArgs& a, bool by_attr, bool keep) {
  size_t next = 0;
  std::optional<Value> attr;
  if (by_attr) {
    if (a.positional.empty()) ThrowTemplateError("selectattr/rejectattr need an attribute name");
    attr = a.positional[next++];
  }
  std::optional<std::string> test;
  if (next < a.positional.size()) test = ArgString(a.positional[next++], "test name", "");
  CallArgs test_args{ValueList(a.positional.begin() + std::min(next, a.positional.size()), a.positional.end()),
                     a.keyword, a.line};
  ValueList out;
  for (const Value& item : Iterate(v)) {
    Value subject = attr ? Attribute(ev, item, *attr) : item;
    CallArgs copy = test_args;
    bool result = test ? ev.ApplyTest(*test, subject, copy) : subject.Truthy();
    if (result == keep) out.push_back(item);
  }
  return Value::List(std::move(out));
}

Value FSelect(Evaluator& ev, const Value& v, CallArgs& a) { return SelectImpl(ev, v, a, false, true); }
Value FReject(Evaluator& ev, const Value& v, CallArgs& a) { return SelectImpl(ev, v, a, false, false); }
Value FSelectAttr(Evaluator& ev, const Value& v, CallArgs& a) { return SelectImpl(ev, v, a, true, true); }
Value FRejectAttr(Evaluator& ev, const Value& v, CallArgs& a) { return SelectImpl(ev, v, a, true, false); }

Value FUnique(Evaluator& ev, const Value& v, CallArgs& a) {
  bool case_sensitive = ArgBool(a.Take(0, "case_sensitive"), false);
  std::optional<Value> attr = AttrArg(a, 1);
  ValueList out, seen;
  for (const Value& item : Iterate(v)) {
    Value key = SortKey(ev, item, attr, case_sensitive);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::List(std::move(out));
}

Value FSort(Evaluator& ev, const Value& v, CallArgs& a) {
  bool reverse = ArgBool(a.Take(0, "reverse"), false);
  bool case_sensitive = ArgBool(a.Take(1, "case_sensitive"), false);
  std::optional<Value> attr = AttrArg(a, 2);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : Iterate(v)) keyed.emplace_back(SortKey(ev, item, attr, case_sensitive), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return BinaryOp(reverse ? ">" : "<", x.first, y.first).as_bool();
  });
  ValueList out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::List(std::move(out));
}

Value FDictSort(Evaluator& ev, const Value& v, CallArgs& a) {
  bool case_sensitive = ArgBool(a.Take(0, "case_sensitive"), false);
  std::string by = ArgString(a.Take(1, "by"), "by", "key");
  bool reverse = ArgBool(a.Take(2, "reverse"), false);
  CallArgs none;
  Value pairs = FItems(ev, v, none);
  CallArgs sort_args{{Value::Bool(reverse), Value::Bool(case_sensitive), Value::Int(by == "value" ? 1 : 0)}, {}, 0};
  return FSort(ev, pairs, sort_args);
}

Value FReverse(Evaluator&, const Value& v, CallArgs&) {
  std::vector<Value> items = Iterate(v);
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return Value::List(std::move(items));
  std::string out;
  for (const Value& c : items) out += c.str();
  return Value::String(std::move(out));
}

Value FBatch(Evaluator&, const Value& v, CallArgs& a) {
  int64_t size = ArgInt(a.Take(0, "linecount"), "linecount", 1);
  if (size <= 0) ThrowTemplateError("batch size must be positive");
  std::optional<Value> fill = a.Take(1, "fill_with");
  ValueList out, current;
  for (const Value& item : Iterate(v)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == size) out.push_back(Value::List(std::exchange(current, {})));
  }
  if (!current.empty()) {
    while (fill && !fill->is_none() && static_cast<int64_t>(current.size()) < size) current.push_back(*fill);
    out.push_back(Value::List(std::move(current)));
  }
  return Value::List(std::move(out));
}

Value FSum(Evaluator& ev, const Value& v, CallArgs& a) {
  std::optional<Value> attr = AttrArg(a, 0);
  Value total = a.Take(1, "start").value_or(Value::Int(0));
  for (const Value& item : Iterate(v)) total = BinaryOp("+", total, attr ? Attribute(ev, item, *attr) : item);
  return total;
}

Value FToJson(Evaluator&, const Value& v, CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonStyle style;
  style.ensure_ascii = ArgBool(a.Take(0, "ensure_ascii"), false);
  if (std::optional<Value> indent = a.Take(1, "indent"); indent && !indent->is_none()) {
    style.indent = static_cast<int>(ArgInt(indent, "indent", 0));
    style.item_separator = ",";
  }
  if (std::optional<Value> sep = a.Take(2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->list().size() != 2 || !sep->list()[0].is_string() || !sep->list()[1].is_string()) {
      ThrowTemplateError("tojson separators must be a pair of strings");
    }
    style.item_separator = sep->list()[0].str();
    style.key_separator = sep->list()[1].str();
  }
  style.sort_keys = ArgBool(a.Take(3, "sort_keys"), false);
  if (v.is_undefined()) ThrowTemplateError(fmt::format("'{}' is undefined (tojson)", v.undefined_name()));
  std::optional<std::string> json = v.ToJson(style);
  if (!json) ThrowTemplateError(fmt::format("object of type '{}' is not JSON serializable", v.TypeName()));
  return Value::String(std::move(*json));
}

Value FAttr(Evaluator& ev, const Value& v, CallArgs& a) {
  return ev.GetAttr(v, ArgString(a.Take(0, "name"), "attribute name", ""));
}

Value FWordCount(Evaluator&, const Value& v, CallArgs&) {
  return Value::Int(static_cast<int64_t>(PySplit(v.ToString(), std::nullopt, -1).size()));
}

}  // namespace

const FilterFn* FindFilter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"trim", FTrim},         {"length", FLength},         {"count", FLength},       {"first", FFirst},
      {"last", FLast},         {"lower", FLower},           {"upper", FUpper},        {"title", FTitle},
      {"capitalize", FCapitalize}, {"replace", FReplace},   {"join", FJoin},          {"default", FDefault},
      {"d", FDefault},         {"items", FItems},           {"keys", FKeys},          {"values", FValues},
      {"list", FList},         {"string", FString},         {"int", FInt},            {"float", FFloat},
      {"abs", FAbs},           {"round", FRound},           {"safe", FSafe},          {"e", FEscape},
      {"escape", FEscape},     {"forceescape", FEscape},    {"indent", FIndent},      {"map", FMap},
      {"select", FSelect},     {"reject", FReject},         {"selectattr", FSelectAttr},
      {"rejectattr", FRejectAttr}, {"unique", FUnique},     {"sort", FSort},          {"dictsort", FDictSort},
      {"reverse", FReverse},   {"batch", FBatch},           {"sum", FSum},            {"tojson", FToJson},
      {"attr", FAttr},         {"wordcount", FWordCount},
  };
  auto it = kFilters.find(name);
  return it == kFilters.end() ? nullptr : &it->second;
}

}  // namespace pagellm::chat
