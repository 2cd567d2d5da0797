#include "chat/parser.h"

#include <initializer_list>
#include <stdexcept>

#include <fmt/format.h>

namespace pagellm::chat {
namespace {

// Thrown inside the parser only; ParseTemplate turns it into a Status.
struct ParseError {
  std::string message;
};

bool OneOf(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  NodeList ParseAll() {
    NodeList body = Subparse({});
    if (Peek().kind != TokenKind::kEof) Fail(Peek(), fmt::format("unexpected '{}'", Peek(1).text));
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kOperator && Peek(ahead).text == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kName && Peek(ahead).text == name;
  }
  bool SkipOp(const char* op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(const char* name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  [[noreturn]] static void Fail(const Token& at, const std::string& message) {
    throw ParseError{fmt::format("line {}: {}", at.line, message)};
  }
  static std::string Describe(const Token& t) {
    if (t.kind == TokenKind::kEof) return "end of template";
    if (t.kind == TokenKind::kText) return "text";
    return fmt::format("{} '{}'", TokenKindName(t.kind), t.text);
  }
  void ExpectOp(const char* op) {
    if (!SkipOp(op)) Fail(Peek(), fmt::format("expected '{}', got {}", op, Describe(Peek())));
  }
  std::string ExpectName() {
    if (Peek().kind != TokenKind::kName) Fail(Peek(), fmt::format("expected a name, got {}", Describe(Peek())));
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Peek().kind != TokenKind::kBlockEnd) Fail(Peek(), fmt::format("expected '%}}', got {}", Describe(Peek())));
    Next();
  }
  static ExprPtr MakeExpr(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  static ExprPtr MakeBinary(std::string op, ExprPtr left, ExprPtr right, int line) {
    ExprPtr e = MakeExpr(ExprKind::kBinary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  // ---- statements ----
  // Parses until `{% <one of end_names>` (left unconsumed) or end of input.
  NodeList Subparse(std::initializer_list<const char*> end_names) {
    NodeList body;
    while (true) {
      const Token& t = Peek();
      if (t.kind == TokenKind::kEof) {
        for (const char* end : end_names) {
          if (std::string_view(end).starts_with("end")) {
            Fail(t, fmt::format("unexpected end of template: missing '{{% {} %}}'", end));
          }
        }
        return body;
      }
      if (t.kind == TokenKind::kText) {
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kText;
        n->line = t.line;
        n->text = Next().text;
        body.push_back(std::move(n));
      } else if (t.kind == TokenKind::kVarBegin) {
        Next();
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kOutput;
        n->line = t.line;
        n->expr = ParseTuple(true);
        if (Peek().kind != TokenKind::kVarEnd) Fail(Peek(), fmt::format("expected '}}}}', got {}", Describe(Peek())));
        Next();
        body.push_back(std::move(n));
      } else if (t.kind == TokenKind::kBlockBegin) {
        if (Peek(1).kind == TokenKind::kName && OneOf(Peek(1).text, end_names)) return body;
        Next();
        body.push_back(ParseStatement());
      } else {
        Fail(t, fmt::format("unexpected {}", Describe(t)));
      }
    }
  }

  // Consumes `{% name %}` that Subparse stopped at.
  void ExpectEndTag(const char* name) {
    Next();  // {%
    if (!SkipName(name)) Fail(Peek(), fmt::format("expected '{}', got {}", name, Describe(Peek())));
    ExpectBlockEnd();
  }

  NodePtr ParseStatement() {
    const Token& t = Peek();
    if (t.kind != TokenKind::kName) Fail(t, fmt::format("expected a statement name, got {}", Describe(t)));
    auto n = std::make_unique<Node>();
    n->line = t.line;
    std::string name = Next().text;
    if (name == "if") return ParseIf(std::move(n));
    if (name == "for") return ParseFor(std::move(n));
    if (name == "set") return ParseSet(std::move(n));
    if (name == "macro") return ParseMacro(std::move(n));
    if (name == "call") return ParseCallBlock(std::move(n));
    if (name == "filter") return ParseFilterBlock(std::move(n));
    if (name == "generation") {
      n->kind = NodeKind::kGeneration;
      ExpectBlockEnd();
      n->body = Subparse({"endgeneration"});
      ExpectEndTag("endgeneration");
      return n;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) Fail(t, fmt::format("'{}' outside of a for loop", name));
      n->kind = name == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      ExpectBlockEnd();
      return n;
    }
    if (OneOf(name, {"endif", "endfor", "endset", "endmacro", "endcall", "endfilter", "else", "elif", "endgeneration"})) {
      Fail(t, fmt::format("unexpected '{}' without a matching opening tag", name));
    }
    Fail(t, fmt::format("unknown or unsupported statement '{}'", name));
  }

  NodePtr ParseIf(NodePtr n) {
    n->kind = NodeKind::kIf;
    n->expr = ParseTuple(true);
    ExpectBlockEnd();
    n->body = Subparse({"elif", "else", "endif"});
    const std::string& tag = Peek(1).text;
    if (tag == "elif") {
      Next();  // {%
      auto elif = std::make_unique<Node>();
      elif->line = Next().line;
      n->else_body.push_back(ParseIf(std::move(elif)));  // consumes the shared endif
      return n;
    }
    if (tag == "else") {
      Next();
      Next();
      ExpectBlockEnd();
      n->else_body = Subparse({"endif"});
    }
    ExpectEndTag("endif");
    return n;
  }

  ExprPtr ParseAssignTarget(bool allow_attr) {
    const Token& t = Peek();
    ExprPtr first = MakeExpr(ExprKind::kName, t.line);
    first->name = ExpectName();
    if (allow_attr && IsOp(".")) {
      Next();
      ExprPtr attr = MakeExpr(ExprKind::kGetAttr, t.line);
      attr->name = ExpectName();
      attr->children.push_back(std::move(first));
      return attr;
    }
    if (!IsOp(",")) return first;
    ExprPtr tuple = MakeExpr(ExprKind::kTuple, t.line);
    tuple->children.push_back(std::move(first));
    while (SkipOp(",")) {
      if (Peek().kind != TokenKind::kName || IsName("in")) break;
      ExprPtr item = MakeExpr(ExprKind::kName, Peek().line);
      item->name = Next().text;
      tuple->children.push_back(std::move(item));
    }
    return tuple;
  }

  NodePtr ParseFor(NodePtr n) {
    n->kind = NodeKind::kFor;
    bool parens = SkipOp("(");
    n->target = ParseAssignTarget(false);
    if (parens) ExpectOp(")");
    if (!SkipName("in")) Fail(Peek(), fmt::format("expected 'in' in for loop, got {}", Describe(Peek())));
    n->expr = ParseTuple(false);
    if (SkipName("if")) n->filter = ParseExpression(true);
    if (IsName("recursive")) Fail(Peek(), "recursive for loops are not supported");
    ExpectBlockEnd();
    ++loop_depth_;
    n->body = Subparse({"endfor", "else"});
    --loop_depth_;
    if (Peek(1).text == "else") {
      Next();
      Next();
      ExpectBlockEnd();
      n->else_body = Subparse({"endfor"});
    }
    ExpectEndTag("endfor");
    return n;
  }

  NodePtr ParseSet(NodePtr n) {
    n->target = ParseAssignTarget(true);
    if (SkipOp("=")) {
      n->kind = NodeKind::kSet;
      n->expr = ParseTuple(true);
      ExpectBlockEnd();
      return n;
    }
    if (n->target->kind != ExprKind::kName) Fail(Peek(), "block set needs a plain variable name");
    if (IsOp("|")) Fail(Peek(), "filters on block set ('{% set x | f %}') are not supported");
    n->kind = NodeKind::kSetBlock;
    ExpectBlockEnd();
    n->body = Subparse({"endset"});
    ExpectEndTag("endset");
    return n;
  }

  void ParseParams(Node& n) {
    ExpectOp("(");
    while (!IsOp(")")) {
      if (!n.params.empty()) ExpectOp(",");
      if (IsOp(")")) break;
      n.params.push_back(ExpectName());
      n.defaults.push_back(SkipOp("=") ? ParseExpression(true) : nullptr);
    }
    ExpectOp(")");
  }

  NodePtr ParseMacro(NodePtr n) {
    n->kind = NodeKind::kMacro;
    n->name = ExpectName();
    ParseParams(*n);
    ExpectBlockEnd();
    int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    n->body = Subparse({"endmacro"});
    loop_depth_ = saved_loop_depth;
    ExpectEndTag("endmacro");
    return n;
  }

  NodePtr ParseCallBlock(NodePtr n) {
    n->kind = NodeKind::kCallBlock;
    if (IsOp("(")) ParseParams(*n);
    n->expr = ParseExpression(true);
    if (n->expr->kind != ExprKind::kCall) Fail(Peek(), "expected a call after 'call'");
    ExpectBlockEnd();
    n->body = Subparse({"endcall"});
    ExpectEndTag("endcall");
    return n;
  }

  NodePtr ParseFilterBlock(NodePtr n) {
    n->kind = NodeKind::kFilterBlock;
    ExprPtr operand;  // null: the rendered body
    do {
      operand = ParseFilter(std::move(operand));
    } while (SkipOp("|"));
    n->expr = std::move(operand);
    ExpectBlockEnd();
    n->body = Subparse({"endfilter"});
    ExpectEndTag("endfilter");
    return n;
  }

  // ---- expressions (Jinja2 precedence, lowest first) ----
  ExprPtr ParseTuple(bool with_condexpr) {
    int line = Peek().line;
    ExprPtr first = ParseExpression(with_condexpr);
    if (!IsOp(",")) return first;
    ExprPtr tuple = MakeExpr(ExprKind::kTuple, line);
    tuple->children.push_back(std::move(first));
    while (SkipOp(",")) {
      if (Peek().kind == TokenKind::kBlockEnd || Peek().kind == TokenKind::kVarEnd || IsOp(")")) break;
      tuple->children.push_back(ParseExpression(with_condexpr));
    }
    return tuple;
  }

  ExprPtr ParseExpression(bool with_condexpr) {
    if (!with_condexpr) return ParseOr();
    ExprPtr expr = ParseOr();
    while (IsName("if")) {
      int line = Next().line;
      ExprPtr cond = MakeExpr(ExprKind::kCondExpr, line);
      cond->children.push_back(std::move(expr));
      cond->children.push_back(ParseOr());
      cond->children.push_back(SkipName("else") ? ParseExpression(true) : nullptr);
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      int line = Next().line;
      left = MakeBinary("or", std::move(left), ParseAnd(), line);
    }
    return left;
  }

  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      int line = Next().line;
      left = MakeBinary("and", std::move(left), ParseNot(), line);
    }
    return left;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      ExprPtr e = MakeExpr(ExprKind::kUnary, Next().line);
      e->name = "not";
      e->children.push_back(ParseNot());
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
    ExprPtr left = ParseMath1();
    while (true) {
      const Token& t = Peek();
      std::string op;
      if (t.kind == TokenKind::kOperator && OneOf(t.text, {"==", "!=", "<", "<=", ">", ">="})) {
        op = t.text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        Next();
        Next();
      } else {
        return left;
      }
      left = MakeBinary(op, std::move(left), ParseMath1(), t.line);
    }
  }

  ExprPtr ParseMath1() {
    ExprPtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const Token& t = Next();
      left = MakeBinary(t.text, std::move(left), ParseConcat(), t.line);
    }
    return left;
  }

  ExprPtr ParseConcat() {
    ExprPtr left = ParseMath2();
    while (IsOp("~")) {
      int line = Next().line;
      left = MakeBinary("~", std::move(left), ParseMath2(), line);
    }
    return left;
  }

  ExprPtr ParseMath2() {
    ExprPtr left = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& t = Next();
      left = MakeBinary(t.text, std::move(left), ParsePow(), t.line);
    }
    return left;
  }

  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary(true);
    while (IsOp("**")) {
      int line = Next().line;
      left = MakeBinary("**", std::move(left), ParseUnary(true), line);
    }
    return left;
  }

