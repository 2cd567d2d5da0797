// Python operator semantics for template values: + - * / // % ** ~, comparisons, `in`.
#include <cmath>

#include <fmt/format.h>

#include "chat/evaluator.h"
#include "chat/text_util.h"

namespace pagellm::chat {
namespace {

[[noreturn]] void Unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) ThrowTemplateError(fmt::format("'{}' is undefined", a.undefined_name()));
  if (b.is_undefined()) ThrowTemplateError(fmt::format("'{}' is undefined", b.undefined_name()));
  ThrowTemplateError(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.TypeName(), b.TypeName()));
}

Value Repeat(const Value& seq, int64_t times) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value::String(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return Value::List(std::move(out));
}

Value Arithmetic(const std::string& op, const Value& a, const Value& b) {
  bool floats = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.as_double() == 0) ThrowTemplateError("division by zero");
    return Value::Float(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0) ThrowTemplateError("integer division or modulo by zero");
    if (floats) {
      double q = std::floor(a.as_double() / b.as_double());
      return Value::Float(op == "//" ? q : a.as_double() - q * b.as_double());
    }
    int64_t x = a.as_int(), y = b.as_int();
    int64_t q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));  // floor division
    return Value::Int(op == "//" ? q : x - q * y);
  }
  if (op == "**") {
    if (!floats && b.as_int() >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < b.as_int(); ++i) r *= a.as_int();
      return Value::Int(r);
    }
    return Value::Float(std::pow(a.as_double(), b.as_double()));
  }
  if (floats) {
    double x = a.as_double(), y = b.as_double();
    return Value::Float(op == "+" ? x + y : op == "-" ? x - y : x * y);
  }
  int64_t x = a.as_int(), y = b.as_int();
  return Value::Int(op == "+" ? x + y : op == "-" ? x - y : x * y);
}

bool Less(const Value& a, const Value& b, const std::string& op) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order == code point order
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.list();
    const ValueList& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!(x[i] == y[i])) return Less(x[i], y[i], op);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined()) Unsupported(op, a, b);
  ThrowTemplateError(fmt::format("'{}' not supported between instances of '{}' and '{}'", op, a.TypeName(), b.TypeName()));
}

}  // namespace

std::vector<Value> Iterate(const Value& value) {
  switch (value.kind()) {
    case ValueKind::kList: return value.list();
    case ValueKind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, v] : value.dict()) keys.push_back(Value::String(k));
      return keys;
    }
    case ValueKind::kString: {
      std::vector<size_t> off = Utf8Offsets(value.str());
      std::vector<Value> chars;
      for (size_t i = 0; i + 1 < off.size(); ++i) chars.push_back(Value::String(value.str().substr(off[i], off[i + 1] - off[i])));
      return chars;
    }
    case ValueKind::kUndefined: return {};  // Jinja's Undefined iterates as empty
    default: ThrowTemplateError(fmt::format("'{}' object is not iterable", value.TypeName()));
  }
}

bool Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case ValueKind::kString:
      if (!item.is_string()) {
        ThrowTemplateError(fmt::format("'in <string>' requires string as left operand, not {}", item.TypeName()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case ValueKind::kList:
      for (const Value& v : container.list()) {
        if (v == item) return true;
      }
      return false;
    case ValueKind::kDict: return item.is_string() && container.Find(item.str()) != nullptr;
    case ValueKind::kUndefined: return false;
    default: ThrowTemplateError(fmt::format("argument of type '{}' is not iterable", container.TypeName()));
  }
}

Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value::Bool(a == b);
  if (op == "!=") return Value::Bool(!(a == b));
  if (op == "~") return Value::String(a.ToString() + b.ToString());
  if (op == "in") return Value::Bool(Contains(b, a));
  if (op == "not in") return Value::Bool(!Contains(b, a));
  if (op == "<") return Value::Bool(Less(a, b, op));
  if (op == ">") return Value::Bool(Less(b, a, op));
  if (op == "<=") return Value::Bool(!Less(b, a, op));
  if (op == ">=") return Value::Bool(!Less(a, b, op));
  if (a.is_number() && b.is_number()) return Arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::String(a.str() + b.str());
    if (a.is_list() && b.is_list()) {
      ValueList out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value::List(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return Repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return Repeat(b, a.as_int());
  }
  Unsupported(op, a, b);
}

}  // namespace pagellm::chat
