// Evaluator: renders a parsed template (ast.h) against a set of global variables.
//
// One Evaluator per render call; the syntax tree is shared read-only, so concurrent
// renders of one template are safe. Semantics follow Python Jinja2 as transformers
// configures it (ImmutableSandboxedEnvironment, default Undefined): undefined values
// are falsy and render empty, but `undefined.attr` is an error; `set` inside a for
// loop does not leak out of the iteration; macros see the scope they were defined in.
//
//   Evaluator evaluator(globals);
//   PAGELLM_ASSIGN_OR_RETURN(std::string text, evaluator.Run(program));
#pragma once

#include <deque>
#include <string>

#include "chat/ast.h"
#include "chat/value.h"
#include "common/status.h"

namespace pagellm::chat {

// Thrown only inside the chat library (evaluator and builtins) and turned into a
// Status by Evaluator::Run. A deep recursive interpreter where almost any expression
// can fail reads far better with one unwinding path than with a Status per node.
struct TemplateError {
  std::string message;
  bool raised = false;  // from raise_exception(): the message is the template's own
};

[[noreturn]] void ThrowTemplateError(std::string message);

class Scope {
 public:
  explicit Scope(Scope* parent) : parent_(parent) {}
  const Value* Lookup(std::string_view name) const;
  void Set(const std::string& name, Value value);

 private:
  Scope* parent_;
  ValueDict vars_;
};

class Evaluator {
 public:
  explicit Evaluator(const ValueDict& globals);

  // Renders `program`; errors name the template line.
  StatusOr<std::string> Run(const NodeList& program);

  // Used by builtins (filters, tests, methods).
  Value Call(const Value& fn, CallArgs& args);
  Value ApplyFilter(const std::string& name, const Value& operand, CallArgs& args);
  bool ApplyTest(const std::string& name, const Value& operand, CallArgs& args);
  Value GetAttr(const Value& object, const std::string& name);
  Value GetItem(const Value& object, const Value& key);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Scope* NewScope(Scope* parent);
  Flow ExecBody(const NodeList& body, Scope& scope, std::string& out);
  Flow Exec(const Node& node, Scope& scope, std::string& out);
  void ExecFor(const Node& node, Scope& scope, std::string& out);
  void ExecSet(const Node& node, Scope& scope, Value value);
  Value MakeMacro(const Node& node, Scope& scope, const std::string& name);
  Value CallMacro(const Node& node, Scope& defining_scope, CallArgs& args);

  Value Eval(const Expr& expr, Scope& scope);
  Value EvalBinary(const Expr& expr, Scope& scope);
  Value EvalFilter(const Expr& expr, Scope& scope, const Value* block_input);
  CallArgs EvalArgs(const ArgList& args, Scope& scope);

  std::deque<Scope> scopes_;  // arena: macros keep pointers to their defining scope
  Scope* root_;
  int line_ = 0;  // line of the construct being evaluated, for error messages
  int call_depth_ = 0;
};

// Python-style arithmetic and comparison on template values (evaluator_ops.cc).
Value BinaryOp(const std::string& op, const Value& a, const Value& b);
bool Contains(const Value& container, const Value& item);
std::vector<Value> Iterate(const Value& value);

}  // namespace pagellm::chat
