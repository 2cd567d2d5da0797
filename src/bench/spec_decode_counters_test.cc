#include "bench/spec_decode_counters.h"

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

// Shaped like pagellm's and vLLM's /metrics: two models' label sets, one position
// appearing only after the run, a _created series and a comment.
constexpr std::string_view kBefore = R"(# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{model_name="a"} 10
vllm:spec_decode_num_drafts_total{model_name="b"} 2
vllm:spec_decode_num_drafts_created{model_name="a"} 1.7e9
vllm:spec_decode_num_draft_tokens_total{model_name="a"} 40
vllm:spec_decode_num_accepted_tokens_total{model_name="a"} 15
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="a",position="0"} 9
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="a",position="1"} 6
)";
constexpr std::string_view kAfter = R"(vllm:spec_decode_num_drafts_total{model_name="a"} 30
vllm:spec_decode_num_drafts_total{model_name="b"} 2
vllm:spec_decode_num_draft_tokens_total{model_name="a"} 120
vllm:spec_decode_num_accepted_tokens_total{model_name="a"} 45
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="a",position="0"} 25
vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1",model_name="a"} 14
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="a",position="2"} 6
)";

TEST(SpecDecodeCountersTest, DeltasRatesAndPositions) {
  const SpecDecodeCounters before = ReadSpecDecodeCounters(kBefore);
  EXPECT_TRUE(before.found);
  EXPECT_DOUBLE_EQ(before.num_drafts, 12.0);  // summed over models
  auto d = DiffSpecDecodeCounters(before, ReadSpecDecodeCounters(kAfter));
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->num_drafts, 20.0);
  EXPECT_DOUBLE_EQ(d->num_draft_tokens, 80.0);
  EXPECT_DOUBLE_EQ(d->num_accepted_tokens, 30.0);
  EXPECT_DOUBLE_EQ(d->acceptance_rate(), 30.0 / 80.0);
  EXPECT_DOUBLE_EQ(d->acceptance_length(), 1.0 + 30.0 / 20.0);
  ASSERT_EQ(d->accepted_per_pos.size(), 3u);
  EXPECT_DOUBLE_EQ(d->accepted_per_pos[0], 16.0);
  EXPECT_DOUBLE_EQ(d->accepted_per_pos[1], 8.0);
  EXPECT_DOUBLE_EQ(d->accepted_per_pos[2], 6.0);
  const std::string table = FormatSpecDecodeTable(*d);
  EXPECT_NE(table.find("Acceptance rate (%):                     37.50"), std::string::npos) << table;
  EXPECT_NE(table.find("Acceptance length:                       2.50"), std::string::npos) << table;
  EXPECT_NE(table.find("  Position 2:                            30.00"), std::string::npos) << table;
  OrderedJson j;
  AddSpecDecodeJson(*d, &j);
  EXPECT_DOUBLE_EQ(j["spec_decode_acceptance_length"].get<double>(), 2.5);
  EXPECT_EQ(j["spec_decode_per_position_acceptance_rate"].size(), 3u);
}

TEST(SpecDecodeCountersTest, NothingWithoutCountersOrDrafts) {
  EXPECT_FALSE(ReadSpecDecodeCounters("vllm:num_requests_running 1\n").found);
  EXPECT_FALSE(DiffSpecDecodeCounters(ReadSpecDecodeCounters(""), ReadSpecDecodeCounters("")).has_value());
  EXPECT_FALSE(DiffSpecDecodeCounters(ReadSpecDecodeCounters(kAfter), ReadSpecDecodeCounters(kAfter)).has_value());
}

}  // namespace
}  // namespace pagellm::bench
