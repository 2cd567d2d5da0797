#include "spec/speculative_config.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

TEST(SpeculativeConfigTest, EmptyIsOff) {
  auto cfg = ParseSpeculativeConfig("");
  ASSERT_TRUE(cfg.ok());
  EXPECT_FALSE(cfg->enabled());
}

TEST(SpeculativeConfigTest, NgramDefaultsMirrorVllm) {
  auto both = ParseSpeculativeConfig(R"({"method": "ngram", "num_speculative_tokens": 3})");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->prompt_lookup_min, 5);
  EXPECT_EQ(both->prompt_lookup_max, 5);
  auto max_only = ParseSpeculativeConfig(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 2})");
  ASSERT_TRUE(max_only.ok());
  EXPECT_EQ(max_only->prompt_lookup_min, 2);
  auto range = ParseSpeculativeConfig(
      R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1, "prompt_lookup_max": 3})");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->prompt_lookup_min, 1);
  EXPECT_EQ(range->prompt_lookup_max, 3);
  EXPECT_EQ(range->num_speculative_tokens, 4);
}

TEST(SpeculativeConfigTest, DraftModelAsVllmInfersIt) {
  auto plain = ParseSpeculativeConfig(R"({"model": "/m/draft", "num_speculative_tokens": 4})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->method, "draft_model");
  EXPECT_EQ(plain->model, "/m/draft");
  EXPECT_EQ(plain->num_speculative_tokens, 4);
  EXPECT_TRUE(plain->enabled());
  auto named = ParseSpeculativeConfig(
      R"({"method": "draft_model", "model": "/m/draft", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1})");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->method, "draft_model");
  EXPECT_NE(named->Describe().find("/m/draft"), std::string::npos);
}

TEST(SpeculativeConfigTest, MtpTakesVllmsNamesAndDefault) {
  auto cfg = ParseSpeculativeConfig(R"({"method": "mtp", "num_speculative_tokens": 3})");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->method, "mtp");
  EXPECT_EQ(cfg->num_speculative_tokens, 3);
  auto legacy = ParseSpeculativeConfig(R"({"method": "qwen3_next_mtp"})");
  ASSERT_TRUE(legacy.ok()) << legacy.status().ToString();
  EXPECT_EQ(legacy->method, "mtp");
  EXPECT_EQ(legacy->num_speculative_tokens, 1);  // vLLM: the checkpoint's one MTP layer
  EXPECT_NE(legacy->Describe().find("multi-token-prediction"), std::string::npos);
}

TEST(SpeculativeConfigTest, RefusesWhatItCannotHonour) {
  for (const char* bad : {"{", "[1]", R"({"num_speculative_tokens": 2})", R"({"method": "ngram"})",
                          R"({"method": "ngram", "num_speculative_tokens": 0})",
                          R"({"method": "ngram", "num_speculative_tokens": 99})",
                          R"({"method": "ngram", "num_speculative_tokens": 2, "bogus": 1})",
                          R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4, "prompt_lookup_max": 2})",
                          R"({"method": "mtp", "num_speculative_tokens": 2, "prompt_lookup_max": 3})",
                          R"({"method": "mtp", "model": "/m", "num_speculative_tokens": 1})",
                          R"({"method": "draft_model", "num_speculative_tokens": 4})",
                          R"({"model": "", "num_speculative_tokens": 4})", R"({"model": 3, "num_speculative_tokens": 4})",
                          R"({"method": "eagle", "model": "/m", "num_speculative_tokens": 1})",
                          R"({"model": "/m", "num_speculative_tokens": 4, "prompt_lookup_max": 3})",
                          R"({"model": "/m", "num_speculative_tokens": 4, "draft_tensor_parallel_size": 2})",
                          R"({"method": "eagle", "num_speculative_tokens": 1})"}) {
    auto cfg = ParseSpeculativeConfig(bad);
    EXPECT_FALSE(cfg.ok()) << bad;
    if (!cfg.ok()) EXPECT_NE(cfg.status().message().find("--speculative-config"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace pagellm
