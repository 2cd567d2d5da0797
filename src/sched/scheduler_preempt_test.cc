// Scheduler::PreemptNewest (the operator's reclaim, POST /preempt_requests): exact
// victims, freed blocks and usage with block_size 4 and 64 usable blocks, the admission
// hold that follows, and outputs identical to an undisturbed run (the fake model's next
// token is a pure function of the sequence, so recompute must reproduce it).
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace pagellm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing_util::FakeSample;
using testing_util::Iota;
using testing_util::MakeRequest;

constexpr int32_t kUsableBlocks = 64;

std::unique_ptr<Scheduler> MakeScheduler(bool caching = false, bool priority = false) {
  SchedulerConfig config;
  config.batch = {.max_num_batched_tokens = 64, .max_num_seqs = 8};
  config.kv_cache = {.num_blocks = kUsableBlocks + 1, .block_size = 4, .enable_prefix_caching = caching};
  config.max_model_len = 64;
  config.priority_policy = priority;
  return std::move(Scheduler::Create(config)).value();
}

using Tokens = std::map<std::string, std::vector<int32_t>>;

// One step with the fake model; appends every sampled token to its request's list.
SchedulerOutput Step(Scheduler& sched, Tokens* tokens) {
  SchedulerOutput out = sched.Schedule();
  std::vector<int32_t> sampled = FakeSample(sched, out);
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    if (out.scheduled[i].samples) (*tokens)[out.scheduled[i].request_id].push_back(sampled[i]);
  }
  sched.UpdateFromOutput(out, sampled);
  return out;
}

std::vector<std::string> Ids(const SchedulerOutput& out) {
  std::vector<std::string> ids;
  for (const ScheduledRequest& s : out.scheduled) ids.push_back(s.request_id);
  return ids;
}

// a, b, c: 8-token prompts, 6 output tokens, admitted in that order.
void AddThree(Scheduler& sched) {
  const std::pair<const char*, int32_t> requests[] = {{"a", 100}, {"b", 200}, {"c", 300}};
  for (const auto& [id, start] : requests) {
    ASSERT_TRUE(sched.AddRequest(MakeRequest(id, Iota(8, start), /*max_tokens=*/6)).ok());
  }
}

Tokens Undisturbed() {
  auto sched = MakeScheduler();
  AddThree(*sched);
  Tokens tokens;
  while (sched->HasUnfinishedRequests()) Step(*sched, &tokens);
  return tokens;
}

TEST(SchedulerPreemptTest, CountPreemptsTheNewestAndHoldsThemUntilThereIsRoom) {
  auto sched = MakeScheduler();
  AddThree(*sched);
  Tokens tokens;
  Step(*sched, &tokens);  // prefill: 2 blocks each
  Step(*sched, &tokens);  // first decode: position 8 needs a third block each
  ASSERT_EQ(sched->kv_cache().num_free_blocks(), kUsableBlocks - 9);

  StatusOr<PreemptionResult> r = sched->PreemptNewest({.max_num_requests = 2});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->request_ids, ElementsAre("c", "b"));
  EXPECT_EQ(r->num_freed_blocks, 6);
  EXPECT_EQ(r->num_freed_cached_blocks, 0);  // caching off
  EXPECT_DOUBLE_EQ(r->kv_usage_before, 9.0 / kUsableBlocks);
  EXPECT_DOUBLE_EQ(r->kv_usage_after, 3.0 / kUsableBlocks);
  EXPECT_DOUBLE_EQ(r->admission_ceiling, 3.0 / kUsableBlocks);  // no target: the usage reached
  EXPECT_EQ(sched->num_running(), 1);
  EXPECT_EQ(sched->num_waiting(), 2);
  EXPECT_EQ(sched->FindRequest("b")->status(), RequestStatus::kPreempted);
  EXPECT_EQ(sched->FindRequest("b")->num_computed_tokens(), 0);
  EXPECT_EQ(sched->FindRequest("b")->num_output_tokens(), 2);  // kept

  // The next step reports them, and runs only a: readmitting b or c would take the
  // freed blocks straight back.
  SchedulerOutput out = Step(*sched, &tokens);
  EXPECT_THAT(out.preempted_ids, ElementsAre("c", "b"));
  EXPECT_THAT(Ids(out), ElementsAre("a"));
  EXPECT_TRUE(sched->admission_hold().active());
  while (sched->FindRequest("a") != nullptr) EXPECT_THAT(Ids(Step(*sched, &tokens)), ElementsAre("a"));
  // Nothing runs: b (the older victim) is admitted; c's 3 blocks beside it exceed the ceiling.
  out = Step(*sched, &tokens);
  EXPECT_THAT(Ids(out), ElementsAre("b"));
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 10);  // prompt + both output tokens, recomputed
  EXPECT_TRUE(out.scheduled[0].is_new);
  while (sched->FindRequest("b") != nullptr) EXPECT_THAT(Ids(Step(*sched, &tokens)), ElementsAre("b"));
  EXPECT_THAT(Ids(Step(*sched, &tokens)), ElementsAre("c"));
  EXPECT_FALSE(sched->admission_hold().active());  // every victim runs again
  while (sched->HasUnfinishedRequests()) Step(*sched, &tokens);
  EXPECT_EQ(tokens, Undisturbed());  // greedy outputs unchanged, nothing lost
}