  ExprPtr ParseUnary(bool with_filter) {
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      const Token& t = Next();
      node = MakeExpr(ExprKind::kUnary, t.line);
      node->name = t.text;
      node->children.push_back(ParseUnary(false));
    } else {
      node = ParsePrimary();
    }
    node = ParsePostfix(std::move(node));
    return with_filter ? ParseFilterExpr(std::move(node)) : std::move(node);
  }

  ExprPtr ParsePrimary();
  ExprPtr ParsePostfix(ExprPtr node);
  ExprPtr ParseSubscript(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);
  ExprPtr ParseFilter(ExprPtr operand);
  ExprPtr ParseTest(ExprPtr operand);
  void ParseCallArgs(ArgList& args);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
};

ExprPtr Parser::ParsePrimary() {
  const Token& t = Peek();
  switch (t.kind) {
    case TokenKind::kName: {
      Next();
      ExprPtr e = MakeExpr(ExprKind::kLiteral, t.line);
      if (t.text == "true" || t.text == "True") return e->literal = Value::Bool(true), std::move(e);
      if (t.text == "false" || t.text == "False") return e->literal = Value::Bool(false), std::move(e);
      if (t.text == "none" || t.text == "None") return e->literal = Value::None(), std::move(e);
      e->kind = ExprKind::kName;
      e->name = t.text;
      return e;
    }
    case TokenKind::kString: {
      ExprPtr e = MakeExpr(ExprKind::kLiteral, t.line);
      std::string s;
      while (Peek().kind == TokenKind::kString) s += Next().text;  // "a" "b" == "ab"
      e->literal = Value::String(std::move(s));
      return e;
    }
    case TokenKind::kInt:
    case TokenKind::kFloat: {
      Next();
      ExprPtr e = MakeExpr(ExprKind::kLiteral, t.line);
      try {
        e->literal = t.kind == TokenKind::kInt ? Value::Int(std::stoll(t.text)) : Value::Float(std::stod(t.text));
      } catch (const std::exception&) {
        Fail(t, fmt::format("number literal '{}' out of range", t.text));
      }
      return e;
    }
    default: break;
  }
  if (SkipOp("(")) {
    if (SkipOp(")")) return MakeExpr(ExprKind::kTuple, t.line);
    ExprPtr e = ParseTuple(true);
    ExpectOp(")");
    return e;
  }
  if (IsOp("[") || IsOp("{")) {
    bool is_list = IsOp("[");
    Next();
    ExprPtr e = MakeExpr(is_list ? ExprKind::kList : ExprKind::kDict, t.line);
    const char* close = is_list ? "]" : "}";
    while (!IsOp(close)) {
      if (!e->children.empty()) ExpectOp(",");
      if (IsOp(close)) break;
      e->children.push_back(ParseExpression(true));
      if (!is_list) {
        ExpectOp(":");
        e->children.push_back(ParseExpression(true));
      }
    }
    ExpectOp(close);
    return e;
  }
  Fail(t, fmt::format("unexpected {} in expression", Describe(t)));
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    const Token& t = Peek();
    if (IsOp(".")) {
      Next();
      const Token& attr = Next();
      if (attr.kind == TokenKind::kName) {
        ExprPtr e = MakeExpr(ExprKind::kGetAttr, t.line);
        e->name = attr.text;
        e->children.push_back(std::move(node));
        node = std::move(e);
      } else if (attr.kind == TokenKind::kInt) {  // x.0 == x[0]
        ExprPtr e = MakeExpr(ExprKind::kGetItem, t.line);
        e->children.push_back(std::move(node));
        ExprPtr index = MakeExpr(ExprKind::kLiteral, t.line);
        index->literal = Value::Int(std::stoll(attr.text));
        e->children.push_back(std::move(index));
        node = std::move(e);
      } else {
        Fail(attr, fmt::format("expected an attribute name after '.', got {}", Describe(attr)));
      }
    } else if (IsOp("[")) {
      Next();
      node = ParseSubscript(std::move(node));
    } else if (IsOp("(")) {
      ExprPtr e = MakeExpr(ExprKind::kCall, t.line);
      e->children.push_back(std::move(node));
      ParseCallArgs(e->args);
      node = std::move(e);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  int line = Peek().line;
  ExprPtr start = IsOp(":") ? nullptr : ParseTuple(true);
  if (!IsOp(":")) {
    ExpectOp("]");
    ExprPtr e = MakeExpr(ExprKind::kGetItem, line);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(start));
    return e;
  }
  Next();  // ':'
  ExprPtr e = MakeExpr(ExprKind::kSlice, line);
  e->children.push_back(std::move(node));
  e->children.push_back(std::move(start));
  e->children.push_back((IsOp(":") || IsOp("]")) ? nullptr : ParseExpression(true));
  ExprPtr step;
  if (SkipOp(":") && !IsOp("]")) step = ParseExpression(true);
  e->children.push_back(std::move(step));
  ExpectOp("]");
  return e;
}

