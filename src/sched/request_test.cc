#include "sched/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

using ::testing::ElementsAre;

Request MakeReq(SamplingParams params, std::vector<int32_t> eos = {9}) {
  return Request("r", {1, 2, 3}, params, 0.0, std::move(eos));
}

TEST(RequestTest, TokenViewsAndPreemption) {
  Request req = MakeReq({});
  req.AppendOutputToken(7);
  req.AppendOutputToken(8);
  EXPECT_THAT(req.prompt_token_ids(), ElementsAre(1, 2, 3));
  EXPECT_THAT(req.output_token_ids(), ElementsAre(7, 8));
  EXPECT_THAT(req.all_token_ids(), ElementsAre(1, 2, 3, 7, 8));
  req.set_num_computed_tokens(4);
  req.MarkPreempted();
  EXPECT_EQ(req.status(), RequestStatus::kPreempted);
  EXPECT_EQ(req.num_computed_tokens(), 0);
  EXPECT_EQ(req.num_preemptions(), 1);
  EXPECT_EQ(req.num_output_tokens(), 2);  // kept for recompute
}

TEST(RequestTest, StopOnEosUnlessIgnoredOrBeforeMinTokens) {
  SamplingParams params;
  Request req = MakeReq(params);
  req.AppendOutputToken(9);
  EXPECT_EQ(CheckTokenStop(req, 100), RequestStatus::kFinishedStopped);

  params.ignore_eos = true;
  Request ignoring = MakeReq(params);
  ignoring.AppendOutputToken(9);
  EXPECT_EQ(CheckTokenStop(ignoring, 100), std::nullopt);

  params.ignore_eos = false;
  params.min_tokens = 2;
  Request early = MakeReq(params);
  early.AppendOutputToken(9);
  EXPECT_EQ(CheckTokenStop(early, 100), std::nullopt);
  early.AppendOutputToken(9);
  EXPECT_EQ(CheckTokenStop(early, 100), RequestStatus::kFinishedStopped);
}

TEST(RequestTest, StopTokenIdsAndLengthLimits) {
  SamplingParams params;
  params.stop_token_ids = {5};
  params.max_tokens = 2;
  Request req = MakeReq(params);
  req.AppendOutputToken(4);
  EXPECT_EQ(CheckTokenStop(req, 100), std::nullopt);
  req.AppendOutputToken(4);
  EXPECT_EQ(CheckTokenStop(req, 100), RequestStatus::kFinishedLength);

  Request eos_at_limit = MakeReq(params);  // EOS as the last allowed token: "length"
  eos_at_limit.AppendOutputToken(4);
  eos_at_limit.AppendOutputToken(9);
  EXPECT_EQ(CheckTokenStop(eos_at_limit, 100), RequestStatus::kFinishedLength);

  Request stop = MakeReq(params);
  stop.AppendOutputToken(5);
  EXPECT_EQ(CheckTokenStop(stop, 100), RequestStatus::kFinishedStopped);

  Request long_ctx = MakeReq({});  // no max_tokens: stops at max_model_len
  long_ctx.AppendOutputToken(4);
  EXPECT_EQ(CheckTokenStop(long_ctx, 5), std::nullopt);
  long_ctx.AppendOutputToken(4);
  EXPECT_EQ(CheckTokenStop(long_ctx, 5), RequestStatus::kFinishedLength);
  EXPECT_STREQ(RequestFinishReason(RequestStatus::kFinishedLength), "length");
  EXPECT_STREQ(RequestFinishReason(RequestStatus::kRunning), "");
}

}  // namespace
}  // namespace pagellm
