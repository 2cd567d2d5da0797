#include "server/preempt_request.h"

#include <gtest/gtest.h>

namespace pagellm::server {
namespace {

StatusOr<PreemptionRequest> Parse(const char* json) { return ParsePreemptRequest(OrderedJson::parse(json)); }

TEST(PreemptRequestTest, ReadsEitherBoundOrBoth) {
  StatusOr<PreemptionRequest> r = Parse(R"({"num_requests": 2})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->max_num_requests, 2);
  EXPECT_FALSE(r->target_kv_usage.has_value());
  r = Parse(R"({"target_kv_cache_usage": 0.8, "num_requests": 4})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->max_num_requests, 4);
  EXPECT_DOUBLE_EQ(*r->target_kv_usage, 0.8);
  EXPECT_TRUE(Parse(R"({"target_kv_cache_usage": 0})").ok());
}

TEST(PreemptRequestTest, RefusesBadBodiesNamingTheField) {
  for (const char* bad : {R"({})", R"({"num_requests": 0})", R"({"num_requests": -1})", R"({"num_requests": 1.5})",
                          R"({"num_requests": "2"})", R"({"num_requests": true})", R"({"target_kv_cache_usage": 1.2})",
                          R"({"target_kv_cache_usage": "0.5"})", R"({"count": 2})"}) {
    StatusOr<PreemptionRequest> r = Parse(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(Parse(R"({"count": 2})").status().message().find("count"), std::string::npos);
  EXPECT_NE(Parse(R"({"target_kv_cache_usage": 1.2})").status().message().find("1.2"), std::string::npos);
}

}  // namespace
}  // namespace pagellm::server
