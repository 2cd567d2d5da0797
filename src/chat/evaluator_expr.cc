// Expression evaluation half of Evaluator (statements are in evaluator.cc).
#include <fmt/format.h>

#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/text_util.h"

namespace pagellm::chat {
namespace {

// Python slice semantics (negative indices, negative step) over n elements.
std::vector<int64_t> SliceIndices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step) {
  if (step == 0) ThrowTemplateError("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = clamp(start, step > 0 ? 0 : n - 1);
  int64_t e = clamp(stop, step > 0 ? n : -1);
  std::vector<int64_t> out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

std::optional<int64_t> SlicePart(const Value& v) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  if (!v.is_int() && !v.is_bool()) ThrowTemplateError("slice indices must be integers or None");
  return v.as_int();
}

}  // namespace

Value Evaluator::Eval(const Expr& expr, Scope& scope) {
  line_ = expr.line;
  switch (expr.kind) {
    case ExprKind::kLiteral: return expr.literal;
    case ExprKind::kName: {
      const Value* v = scope.Lookup(expr.name);
      return v ? *v : Value::Undefined(expr.name);
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const ExprPtr& e : expr.children) items.push_back(Eval(*e, scope));
      return expr.kind == ExprKind::kTuple ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
    }
    case ExprKind::kDict: {
      Value dict = Value::Dict();
      for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        Value key = Eval(*expr.children[i], scope);
        if (!key.is_string()) ThrowTemplateError("only string keys are supported in dict literals");
        dict.Set(key.str(), Eval(*expr.children[i + 1], scope));
      }
      return dict;
    }
    case ExprKind::kGetAttr: {
      Value object = Eval(*expr.children[0], scope);
      line_ = expr.line;
      return GetAttr(object, expr.name);
    }
    case ExprKind::kGetItem: {
      Value object = Eval(*expr.children[0], scope);
      Value key = Eval(*expr.children[1], scope);
      line_ = expr.line;
      return GetItem(object, key);
    }
    case ExprKind::kSlice: {
      Value object = Eval(*expr.children[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        if (expr.children[i + 1]) parts[i] = Eval(*expr.children[i + 1], scope);
      }
      std::optional<int64_t> step = SlicePart(parts[2]);
      if (object.is_list()) {
        ValueList out;
        for (int64_t i : SliceIndices(static_cast<int64_t>(object.list().size()), SlicePart(parts[0]),
                                      SlicePart(parts[1]), step.value_or(1))) {
          out.push_back(object.list()[i]);
        }
        return Value::List(std::move(out));
      }
      if (object.is_string()) {
        std::vector<size_t> off = Utf8Offsets(object.str());
        std::string out;
        for (int64_t i : SliceIndices(static_cast<int64_t>(off.size()) - 1, SlicePart(parts[0]),
                                      SlicePart(parts[1]), step.value_or(1))) {
          out += object.str().substr(off[i], off[i + 1] - off[i]);
        }
        return Value::String(std::move(out));
      }
      if (object.is_undefined()) ThrowTemplateError(fmt::format("'{}' is undefined", object.undefined_name()));
      ThrowTemplateError(fmt::format("'{}' object is not subscriptable", object.TypeName()));
    }
    case ExprKind::kCall: {
      Value fn = Eval(*expr.children[0], scope);
      CallArgs args = EvalArgs(expr.args, scope);
      line_ = expr.line;
      return Call(fn, args);
    }
    case ExprKind::kFilter: return EvalFilter(expr, scope, nullptr);
    case ExprKind::kTest: {
      Value operand = Eval(*expr.children[0], scope);
      CallArgs args = EvalArgs(expr.args, scope);
      line_ = expr.line;
      return Value::Bool(ApplyTest(expr.name, operand, args) != expr.negated);
    }
    case ExprKind::kUnary: {
      Value v = Eval(*expr.children[0], scope);
      if (expr.name == "not") return Value::Bool(!v.Truthy());
      if (!v.is_number()) ThrowTemplateError(fmt::format("bad operand type for unary {}: '{}'", expr.name, v.TypeName()));
      if (expr.name == "+") return v.is_float() ? v : Value::Int(v.as_int());
      return v.is_float() ? Value::Float(-v.as_double()) : Value::Int(-v.as_int());
    }
    case ExprKind::kBinary: return EvalBinary(expr, scope);
    case ExprKind::kCondExpr: {
      if (Eval(*expr.children[1], scope).Truthy()) return Eval(*expr.children[0], scope);
      return expr.children[2] ? Eval(*expr.children[2], scope) : Value::Undefined("else");
    }
  }
  ThrowTemplateError("unknown expression");
}

Value Evaluator::EvalBinary(const Expr& expr, Scope& scope) {
  const std::string& op = expr.name;
  Value left = Eval(*expr.children[0], scope);
  if (op == "and") return left.Truthy() ? Eval(*expr.children[1], scope) : left;
  if (op == "or") return left.Truthy() ? left : Eval(*expr.children[1], scope);
  Value right = Eval(*expr.children[1], scope);
  line_ = expr.line;
  return BinaryOp(op, left, right);
}

Value Evaluator::EvalFilter(const Expr& expr, Scope& scope, const Value* block_input) {
  Value operand = expr.children[0] ? (expr.children[0]->kind == ExprKind::kFilter
                                          ? EvalFilter(*expr.children[0], scope, block_input)
                                          : Eval(*expr.children[0], scope))
                                   : *block_input;
  CallArgs args = EvalArgs(expr.args, scope);
  line_ = expr.line;
  return ApplyFilter(expr.name, operand, args);
}

Value Evaluator::ApplyFilter(const std::string& name, const Value& operand, CallArgs& args) {
  const FilterFn* fn = FindFilter(name);
  if (!fn) ThrowTemplateError(fmt::format("unknown filter '{}'", name));
  return (*fn)(*this, operand, args);
}

bool Evaluator::ApplyTest(const std::string& name, const Value& operand, CallArgs& args) {
  const TestFn* fn = FindTest(name);
  if (!fn) ThrowTemplateError(fmt::format("unknown test '{}'", name));
  return (*fn)(*this, operand, args);
}

}  // namespace pagellm::chat
