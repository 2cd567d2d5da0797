#include "chat/content_format.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "chat/ast.h"

namespace pagellm::chat {
namespace {

// Every node of the program (macro bodies, if/for branches, call blocks included).
void VisitNodes(const NodeList& nodes, const std::function<void(const Node&)>& fn) {
  for (const NodePtr& n : nodes) {
    fn(*n);
    VisitNodes(n->body, fn);
    VisitNodes(n->else_body, fn);
  }
}

void VisitExprs(const Expr* e, const std::function<void(const Expr&)>& fn) {
  if (!e) return;
  fn(*e);
  for (const ExprPtr& c : e->children) VisitExprs(c.get(), fn);
  for (const ExprPtr& c : e->args.positional) VisitExprs(c.get(), fn);
  for (const auto& [key, c] : e->args.keyword) VisitExprs(c.get(), fn);
}

// Strips filters and tests applied to the iterable (`m.content | selectattr(...)`).
const Expr* Underlying(const Expr* e) {
  while (e && e->kind == ExprKind::kFilter && !e->children.empty() && e->children[0]) e = e->children[0].get();
  return e;
}

bool IsContentAccess(const Expr* e, const std::set<std::string>& aliases) {
  e = Underlying(e);
  if (!e) return false;
  if (e->kind == ExprKind::kGetAttr) return e->name == "content";
  if (e->kind == ExprKind::kGetItem && e->children.size() == 2 && e->children[1] &&
      e->children[1]->kind == ExprKind::kLiteral && e->children[1]->literal.is_string()) {
    return e->children[1]->literal.str() == "content";
  }
  return e->kind == ExprKind::kName && aliases.count(e->name) > 0;
}

// Names that hold a message's content: set targets and macro parameters fed with it.
// Iterated to a fixed point, so an alias of an alias counts too.
std::set<std::string> ContentAliases(const NodeList& program) {
  std::map<std::string, const Node*> macros;
  VisitNodes(program, [&](const Node& n) {
    if (n.kind == NodeKind::kMacro) macros[n.name] = &n;
  });
  std::set<std::string> aliases;
  for (size_t before = SIZE_MAX; before != aliases.size();) {
    before = aliases.size();
    VisitNodes(program, [&](const Node& n) {
      if (n.kind == NodeKind::kSet && n.target && n.target->kind == ExprKind::kName &&
          IsContentAccess(n.expr.get(), aliases)) {
        aliases.insert(n.target->name);
      }
      auto visit_calls = [&](const Expr& e) {
        if (e.kind != ExprKind::kCall || e.children.empty() || !e.children[0] ||
            e.children[0]->kind != ExprKind::kName) {
          return;
        }
        auto it = macros.find(e.children[0]->name);
        if (it == macros.end()) return;
        const std::vector<std::string>& params = it->second->params;
        for (size_t i = 0; i < e.args.positional.size() && i < params.size(); ++i) {
          if (IsContentAccess(e.args.positional[i].get(), aliases)) aliases.insert(params[i]);
        }
        for (const auto& [key, arg] : e.args.keyword) {
          if (IsContentAccess(arg.get(), aliases)) aliases.insert(key);
        }
      };
      VisitExprs(n.expr.get(), visit_calls);
      VisitExprs(n.filter.get(), visit_calls);
    });
  }
  return aliases;
}

}  // namespace

StatusOr<ContentFormatOption> ParseContentFormatOption(const std::string& text) {
  if (text == "auto") return ContentFormatOption{};
  if (text == "string") return ContentFormatOption{false, ContentFormat::kString};
  if (text == "openai") return ContentFormatOption{false, ContentFormat::kOpenAi};
  return InvalidArgumentError(
      fmt::format("--chat-template-content-format: '{}' is not one of auto, string, openai", text));
}

const char* ContentFormatName(ContentFormat format) {
  return format == ContentFormat::kOpenAi ? "openai" : "string";
}

ContentFormat DetectContentFormat(const NodeList& program) {
  const std::set<std::string> aliases = ContentAliases(program);
  bool loops_over_content = false;
  VisitNodes(program, [&](const Node& n) {
    if (n.kind == NodeKind::kFor && IsContentAccess(n.expr.get(), aliases)) loops_over_content = true;
  });
  return loops_over_content ? ContentFormat::kOpenAi : ContentFormat::kString;
}

}  // namespace pagellm::chat
