#include "model/generation_config.h"

#include <gtest/gtest.h>

#include "common/mapped_file.h"

namespace pagellm {
namespace {

// Published Qwen3 generation_config.json.
const char* kQwen3 = R"({"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
  "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": "4.51.0"})";

TEST(GenerationConfigTest, ParsesQwen3File) {
  auto gen = ParseGenerationConfig(ParseJson(kQwen3, "test").value());
  ASSERT_TRUE(gen.ok()) << gen.status();
  EXPECT_FLOAT_EQ(gen->temperature.value(), 0.6f);
  EXPECT_FLOAT_EQ(gen->top_p.value(), 0.95f);
  EXPECT_EQ(gen->top_k.value(), 20);
  EXPECT_FALSE(gen->min_p.has_value());
  EXPECT_FALSE(gen->repetition_penalty.has_value());
  EXPECT_EQ(gen->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(gen->bos_token_id, 151643);
  EXPECT_TRUE(gen->do_sample.value());
}

TEST(GenerationConfigTest, FillsOnlyUnsetFields) {
  auto gen = ParseGenerationConfig(ParseJson(kQwen3, "test").value()).value();
  gen.repetition_penalty = 1.05f;
  gen.min_p = 0.1f;
  gen.max_new_tokens = 64;
  SamplingParams params;
  params.top_p = 0.5f;  // user-set: must survive
  ApplyGenerationDefaults(gen, params);
  EXPECT_FLOAT_EQ(params.temperature.value(), 0.6f);
  EXPECT_FLOAT_EQ(params.top_p.value(), 0.5f);
  EXPECT_EQ(params.top_k.value(), 20);
  EXPECT_FLOAT_EQ(params.min_p.value(), 0.1f);
  EXPECT_FLOAT_EQ(params.repetition_penalty.value(), 1.05f);
  EXPECT_EQ(params.max_tokens.value(), 64);
  EXPECT_FALSE(params.is_greedy());
}

TEST(GenerationConfigTest, DoSampleFalseMeansGreedyUnlessUserSetTemperature) {
  auto gen = ParseGenerationConfig(ParseJson(R"({"do_sample": false, "temperature": 0.7, "eos_token_id": 2})",
                                             "test").value());
  ASSERT_TRUE(gen.ok()) << gen.status();
  EXPECT_EQ(gen->eos_token_ids, std::vector<int32_t>{2});
  SamplingParams params;
  ApplyGenerationDefaults(*gen, params);
  EXPECT_TRUE(params.is_greedy());
  SamplingParams user;
  user.temperature = 0.9f;
  ApplyGenerationDefaults(*gen, user);
  EXPECT_FLOAT_EQ(user.temperature.value(), 0.9f);
}

TEST(GenerationConfigTest, EmptyConfigChangesNothing) {
  GenerationConfig gen;
  SamplingParams params;
  ApplyGenerationDefaults(gen, params);
  EXPECT_FALSE(params.temperature.has_value());
  EXPECT_FALSE(params.top_p.has_value());
  EXPECT_FALSE(params.top_k.has_value());
  EXPECT_FALSE(params.max_tokens.has_value());
}

TEST(GenerationConfigTest, MissingFileIsEmptyAndBadFileNamesIt) {
  auto missing = LoadGenerationConfig("/nonexistent/model");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->loaded);
  std::string dir = ::testing::TempDir();
  ASSERT_TRUE(WriteStringToFile(dir + "/generation_config.json", R"({"top_k": "many"})").ok());
  auto bad = LoadGenerationConfig(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("generation_config.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'top_k'"), std::string::npos);
  ASSERT_TRUE(WriteStringToFile(dir + "/generation_config.json", R"({"eos_token_id": [1, "x"]})").ok());
  EXPECT_FALSE(LoadGenerationConfig(dir).ok());
}

}  // namespace
}  // namespace pagellm