void Parser::ParseCallArgs(ArgList& args) {
  ExpectOp("(");
  bool first = true;
  while (!IsOp(")")) {
    if (!first) ExpectOp(",");
    first = false;
    if (IsOp(")")) break;
    if (IsOp("*") || IsOp("**")) Fail(Peek(), "argument unpacking (*args / **kwargs) is not supported");
    if (Peek().kind == TokenKind::kName && IsOp("=", 1)) {
      std::string key = Next().text;
      Next();
      args.keyword.emplace_back(std::move(key), ParseExpression(true));
    } else {
      if (!args.keyword.empty()) Fail(Peek(), "positional argument after keyword argument");
      args.positional.push_back(ParseExpression(true));
    }
  }
  ExpectOp(")");
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (SkipOp("|")) {
      node = ParseFilter(std::move(node));
    } else if (IsName("is")) {
      node = ParseTest(std::move(node));
    } else if (IsOp("(")) {
      ExprPtr e = MakeExpr(ExprKind::kCall, Peek().line);
      e->children.push_back(std::move(node));
      ParseCallArgs(e->args);
      node = std::move(e);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseFilter(ExprPtr operand) {
  ExprPtr e = MakeExpr(ExprKind::kFilter, Peek().line);
  e->name = ExpectName();
  while (IsOp(".")) {  // dotted filter names: `|a.b`
    Next();
    e->name += "." + ExpectName();
  }
  e->children.push_back(std::move(operand));
  if (IsOp("(")) ParseCallArgs(e->args);
  return e;
}

ExprPtr Parser::ParseTest(ExprPtr operand) {
  ExprPtr e = MakeExpr(ExprKind::kTest, Next().line);  // 'is'
  e->negated = SkipName("not");
  e->name = ExpectName();
  e->children.push_back(std::move(operand));
  const Token& t = Peek();
  if (IsOp("(")) {
    ParseCallArgs(e->args);
  } else if ((t.kind == TokenKind::kName || t.kind == TokenKind::kString || t.kind == TokenKind::kInt ||
              t.kind == TokenKind::kFloat || IsOp("[") || IsOp("{")) &&
             !(t.kind == TokenKind::kName && OneOf(t.text, {"else", "or", "and", "if", "is", "in", "not"}))) {
    // Jinja allows one argument without parentheses: `x is divisibleby 3`.
    e->args.positional.push_back(ParsePostfix(ParsePrimary()));
  }
  return e;
}

}  // namespace

StatusOr<NodeList> ParseTemplate(std::string_view source, const LexOptions& options) {
  PAGELLM_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source, options));
  try {
    return Parser(std::move(tokens)).ParseAll();
  } catch (const ParseError& e) {
    return InvalidArgumentError(e.message);
  }
}

}  // namespace pagellm::chat
