#include "chat/evaluator.h"

#include <fmt/format.h>

#include "chat/builtins.h"
#include "chat/text_util.h"

namespace pagellm::chat {
namespace {
constexpr int kMaxCallDepth = 256;  // macro recursion guard; the C++ stack is the limit
}  // namespace

void ThrowTemplateError(std::string message) { throw TemplateError{std::move(message), false}; }

const Value* Scope::Lookup(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    for (const auto& [k, v] : s->vars_) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::Set(const std::string& name, Value value) {
  for (auto& [k, v] : vars_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars_.emplace_back(name, std::move(value));
}

Evaluator::Evaluator(const ValueDict& globals) {
  root_ = NewScope(nullptr);
  for (auto& [name, fn] : MakeGlobalFunctions()) root_->Set(name, fn);
  for (const auto& [name, value] : globals) root_->Set(name, value);
}

Scope* Evaluator::NewScope(Scope* parent) { return &scopes_.emplace_back(parent); }

StatusOr<std::string> Evaluator::Run(const NodeList& program) {
  std::string out;
  try {
    ExecBody(program, *root_, out);
  } catch (const TemplateError& e) {
    if (e.raised) return InvalidArgumentError(e.message);
    return InvalidArgumentError(fmt::format("chat template line {}: {}", line_, e.message));
  }
  return out;
}

Evaluator::Flow Evaluator::ExecBody(const NodeList& body, Scope& scope, std::string& out) {
  for (const NodePtr& node : body) {
    Flow flow = Exec(*node, scope, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::Exec(const Node& node, Scope& scope, std::string& out) {
  line_ = node.line;
  switch (node.kind) {
    case NodeKind::kText: out += node.text; break;
    case NodeKind::kOutput: out += Eval(*node.expr, scope).ToString(); break;
    case NodeKind::kIf:
      return ExecBody(Eval(*node.expr, scope).Truthy() ? node.body : node.else_body, scope, out);
    case NodeKind::kFor: ExecFor(node, scope, out); break;
    case NodeKind::kSet: ExecSet(node, scope, Eval(*node.expr, scope)); break;
    case NodeKind::kSetBlock: {
      std::string captured;
      ExecBody(node.body, scope, captured);
      ExecSet(node, scope, Value::String(std::move(captured)));
      break;
    }
    case NodeKind::kMacro: scope.Set(node.name, MakeMacro(node, scope, node.name)); break;
    case NodeKind::kCallBlock: {
      CallArgs args = EvalArgs(node.expr->args, scope);
      args.keyword.emplace_back("caller", MakeMacro(node, scope, "caller"));
      Value fn = Eval(*node.expr->children[0], scope);
      out += Call(fn, args).ToString();
      break;
    }
    case NodeKind::kFilterBlock: {
      std::string captured;
      ExecBody(node.body, scope, captured);
      Value input = Value::String(std::move(captured));
      out += EvalFilter(*node.expr, scope, &input).ToString();
      break;
    }
    case NodeKind::kGeneration: return ExecBody(node.body, scope, out);
    case NodeKind::kBreak: return Flow::kBreak;
    case NodeKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

namespace {

void BindTarget(const Expr& target, const Value& item, Scope& scope) {
  if (target.kind == ExprKind::kName) {
    scope.Set(target.name, item);
    return;
  }
  std::vector<Value> parts = Iterate(item);
  if (parts.size() != target.children.size()) {
    ThrowTemplateError(fmt::format("cannot unpack {} values into {} names", parts.size(), target.children.size()));
  }
  for (size_t i = 0; i < parts.size(); ++i) scope.Set(target.children[i]->name, parts[i]);
}

}  // namespace

void Evaluator::ExecFor(const Node& node, Scope& scope, std::string& out) {
  Value iterable = Eval(*node.expr, scope);
  if (iterable.is_none() || iterable.is_number() || iterable.is_function() || iterable.is_namespace()) {
    ThrowTemplateError(fmt::format("'{}' object is not iterable", iterable.TypeName()));
  }
  std::vector<Value> items = Iterate(iterable);
  if (node.filter) {  // `for x in xs if cond`: filtered before loop.length is known
    std::vector<Value> kept;
    for (const Value& item : items) {
      Scope* probe = NewScope(&scope);
      BindTarget(*node.target, item, *probe);
      if (Eval(*node.filter, *probe).Truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    Scope* iteration = NewScope(&scope);  // fresh per iteration: `set` does not carry over
    Value loop = Value::Dict({
        {"index", Value::Int(i + 1)},
        {"index0", Value::Int(i)},
        {"revindex", Value::Int(n - i)},
        {"revindex0", Value::Int(n - i - 1)},
        {"first", Value::Bool(i == 0)},
        {"last", Value::Bool(i == n - 1)},
        {"length", Value::Int(n)},
        {"previtem", i > 0 ? items[i - 1] : Value::Undefined("previtem")},
        {"nextitem", i + 1 < n ? items[i + 1] : Value::Undefined("nextitem")},
        {"depth", Value::Int(1)},
        {"depth0", Value::Int(0)},
    });
    loop.Set("cycle", Value::Function("cycle", [i](Evaluator&, CallArgs& args) {
      if (args.positional.empty()) ThrowTemplateError("loop.cycle() needs at least one argument");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    }));
    iteration->Set("loop", loop);
    BindTarget(*node.target, items[i], *iteration);
    if (ExecBody(node.body, *iteration, out) == Flow::kBreak) break;
  }
  if (n == 0) ExecBody(node.else_body, *NewScope(&scope), out);
}

void Evaluator::ExecSet(const Node& node, Scope& scope, Value value) {
  const Expr& target = *node.target;
  if (target.kind == ExprKind::kGetAttr) {
    Value object = Eval(*target.children[0], scope);
    if (!object.is_namespace()) ThrowTemplateError("cannot assign attribute on non-namespace object");
    object.Set(target.name, std::move(value));
    return;
  }
  BindTarget(target, value, scope);
}

Value Evaluator::MakeMacro(const Node& node, Scope& scope, const std::string& name) {
  Scope* defining = &scope;
  const Node* def = &node;
  return Value::Function(name, [def, defining](Evaluator& self, CallArgs& args) {
    return self.CallMacro(*def, *defining, args);
  });
}

Value Evaluator::CallMacro(const Node& node, Scope& defining_scope, CallArgs& args) {
  if (++call_depth_ > kMaxCallDepth) ThrowTemplateError("macro recursion is too deep");
  int saved_line = line_;
  Scope* scope = NewScope(&defining_scope);
  size_t n = node.params.size();
  for (size_t i = 0; i < n; ++i) {
    std::optional<Value> v = args.Take(i, node.params[i]);
    if (v) {
      scope->Set(node.params[i], *v);
    } else if (node.defaults[i]) {
      scope->Set(node.params[i], Eval(*node.defaults[i], *scope));
    } else {
      scope->Set(node.params[i], Value::Undefined(node.params[i]));
    }
  }
  ValueList varargs(args.positional.begin() + std::min(n, args.positional.size()), args.positional.end());
  ValueDict kwargs;
  for (const auto& [k, v] : args.keyword) {
    if (k == "caller") {
      scope->Set("caller", v);
    } else if (std::find(node.params.begin(), node.params.end(), k) == node.params.end()) {
      kwargs.emplace_back(k, v);
    }
  }
  scope->Set("varargs", Value::List(std::move(varargs)));
  scope->Set("kwargs", Value::Dict(std::move(kwargs)));
  std::string out;
  ExecBody(node.body, *scope, out);
  --call_depth_;
  line_ = saved_line;
  return Value::String(std::move(out));
}

Value Evaluator::Call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) ThrowTemplateError(fmt::format("'{}' is undefined", fn.undefined_name()));
  if (!fn.is_function()) ThrowTemplateError(fmt::format("'{}' object is not callable", fn.TypeName()));
  return fn.function()(*this, args);
}

CallArgs Evaluator::EvalArgs(const ArgList& args, Scope& scope) {
  CallArgs out;
  out.line = line_;
  for (const ExprPtr& e : args.positional) out.positional.push_back(Eval(*e, scope));
  for (const auto& [k, e] : args.keyword) out.keyword.emplace_back(k, Eval(*e, scope));
  return out;
}

Value Evaluator::GetAttr(const Value& object, const std::string& name) {
  if (object.is_undefined()) {
    ThrowTemplateError(fmt::format("'{}' is undefined (while reading attribute '{}')", object.undefined_name(), name));
  }
  if (object.is_namespace()) {
    const Value* v = object.Find(name);
    return v ? *v : Value::Undefined(name);
  }
  // Python attribute first (dict methods, str methods), then item, as Jinja's getattr.
  if (std::optional<Value> method = GetMethod(object, name)) return *method;
  if (object.is_dict()) {
    const Value* v = object.Find(name);
    if (v) return *v;
  }
  return Value::Undefined(name);
}

Value Evaluator::GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) {
    ThrowTemplateError(fmt::format("'{}' is undefined (while reading an item)", object.undefined_name()));
  }
  if ((object.is_dict() || object.is_namespace()) && key.is_string()) {
    const Value* v = object.Find(key.str());
    if (v) return *v;
    return object.is_dict() ? GetAttr(object, key.str()) : Value::Undefined(key.str());
  }
  if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (object.is_list()) {
      int64_t n = static_cast<int64_t>(object.list().size());
      if (i < 0) i += n;
      return (i >= 0 && i < n) ? object.list()[i] : Value::Undefined("item");
    }
    std::vector<size_t> off = Utf8Offsets(object.str());
    int64_t n = static_cast<int64_t>(off.size()) - 1;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::Undefined("item");
    return Value::String(object.str().substr(off[i], off[i + 1] - off[i]));
  }
  if (key.is_string()) return GetAttr(object, key.str());
  return Value::Undefined("item");
}

}  // namespace pagellm::chat
