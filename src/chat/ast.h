// Syntax tree of a parsed chat template: expressions (Expr) and statements (Node).
//
// The tree is immutable after parsing, so one parsed template can be rendered from
// many threads at once. Produced by ParseTemplate (parser.h), walked by Evaluator.
//
//   {% for m in messages if m.role != 'system' %}{{ m.content | trim }}{% endfor %}
//   Node{kFor, target=Name m, expr=Name messages, filter=Compare(...),
//        body=[Node{kOutput, expr=Filter trim(GetAttr(Name m, content))}]}
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace pagellm::chat {

struct Expr;
struct Node;
using ExprPtr = std::unique_ptr<Expr>;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

enum class ExprKind {
  kLiteral,   // literal
  kName,      // name
  kList,      // children = items
  kTuple,     // children = items
  kDict,      // children = key0, value0, key1, value1, ...
  kGetAttr,   // children[0].name
  kGetItem,   // children[0][children[1]]
  kSlice,     // children[0][children[1]:children[2]:children[3]]; missing parts are null
  kCall,      // children[0](args)
  kFilter,    // children[0] | name(args); children[0] is null inside {% filter %}
  kTest,      // children[0] is [not] name(args)
  kUnary,     // name = "-", "+" or "not"; children[0]
  kBinary,    // name = operator ("+", "~", "==", "in", "not in", "and", ...); children[0], [1]
  kCondExpr,  // children = {then, condition, else-or-null}
};

struct ArgList {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  ArgList args;
  bool negated = false;  // kTest: `is not`
};

enum class NodeKind {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // if expr: body else else_body (elif = nested kIf in else_body)
  kFor,          // for target in expr [if filter]: body else else_body
  kSet,          // set target = expr
  kSetBlock,     // set target: body
  kMacro,        // macro name(params = defaults): body
  kCallBlock,    // call[(params)] expr: body -- body becomes `caller`
  kFilterBlock,  // filter expr: body; expr is a kFilter with a null operand
  kGeneration,   // generation: body (transformers' assistant-mask marker; renders body)
  kBreak,
  kContinue,
};

struct Node {
  NodeKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr target;  // kSet/kSetBlock/kFor: a kName, kTuple of kName, or kGetAttr (ns.attr)
  ExprPtr filter;  // kFor: the `if` condition
  NodeList body;
  NodeList else_body;
  std::string name;                 // kMacro
  std::vector<std::string> params;  // kMacro / kCallBlock
  std::vector<ExprPtr> defaults;    // parallel to params; null when no default
};

}  // namespace pagellm::chat
