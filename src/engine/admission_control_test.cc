#include "engine/admission_control.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

TEST(AdmissionControlTest, BoundsRequestsAndTokens) {
  AdmissionControl ac({.max_queued_reqs = 4, .max_queued_tokens = 100});
  EXPECT_TRUE(ac.Admit(3, 50, 1, 10).ok());
  Status full = ac.Admit(4, 50, 1, 10);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("4 requests are waiting"), std::string::npos);
  EXPECT_EQ(ac.Admit(2, 50, 2, 30).code(), StatusCode::kResourceExhausted);  // 50 + 60 > 100
  EXPECT_EQ(ac.Admit(0, 0, 1, 101).code(), StatusCode::kInvalidArgument);    // never fits
  EXPECT_TRUE(AdmissionControl({}).Admit(1000000, 1 << 30, 8, 4096).ok());  // unbounded
}

TEST(AdmissionControlTest, RetryAfterFollowsTheMeasuredDrainRate) {
  AdmissionControl ac({.max_queued_reqs = 4});
  EXPECT_EQ(ac.RetryAfterSeconds(1000), 1);  // nothing measured yet
  ac.OnStep(0, true, 0.0);
  for (int i = 1; i <= 10; ++i) ac.OnStep(i * 100, true, i * 0.1);  // 1,000 tokens/s while waiting
  EXPECT_NEAR(ac.prefill_tokens_per_s(), 1000.0, 1.0);
  ac.OnStep(1000, false, 100.0);  // idle time does not dilute the rate
  ac.OnStep(1000, false, 200.0);
  EXPECT_NEAR(ac.prefill_tokens_per_s(), 1000.0, 1.0);
  EXPECT_EQ(ac.RetryAfterSeconds(5000), 5);
  EXPECT_EQ(ac.RetryAfterSeconds(1), 1);
  EXPECT_EQ(ac.RetryAfterSeconds(int64_t{1} << 40), 600);
}

}  // namespace
}  // namespace pagellm
