// Python str/dict methods callable from templates, and the global functions.
#include <ctime>

#include <fmt/format.h>

#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/text_util.h"

namespace pagellm::chat {
namespace {

std::optional<std::string> OptChars(CallArgs& a) {
  std::optional<Value> c = a.Take(0, "chars");
  if (!c || c->is_none()) return std::nullopt;
  return ArgString(c, "strip chars", "");
}

bool AffixMatch(const std::string& s, CallArgs& a, bool prefix) {
  std::optional<Value> arg = a.Take(0, "prefix");
  if (!arg) ThrowTemplateError(fmt::format("{}() takes at least 1 argument", prefix ? "startswith" : "endswith"));
  std::vector<Value> options = arg->is_list() ? arg->list() : std::vector<Value>{*arg};
  for (const Value& o : options) {
    if (!o.is_string()) ThrowTemplateError("startswith/endswith arguments must be strings");
    const std::string& p = o.str();
    if (p.size() <= s.size() && (prefix ? s.compare(0, p.size(), p) : s.compare(s.size() - p.size(), p.size(), p)) == 0) {
      return true;
    }
  }
  return false;
}

int64_t Find(const std::string& s, CallArgs& a, bool reverse) {
  std::string sub = ArgString(a.Take(0, "sub"), "find argument", "");
  size_t hit = reverse ? s.rfind(sub) : s.find(sub);
  if (hit == std::string::npos) return -1;
  return static_cast<int64_t>(Utf8Length(std::string_view(s).substr(0, hit)));
}

int64_t CountOf(const std::string& s, CallArgs& a) {
  std::string sub = ArgString(a.Take(0, "sub"), "count argument", "");
  if (sub.empty()) return static_cast<int64_t>(Utf8Length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::optional<Value> StringMethod(const std::string& s, const std::string& name, CallArgs& a) {
  if (name == "strip") return Value::String(PyStrip(s, OptChars(a), true, true));
  if (name == "lstrip") return Value::String(PyStrip(s, OptChars(a), true, false));
  if (name == "rstrip") return Value::String(PyStrip(s, OptChars(a), false, true));
  if (name == "startswith") return Value::Bool(AffixMatch(s, a, true));
  if (name == "endswith") return Value::Bool(AffixMatch(s, a, false));
  if (name == "split") {
    std::optional<Value> sep = a.Take(0, "sep");
    std::optional<std::string> sep_str;
    if (sep && !sep->is_none()) sep_str = ArgString(sep, "split separator", "");
    if (sep_str && sep_str->empty()) ThrowTemplateError("empty separator");
    ValueList out;
    for (std::string& part : PySplit(s, sep_str, ArgInt(a.Take(1, "maxsplit"), "maxsplit", -1))) {
      out.push_back(Value::String(std::move(part)));
    }
    return Value::List(std::move(out));
  }
  if (name == "replace") {
    std::string old_text = ArgString(a.Take(0, "old"), "replace old", "");
    std::string new_text = ArgString(a.Take(1, "new"), "replace new", "");
    return Value::String(PyReplace(s, old_text, new_text, ArgInt(a.Take(2, "count"), "count", -1)));
  }
  if (name == "upper") return Value::String(AsciiUpper(s));
  if (name == "lower") return Value::String(AsciiLower(s));
  if (name == "title") return Value::String(PyTitle(s));
  if (name == "capitalize") return Value::String(PyCapitalize(s));
  if (name == "find") return Value::Int(Find(s, a, false));
  if (name == "rfind") return Value::Int(Find(s, a, true));
  if (name == "count") return Value::Int(CountOf(s, a));
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& item : Iterate(a.Take(0, "iterable").value_or(Value::List()))) {
      if (!item.is_string()) ThrowTemplateError(fmt::format("join expected str items, got {}", item.TypeName()));
      out += (first ? "" : s) + item.str();
      first = false;
    }
    return Value::String(std::move(out));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    if (s.empty()) return Value::Bool(false);
    for (unsigned char c : s) {
      bool ok = name == "isdigit" ? std::isdigit(c) : name == "isalpha" ? std::isalpha(c)
                : name == "isspace" ? std::isspace(c) : std::isalnum(c);
      if (!ok) return Value::Bool(false);
    }
    return Value::Bool(true);
  }
  return std::nullopt;
}

bool IsStringMethod(const std::string& name) {
  static const char* kNames[] = {"strip", "lstrip", "rstrip", "startswith", "endswith", "split", "replace",
                                 "upper", "lower", "title", "capitalize", "find", "rfind", "count", "join",
                                 "isdigit", "isalpha", "isspace", "isalnum"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

Value DictMethod(const Value& dict, const std::string& name, CallArgs& a) {
  if (name == "get") {
    std::optional<Value> key = a.Take(0, "key");
    if (!key) ThrowTemplateError("get() takes at least 1 argument");
    const Value* v = key->is_string() ? dict.Find(key->str()) : nullptr;
    return v ? *v : a.Take(1, "default").value_or(Value::None());
  }
  ValueList out;
  for (const auto& [k, v] : dict.dict()) {
    if (name == "items") out.push_back(Value::Tuple({Value::String(k), v}));
    if (name == "keys") out.push_back(Value::String(k));
    if (name == "values") out.push_back(v);
  }
  return Value::List(std::move(out));
}

}  // namespace

std::optional<Value> GetMethod(const Value& object, const std::string& name) {
  if (object.is_string() && IsStringMethod(name)) {
    std::string s = object.str();
    return Value::Function(name, [s, name](Evaluator&, CallArgs& a) { return *StringMethod(s, name, a); });
  }
  if (object.is_dict() && (name == "get" || name == "items" || name == "keys" || name == "values")) {
    return Value::Function(name, [object, name](Evaluator&, CallArgs& a) { return DictMethod(object, name, a); });
  }
  return std::nullopt;
}

namespace {

Value Range(Evaluator&, CallArgs& a) {
  int64_t start = 0, stop = 0, step = 1;
  auto num = [&](size_t i) { return ArgInt(a.positional[i], "range argument", 0); };
  if (a.positional.size() == 1) stop = num(0);
  else if (a.positional.size() >= 2) start = num(0), stop = num(1);
  if (a.positional.size() >= 3) step = num(2);
  if (a.positional.empty() || a.positional.size() > 3) ThrowTemplateError("range expects 1 to 3 integer arguments");
  if (step == 0) ThrowTemplateError("range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) ThrowTemplateError("range too big");  // Jinja's sandbox MAX_RANGE
    out.push_back(Value::Int(i));
  }
  return Value::List(std::move(out));
}

Value Namespace(Evaluator&, CallArgs& a) {
  ValueDict items;
  if (!a.positional.empty()) {
    if (!a.positional[0].is_dict()) ThrowTemplateError("namespace() positional argument must be a dict");
    items = a.positional[0].dict();
  }
  Value ns = Value::Namespace(std::move(items));
  for (const auto& [k, v] : a.keyword) ns.Set(k, v);
  return ns;
}

Value Dict(Evaluator& ev, CallArgs& a) {
  Value d = Namespace(ev, a);
  return Value::Dict(d.dict());
}

Value RaiseException(Evaluator&, CallArgs& a) {
  std::string message = a.positional.empty() ? "raise_exception() called" : a.positional[0].ToString();
  throw TemplateError{std::move(message), true};
}

Value StrftimeNow(Evaluator&, CallArgs& a) {
  std::string format = ArgString(a.Take(0, "format"), "strftime_now format", "");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[256];
  size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &local);
  return Value::String(std::string(buf, n));
}

}  // namespace

ValueDict MakeGlobalFunctions() {
  return {
      {"range", Value::Function("range", Range)},
      {"namespace", Value::Function("namespace", Namespace)},
      {"dict", Value::Function("dict", Dict)},
      {"raise_exception", Value::Function("raise_exception", RaiseException)},
      {"strftime_now", Value::Function("strftime_now", StrftimeNow)},
  };
}

}  // namespace pagellm::chat