TEST(SchedulerPreemptTest, TargetUsagePreemptsOnlyWhatItTakes) {
  auto sched = MakeScheduler();
  AddThree(*sched);
  Tokens tokens;
  Step(*sched, &tokens);
  Step(*sched, &tokens);  // 9 of 64 blocks used: 0.14
  StatusOr<PreemptionResult> r = sched->PreemptNewest({.target_kv_usage = 0.1});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->request_ids, ElementsAre("c"));  // 6 / 64 = 0.094 <= 0.1
  EXPECT_EQ(r->num_freed_blocks, 3);
  EXPECT_DOUBLE_EQ(r->admission_ceiling, 0.1);
  // a and b grow to 4 blocks each (0.125 > 0.1): c waits until they finish together.
  while (sched->FindRequest("a") != nullptr) EXPECT_THAT(Ids(Step(*sched, &tokens)), ElementsAre("a", "b"));
  EXPECT_THAT(Ids(Step(*sched, &tokens)), ElementsAre("c"));
  while (sched->HasUnfinishedRequests()) Step(*sched, &tokens);
  EXPECT_EQ(tokens, Undisturbed());

  // A target already met preempts nothing and holds nothing.
  auto idle = MakeScheduler();
  AddThree(*idle);
  Step(*idle, &tokens);
  r = idle->PreemptNewest({.max_num_requests = 3, .target_kv_usage = 0.5});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->request_ids, IsEmpty());
  EXPECT_EQ(r->num_freed_blocks, 0);
  EXPECT_DOUBLE_EQ(r->admission_ceiling, 1.0);
  EXPECT_FALSE(idle->admission_hold().active());
}

TEST(SchedulerPreemptTest, RefusesRequestsWithoutAValidBound) {
  auto sched = MakeScheduler();
  EXPECT_EQ(sched->PreemptNewest({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sched->PreemptNewest({.max_num_requests = -1}).status().code(), StatusCode::kInvalidArgument);
  Status s = sched->PreemptNewest({.target_kv_usage = 1.5}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1.5"), std::string::npos) << s;
  // Nothing running: nothing to preempt, no error.
  StatusOr<PreemptionResult> r = sched->PreemptNewest({.max_num_requests = 1});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->request_ids, IsEmpty());
}

TEST(SchedulerPreemptTest, PrefixCachedBlocksStayCachedForTheResume) {
  auto sched = MakeScheduler(/*caching=*/true);
  AddThree(*sched);
  Tokens tokens;
  Step(*sched, &tokens);
  Step(*sched, &tokens);
  StatusOr<PreemptionResult> r = sched->PreemptNewest({.max_num_requests = 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->num_freed_blocks, 3);
  EXPECT_EQ(r->num_freed_cached_blocks, 2);  // the two full prompt blocks; the third is partial
  while (sched->FindRequest("a") != nullptr) Step(*sched, &tokens);
  SchedulerOutput out = Step(*sched, &tokens);
  ASSERT_THAT(Ids(out), ElementsAre("c"));
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 8);  // resumed from the cached blocks
  while (sched->HasUnfinishedRequests()) Step(*sched, &tokens);
  EXPECT_EQ(tokens, Undisturbed());
}

TEST(SchedulerPreemptTest, AbortingAHeldRequestEndsTheHold) {
  auto sched = MakeScheduler();
  AddThree(*sched);
  Tokens tokens;
  Step(*sched, &tokens);
  ASSERT_TRUE(sched->PreemptNewest({.max_num_requests = 1}).ok());
  EXPECT_TRUE(sched->admission_hold().active());
  ASSERT_TRUE(sched->AbortRequest("c").ok());
  SchedulerOutput out = Step(*sched, &tokens);
  EXPECT_THAT(out.finished_ids, ElementsAre("c"));
  EXPECT_FALSE(sched->admission_hold().active());
}

TEST(SchedulerPreemptTest, PriorityPolicyPreemptsTheLeastUrgent) {
  auto sched = MakeScheduler(/*caching=*/false, /*priority=*/true);
  const std::pair<const char*, int32_t> requests[] = {{"low", 5}, {"urgent", -3}, {"mid", 1}};
  for (const auto& [id, priority] : requests) {
    SamplingParams params;
    params.max_tokens = 4;
    params.priority = priority;
    ASSERT_TRUE(sched->AddRequest(std::make_unique<Request>(id, Iota(8), params, 0.0)).ok());
  }
  Tokens tokens;
  Step(*sched, &tokens);
  StatusOr<PreemptionResult> r = sched->PreemptNewest({.max_num_requests = 2});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->request_ids, ElementsAre("low", "mid"));
}

}  // namespace
}  // namespace pagellm
