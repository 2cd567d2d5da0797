// Jinja2 3.1 tests (`x is defined`, `n is divisibleby 3`, ...).
#include <unordered_map>

#include <fmt/format.h>

#include "chat/builtins.h"
#include "chat/evaluator.h"

namespace pagellm::chat {
namespace {

Value Arg(CallArgs& a, const char* name) {
  std::optional<Value> v = a.Take(0, name);
  if (!v) ThrowTemplateError(fmt::format("test needs an argument '{}'", name));
  return *v;
}

int64_t IntOperand(const Value& v, const char* test) {
  if (!v.is_int() && !v.is_bool()) ThrowTemplateError(fmt::format("'{}' test needs an integer, got {}", test, v.TypeName()));
  return v.as_int();
}

bool TDefined(Evaluator&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool TUndefined(Evaluator&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool TNone(Evaluator&, const Value& v, CallArgs&) { return v.is_none(); }
bool TBoolean(Evaluator&, const Value& v, CallArgs&) { return v.is_bool(); }
bool TTrue(Evaluator&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool TFalse(Evaluator&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool TInteger(Evaluator&, const Value& v, CallArgs&) { return v.is_int(); }
bool TFloat(Evaluator&, const Value& v, CallArgs&) { return v.is_float(); }
bool TNumber(Evaluator&, const Value& v, CallArgs&) { return v.is_number(); }  // Python: bool is a Number
bool TString(Evaluator&, const Value& v, CallArgs&) { return v.is_string(); }
bool TMapping(Evaluator&, const Value& v, CallArgs&) { return v.is_dict(); }
bool TSequence(Evaluator&, const Value& v, CallArgs&) { return v.is_string() || v.is_list() || v.is_dict(); }
bool TIterable(Evaluator&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();  // Undefined iterates as empty
}
bool TCallable(Evaluator&, const Value& v, CallArgs&) { return v.is_function(); }
bool TEscaped(Evaluator&, const Value&, CallArgs&) { return false; }  // no Markup without autoescape
bool TOdd(Evaluator&, const Value& v, CallArgs&) { return IntOperand(v, "odd") % 2 != 0; }
bool TEven(Evaluator&, const Value& v, CallArgs&) { return IntOperand(v, "even") % 2 == 0; }
bool TDivisibleBy(Evaluator&, const Value& v, CallArgs& a) {
  Value n = Arg(a, "num");
  if (!n.is_number() || n.as_double() == 0) ThrowTemplateError("divisibleby needs a non-zero number");
  return BinaryOp("%", v, n).as_double() == 0;
}
bool TLower(Evaluator&, const Value& v, CallArgs&) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (char c : v.str()) {
    if (std::isupper(static_cast<unsigned char>(c))) return false;
    cased |= std::islower(static_cast<unsigned char>(c)) != 0;
  }
  return cased;
}
bool TUpper(Evaluator&, const Value& v, CallArgs&) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (char c : v.str()) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    cased |= std::isupper(static_cast<unsigned char>(c)) != 0;
  }
  return cased;
}
bool TEq(Evaluator&, const Value& v, CallArgs& a) { return BinaryOp("==", v, Arg(a, "other")).as_bool(); }
bool TNe(Evaluator&, const Value& v, CallArgs& a) { return BinaryOp("!=", v, Arg(a, "other")).as_bool(); }
bool TLt(Evaluator&, const Value& v, CallArgs& a) { return BinaryOp("<", v, Arg(a, "other")).as_bool(); }
bool TLe(Evaluator&, const Value& v, CallArgs& a) { return BinaryOp("<=", v, Arg(a, "other")).as_bool(); }
bool TGt(Evaluator&, const Value& v, CallArgs& a) { return BinaryOp(">", v, Arg(a, "other")).as_bool(); }
bool TGe(Evaluator&, const Value& v, CallArgs& a) { return BinaryOp(">=", v, Arg(a, "other")).as_bool(); }
bool TIn(Evaluator&, const Value& v, CallArgs& a) { return Contains(Arg(a, "seq"), v); }
bool TSameAs(Evaluator&, const Value& v, CallArgs& a) {
  Value other = Arg(a, "other");
  // Identity for reference types, equality for None/bool (Python singletons).
  if (v.is_list() && other.is_list()) return &v.list() == &other.list();
  if ((v.is_dict() || v.is_namespace()) && v.kind() == other.kind()) return &v.dict() == &other.dict();
  if (v.kind() != other.kind()) return false;
  return v == other;
}

}  // namespace

const TestFn* FindTest(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> kTests = {
      {"defined", TDefined},   {"undefined", TUndefined}, {"none", TNone},         {"boolean", TBoolean},
      {"true", TTrue},         {"false", TFalse},         {"integer", TInteger},   {"float", TFloat},
      {"number", TNumber},     {"string", TString},       {"mapping", TMapping},   {"sequence", TSequence},
      {"iterable", TIterable}, {"callable", TCallable},   {"escaped", TEscaped},   {"odd", TOdd},
      {"even", TEven},         {"divisibleby", TDivisibleBy}, {"lower", TLower},   {"upper", TUpper},
      {"eq", TEq},             {"equalto", TEq},          {"==", TEq},             {"ne", TNe},
      {"!=", TNe},             {"lt", TLt},               {"lessthan", TLt},       {"<", TLt},
      {"le", TLe},             {"<=", TLe},               {"gt", TGt},             {"greaterthan", TGt},
      {">", TGt},              {"ge", TGe},               {">=", TGe},             {"in", TIn},
      {"sameas", TSameAs},
  };
  auto it = kTests.find(name);
  return it == kTests.end() ? nullptr : &it->second;
}

}  // namespace pagellm::chat
