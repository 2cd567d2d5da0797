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

TEST(SpeculativeConfigTest, RefusesWhatItCannotHonour) {
  for (const char* bad : {"{", "[1]", R"({"num_speculative_tokens": 2})", R"({"method": "ngram"})",
                          R"({"method": "ngram", "num_speculative_tokens": 0})",
                          R"({"method": "ngram", "num_speculative_tokens": 99})",
                          R"({"method": "ngram", "num_speculative_tokens": 2, "bogus": 1})",
                          R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4, "prompt_lookup_max": 2})",
                          R"({"method": "mtp", "num_speculative_tokens": 1})",
                          R"({"model": "/m", "num_speculative_tokens": 4})", R"({"method": "eagle", "num_speculative_tokens": 1})"}) {
    auto cfg = ParseSpeculativeConfig(bad);
    EXPECT_FALSE(cfg.ok()) << bad;
    if (!cfg.ok()) EXPECT_NE(cfg.status().message().find("--speculative-config"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace pagellm
