#include "chat/parser.h"

#include <gtest/gtest.h>

namespace pagellm::chat {
namespace {

std::string ParseError(std::string_view src) {
  auto r = ParseTemplate(src);
  return r.ok() ? "OK" : r.status().message();
}

TEST(ParserTest, BuildsStatementTree) {
  auto r = ParseTemplate("{% for m in messages if m.role != 'system' %}{{ m.content | trim }}{% else %}-{% endfor %}");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  const Node& loop = *(*r)[0];
  EXPECT_EQ(loop.kind, NodeKind::kFor);
  EXPECT_EQ(loop.target->name, "m");
  ASSERT_NE(loop.filter, nullptr);
  EXPECT_EQ(loop.filter->kind, ExprKind::kBinary);
  EXPECT_EQ(loop.filter->name, "!=");
  ASSERT_EQ(loop.body.size(), 1u);
  EXPECT_EQ(loop.body[0]->expr->kind, ExprKind::kFilter);
  EXPECT_EQ(loop.body[0]->expr->name, "trim");
  EXPECT_EQ(loop.else_body.size(), 1u);
}

TEST(ParserTest, PrecedenceFollowsJinja) {
  // not binds looser than comparison; `is` binds tighter than arithmetic.
  auto r = ParseTemplate("{{ not a == b }}{{ 1 + 2 is odd }}{{ 'x' ~ 1 + 2 }}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0]->expr->kind, ExprKind::kUnary);
  EXPECT_EQ((*r)[0]->expr->children[0]->name, "==");
  EXPECT_EQ((*r)[1]->expr->name, "+");
  EXPECT_EQ((*r)[1]->expr->children[1]->kind, ExprKind::kTest);
  EXPECT_EQ((*r)[2]->expr->name, "+");  // ~ binds tighter than +
  EXPECT_EQ((*r)[2]->expr->children[0]->name, "~");
}

TEST(ParserTest, ElifChainsNest) {
  auto r = ParseTemplate("{% if a %}1{% elif b %}2{% elif c %}3{% else %}4{% endif %}");
  ASSERT_TRUE(r.ok()) << r.status();
  const Node& n = *(*r)[0];
  ASSERT_EQ(n.else_body.size(), 1u);
  ASSERT_EQ(n.else_body[0]->kind, NodeKind::kIf);
  ASSERT_EQ(n.else_body[0]->else_body.size(), 1u);
  EXPECT_EQ(n.else_body[0]->else_body[0]->else_body.size(), 1u);
}

TEST(ParserTest, ErrorsNameConstructAndLine) {
  EXPECT_EQ(ParseError("a\n{% include 'x' %}"), "line 2: unknown or unsupported statement 'include'");
  EXPECT_EQ(ParseError("{% if x %}\nno end"), "line 2: unexpected end of template: missing '{% endif %}'");
  EXPECT_EQ(ParseError("{% endfor %}"), "line 1: unexpected 'endfor' without a matching opening tag");
  EXPECT_EQ(ParseError("{{ a b }}"), "line 1: expected '}}', got name 'b'");
  EXPECT_EQ(ParseError("{% break %}"), "line 1: 'break' outside of a for loop");
  EXPECT_EQ(ParseError("{% for x in y recursive %}{% endfor %}"), "line 1: recursive for loops are not supported");
  EXPECT_EQ(ParseError("{{ f(*args) }}"), "line 1: argument unpacking (*args / **kwargs) is not supported");
  EXPECT_EQ(ParseError("{% set x %}a{% endset %}{% macro m(a, b=1) %}{% endmacro %}"), "OK");
}

}  // namespace
}  // namespace pagellm::chat
