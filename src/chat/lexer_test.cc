#include "chat/lexer.h"

#include <gtest/gtest.h>

namespace pagellm::chat {
namespace {

std::vector<Token> LexOk(std::string_view src, LexOptions options = {}) {
  auto tokens = Lex(src, options);
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  return tokens.ok() ? *tokens : std::vector<Token>{};
}

std::string Texts(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kText) out += "[" + t.text + "]";
  }
  return out;
}

TEST(LexerTest, SplitsTextAndTags) {
  auto tokens = LexOk("Hi {{ name }}!");
  ASSERT_EQ(tokens.size(), 6u);
  EXPECT_EQ(tokens[0].kind, TokenKind::kText);
  EXPECT_EQ(tokens[0].text, "Hi ");
  EXPECT_EQ(tokens[1].kind, TokenKind::kVarBegin);
  EXPECT_EQ(tokens[2].kind, TokenKind::kName);
  EXPECT_EQ(tokens[2].text, "name");
  EXPECT_EQ(tokens[3].kind, TokenKind::kVarEnd);
  EXPECT_EQ(tokens[4].text, "!");
  EXPECT_EQ(tokens[5].kind, TokenKind::kEof);
}

TEST(LexerTest, DashStripsAllAdjacentWhitespace) {
  EXPECT_EQ(Texts(LexOk("a \n {{- x -}} \n b")), "[a][b]");
  EXPECT_EQ(Texts(LexOk("a \n {%- if x -%} \n b{% endif %}")), "[a][b]");
}

TEST(LexerTest, TrimBlocksRemovesOneNewlineAfterBlockTagsOnly) {
  EXPECT_EQ(Texts(LexOk("{% if x %}\n\nA{% endif %}")), "[\nA]");
  EXPECT_EQ(Texts(LexOk("{{ x }}\nA")), "[\nA]");  // not after expressions
  EXPECT_EQ(Texts(LexOk("{# c #}\nA")), "[A]");
  LexOptions off;
  off.trim_blocks = false;
  EXPECT_EQ(Texts(LexOk("{% if x %}\nA{% endif %}", off)), "[\nA]");
}

TEST(LexerTest, LstripBlocksOnlyAtLineStart) {
  EXPECT_EQ(Texts(LexOk("a\n   {% if x %}b{% endif %}")), "[a\n][b]");
  EXPECT_EQ(Texts(LexOk("a  {% if x %}b{% endif %}")), "[a  ][b]");  // text before tag on the line
  EXPECT_EQ(Texts(LexOk("a\n   {{ x }}")), "[a\n   ]");                // never before {{
  EXPECT_EQ(Texts(LexOk("a\n   {%+ if x %}b{% endif %}")), "[a\n   ][b]");
}

TEST(LexerTest, DropsOneTrailingNewline) {
  EXPECT_EQ(Texts(LexOk("x\n\n")), "[x\n]");
  LexOptions keep;
  keep.keep_trailing_newline = true;
  EXPECT_EQ(Texts(LexOk("x\n", keep)), "[x\n]");
}

TEST(LexerTest, StringEscapesAndNumbers) {
  auto tokens = LexOk(R"({{ 'a\n\'b\\' "\u00e9\x41" 12 3.5 1e3 x.0 }})");
  ASSERT_GE(tokens.size(), 9u);
  EXPECT_EQ(tokens[1].text, "a\n'b\\");
  EXPECT_EQ(tokens[2].text, "\xc3\xa9" "A");
  EXPECT_EQ(tokens[3].kind, TokenKind::kInt);
  EXPECT_EQ(tokens[4].kind, TokenKind::kFloat);
  EXPECT_EQ(tokens[5].kind, TokenKind::kFloat);
  EXPECT_EQ(tokens[8].kind, TokenKind::kInt);  // after '.', digits are an index, not a float
}

TEST(LexerTest, DictLiteralBracesDoNotCloseExpression) {
  auto tokens = LexOk("{{ {'a': {'b': 1}} }}");
  EXPECT_EQ(tokens[tokens.size() - 2].kind, TokenKind::kVarEnd);
  EXPECT_EQ(tokens.size(), 12u);  // {{ { 'a' : { 'b' : 1 } } }} eof
}

TEST(LexerTest, RawBlockIsVerbatim) {
  EXPECT_EQ(Texts(LexOk("{% raw %}{{ x }}{% if %}{% endraw %}")), "[{{ x }}{% if %}]");
}

TEST(LexerTest, ErrorsNameTheLine) {
  auto r = Lex("ok\n{{ 'open }}", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("unterminated string"), std::string::npos);
  auto c = Lex("a\nb\n{# never closed", {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("line 3: unterminated comment"), std::string::npos) << c.status();
  auto u = Lex("{{ a $ b }}", {});
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("unexpected character '$'"), std::string::npos);
}

}  // namespace
}  // namespace pagellm::chat
