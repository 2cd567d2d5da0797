// Value: the dynamically typed value of the chat-template interpreter.
//
// Chat templates are Jinja (Python) programs, so values follow Python semantics:
// lists and dicts are reference types (a `namespace()` mutated inside a loop is seen
// outside it), dicts keep insertion order, and rendering uses Python's str()/repr()
// ("None", "True", "[1, 'a']").
//
//   Value v = Value::FromJson(OrderedJson::parse(R"({"a": [1, 2.5, null]})"));
//   v.GetAttr("a").Index(1).ToString();   // "2.5"
//   v.ToJson(JsonStyle{});                 // {"a": [1, 2.5, null]}  (json.dumps default)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"

namespace pagellm::chat {

class Value;
struct CallArgs;
class Evaluator;

using ValueList = std::vector<Value>;
// Insertion-ordered dict; chat-template dicts are small, so lookup is a linear scan.
using ValueDict = std::vector<std::pair<std::string, Value>>;
// A builtin function or a macro. `self` is the evaluator running the call.
using NativeFunction = std::function<Value(Evaluator& self, CallArgs& args)>;

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction };

// Options of tojson, as transformers passes them to json.dumps.
struct JsonStyle {
  std::optional<int> indent;         // None: one line
  std::string item_separator = ", ";  // json.dumps uses "," when indent is set
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

class Value {
 public:
  Value() = default;  // undefined
  static Value Undefined(std::string name = "") {
    Value v;
    v.str_ = std::make_shared<std::string>(std::move(name));
    return v;
  }
  static Value None() { return Value(ValueKind::kNone); }
  static Value Bool(bool b) { Value v(ValueKind::kBool); v.int_ = b; return v; }
  static Value Int(int64_t i) { Value v(ValueKind::kInt); v.int_ = i; return v; }
  static Value Float(double d) { Value v(ValueKind::kFloat); v.float_ = d; return v; }
  static Value String(std::string s) {
    Value v(ValueKind::kString);
    v.str_ = std::make_shared<std::string>(std::move(s));
    return v;
  }
  static Value List(ValueList items = {});
  // A list that prints as a Python tuple: ('a', 1). Behaves as a list otherwise.
  static Value Tuple(ValueList items);
  static Value Dict(ValueDict items = {});
  static Value Namespace(ValueDict items = {});
  static Value Function(std::string name, NativeFunction fn);
  static Value FromJson(const OrderedJson& json);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_bool() const { return kind_ == ValueKind::kBool; }
  bool is_int() const { return kind_ == ValueKind::kInt; }
  bool is_float() const { return kind_ == ValueKind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_list() const { return kind_ == ValueKind::kList; }
  bool is_dict() const { return kind_ == ValueKind::kDict; }
  bool is_namespace() const { return kind_ == ValueKind::kNamespace; }
  bool is_function() const { return kind_ == ValueKind::kFunction; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // also for bool
  double as_double() const { return is_float() ? float_ : static_cast<double>(int_); }
  const std::string& str() const { return *str_; }  // precondition: is_string()
  // The name an undefined value came from ("x" for `x.y`), for error messages.
  std::string undefined_name() const { return str_ ? *str_ : ""; }
  // Shared storage: mutations are visible through every copy (Python reference semantics).
  ValueList& list() const { return *list_; }
  ValueDict& dict() const { return *dict_; }  // dict or namespace
  const std::string& function_name() const { return fn_->first; }
  const NativeFunction& function() const { return fn_->second; }

  // Dict/namespace lookup; nullptr if absent.
  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value value) const;  // dict or namespace

  bool Truthy() const;
  // Python str(): what {{ value }} prints.
  std::string ToString() const;
  // Python repr(): how values print inside containers.
  std::string Repr() const;
  // json.dumps(value, ensure_ascii=False, ...). Fails (nullopt) on functions.
  std::optional<std::string> ToJson(const JsonStyle& style, int depth = 0) const;
  // Python type name for error messages: "str", "list", "dict", "undefined", ...
  std::string TypeName() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  explicit Value(ValueKind kind) : kind_(kind) {}
  ValueKind kind_ = ValueKind::kUndefined;
  bool tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  // NOTE: shared_ptr because template values really are shared: Python lists, dicts and
  // namespaces are references, and `ns.x = ...` must be seen by every holder.
  std::shared_ptr<std::string> str_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<std::pair<std::string, NativeFunction>> fn_;
};

// Arguments of a call: positional then keyword, in source order.
struct CallArgs {
  ValueList positional;
  ValueDict keyword;
  int line = 0;
  // Takes argument `index` or keyword `name`; nullopt if neither was given.
  std::optional<Value> Take(size_t index, std::string_view name);
};

// Python float repr (shortest round-trip): 1.0, 0.1, 1e+20, inf, nan.
std::string FormatPythonFloat(double d);
// JSON string literal with json.dumps escaping.
std::string JsonQuote(const std::string& s, bool ensure_ascii);

}  // namespace pagellm::chat
