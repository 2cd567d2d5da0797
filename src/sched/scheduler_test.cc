// Scheduler tests with block_size 4 and exact expectations worked out by hand.
#include "sched/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler_test_util.h"

namespace pagellm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing_util::FakeNextToken;
using testing_util::FakeSample;
using testing_util::Iota;
using testing_util::MakeRequest;

struct Opts {
  int32_t budget = 64;
  int32_t max_num_seqs = 8;
  int32_t num_blocks = 65;
  int32_t max_model_len = 64;
  bool caching = false;
  bool chunked = true;
  int32_t max_prefill_tokens_per_step = 0;
  int32_t long_prefill_token_threshold = 0;
  bool priority = false;
};

std::unique_ptr<Scheduler> MakeScheduler(const Opts& o) {
  SchedulerConfig config;
  config.batch = {.max_num_batched_tokens = o.budget, .max_num_seqs = o.max_num_seqs,
                  .enable_chunked_prefill = o.chunked,
                  .long_prefill_token_threshold = o.long_prefill_token_threshold,
                  .max_prefill_tokens_per_step = o.max_prefill_tokens_per_step};
  config.kv_cache = {.num_blocks = o.num_blocks, .block_size = 4,
                     .enable_prefix_caching = o.caching};
  config.max_model_len = o.max_model_len;
  config.priority_policy = o.priority;
  auto sched = Scheduler::Create(config);
  EXPECT_TRUE(sched.ok()) << sched.status();
  return std::move(sched).value();
}

std::vector<std::string> Ids(const SchedulerOutput& out) {
  std::vector<std::string> ids;
  for (const auto& s : out.scheduled) ids.push_back(s.request_id);
  return ids;
}
std::vector<int32_t> NumNew(const SchedulerOutput& out) {
  std::vector<int32_t> n;
  for (const auto& s : out.scheduled) n.push_back(s.num_new_tokens);
  return n;
}

// One engine step with the fake model.
SchedulerOutput Step(Scheduler& sched, std::vector<FinishedRequest>* finished = nullptr) {
  SchedulerOutput out = sched.Schedule();
  auto done = sched.UpdateFromOutput(out, FakeSample(sched, out));
  if (finished) finished->insert(finished->end(), done.begin(), done.end());
  return out;
}

TEST(SchedulerTest, RejectsBadRequestsAndConfigs) {
  auto sched = MakeScheduler({.num_blocks = 9, .max_model_len = 32});
  Status s = sched->AddRequest(MakeRequest("long", Iota(33)));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("33"), std::string::npos) << s;
  EXPECT_NE(s.message().find("32"), std::string::npos) << s;
  EXPECT_TRUE(sched->AddRequest(MakeRequest("fits", Iota(32))).ok());
  EXPECT_EQ(sched->AddRequest(MakeRequest("fits", Iota(3))).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(sched->AddRequest(MakeRequest("empty", {})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sched->AbortRequest("nope").code(), StatusCode::kNotFound);

  SchedulerConfig small;
  small.kv_cache = {.num_blocks = 8, .block_size = 4};  // 28 tokens < 32
  small.max_model_len = 32;
  EXPECT_FALSE(Scheduler::Create(small).ok());
}

TEST(SchedulerTest, TokenBudgetMaxNumSeqsAndChunking) {
  auto sched = MakeScheduler({.budget = 16, .max_num_seqs = 3});
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(sched->AddRequest(MakeRequest("r" + std::to_string(i), Iota(10, 100 * i), 5)).ok());
  }
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("r0", "r1"));
  EXPECT_THAT(NumNew(out), ElementsAre(10, 6));
  EXPECT_TRUE(out.scheduled[0].samples);
  EXPECT_FALSE(out.scheduled[1].samples);  // chunk ends inside the prompt
  EXPECT_THAT(out.scheduled[1].block_ids, ElementsAre(4, 5));
  EXPECT_EQ(out.total_num_new_tokens, 16);

  out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("r0", "r1", "r2"));  // running first, then admitted
  EXPECT_THAT(NumNew(out), ElementsAre(1, 4, 10));
  EXPECT_EQ(out.scheduled[1].num_computed_tokens, 6);
  EXPECT_THAT(out.scheduled[1].new_token_ids, ElementsAre(106, 107, 108, 109));
  EXPECT_TRUE(out.scheduled[1].samples);
  EXPECT_EQ(sched->num_running(), 3);

  out = Step(*sched);
  EXPECT_THAT(NumNew(out), ElementsAre(1, 1, 1));  // max_num_seqs: r3 must wait
  EXPECT_EQ(sched->num_waiting(), 2);

  std::vector<FinishedRequest> finished;
  for (int step = 0; step < 50 && sched->HasUnfinishedRequests(); ++step) {
    out = Step(*sched, &finished);
    EXPECT_LE(out.total_num_new_tokens, 16);
    EXPECT_LE(out.scheduled.size(), 3u);
  }
  EXPECT_FALSE(sched->HasUnfinishedRequests());
  EXPECT_EQ(finished.size(), 5u);
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 64);
}

TEST(SchedulerTest, DecodesGoFirstAndPrefillIsCapped) {
  auto sched = MakeScheduler({.budget = 8, .max_prefill_tokens_per_step = 4});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("short", Iota(3), 10)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(NumNew(out), ElementsAre(3));
  ASSERT_TRUE(sched->AddRequest(MakeRequest("long", Iota(40, 500), 2)).ok());
  for (int step = 0; step < 3; ++step) {
    out = Step(*sched);
    EXPECT_THAT(Ids(out), ElementsAre("short", "long"));
    EXPECT_THAT(NumNew(out), ElementsAre(1, 4));  // the prefill share, not the budget left
  }
}

TEST(SchedulerTest, PrefillCapAppliesOnlyWhileDecodesRun) {
  auto sched = MakeScheduler({.budget = 64, .max_prefill_tokens_per_step = 8});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("short", Iota(3), 2)).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("long", Iota(40, 500), 2)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(NumNew(out), ElementsAre(3, 40));  // nothing decodes yet: the full budget
  ASSERT_TRUE(sched->AddRequest(MakeRequest("next", Iota(30, 900), 2)).ok());
  out = Step(*sched);  // both decode (and finish); "next" gets the cap only
  EXPECT_THAT(Ids(out), ElementsAre("short", "long", "next"));
  EXPECT_THAT(NumNew(out), ElementsAre(1, 1, 8));
  EXPECT_EQ(sched->num_running_decodes(), 0);
  out = Step(*sched);  // no decode left: "next" takes the rest at once
  EXPECT_THAT(NumNew(out), ElementsAre(22));
  EXPECT_EQ(sched->num_running_decodes(), 1);
}

TEST(SchedulerTest, EngineSetCapIsRaisedToOneBlockSoPromptsProgress) {
  auto sched = MakeScheduler({.budget = 64, .max_prefill_tokens_per_step = 8});
  EXPECT_EQ(sched->max_prefill_tokens_per_step(), 8);
  sched->SetMaxPrefillTokensPerStep(1);
  EXPECT_EQ(sched->max_prefill_tokens_per_step(), 4);  // block_size
  ASSERT_TRUE(sched->AddRequest(MakeRequest("short", Iota(3), 20)).ok());
  Step(*sched);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("long", Iota(10, 500), 2)).ok());
  for (int32_t want : {4, 4, 2}) EXPECT_THAT(NumNew(Step(*sched)), ElementsAre(1, want));
  sched->SetMaxPrefillTokensPerStep(0);  // off: overrides the config's 8 too
  EXPECT_EQ(sched->max_prefill_tokens_per_step(), 0);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("big", Iota(30, 700), 2)).ok());
  EXPECT_THAT(NumNew(Step(*sched)), ElementsAre(1, 1, 30));
}

TEST(SchedulerTest, PrefillCapAndLongPrefillThresholdSplitAStepsPrefill) {
  auto sched = MakeScheduler({.budget = 64, .max_prefill_tokens_per_step = 5,
                              .long_prefill_token_threshold = 3});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("d", Iota(2), 10)).ok());
  Step(*sched);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("a", Iota(9, 100), 2)).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("b", Iota(9, 200), 2)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("d", "a", "b"));
  EXPECT_THAT(NumNew(out), ElementsAre(1, 3, 2));  // 3 per request, 5 per step
  out = Step(*sched);  // running first: a's next chunk, then b's
  EXPECT_THAT(NumNew(out), ElementsAre(1, 3, 2));
}

TEST(SchedulerTest, WithoutChunkingTheCapLetsOneWholePromptPerStep) {
  auto sched = MakeScheduler({.budget = 32, .max_model_len = 32, .chunked = false,
                              .max_prefill_tokens_per_step = 4});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("d", Iota(2), 10)).ok());
  Step(*sched);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("b", Iota(10, 100), 3)).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("c", Iota(6, 200), 3)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("d", "b"));  // b whole despite the cap; c waits
  EXPECT_THAT(NumNew(out), ElementsAre(1, 10));
  out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("d", "b", "c"));
  EXPECT_THAT(NumNew(out), ElementsAre(1, 1, 6));
}

TEST(SchedulerTest, WithoutChunkingAPromptWaitsUntilItFitsWhole) {
  auto sched = MakeScheduler({.budget = 32, .max_model_len = 32, .chunked = false});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("a", Iota(20), 3)).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("b", Iota(11, 50), 3)).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("c", Iota(3, 90), 3)).ok());
  SchedulerOutput out = Step(*sched);
  // a (20) + b (11) = 31 tokens; c (3) would make 34 > 32 and is not chunked.
  EXPECT_THAT(NumNew(out), ElementsAre(20, 11));
  out = Step(*sched);
  EXPECT_THAT(NumNew(out), ElementsAre(1, 1, 3));
}

TEST(SchedulerTest, PreemptsMostRecentAndResumesWithTheSameTokens) {
  // 6 usable blocks of 4 tokens; three 7-token prompts fill them exactly.
  const Opts opts{.num_blocks = 7, .max_model_len = 24};
  auto sched = MakeScheduler(opts);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(sched->AddRequest(MakeRequest("r" + std::to_string(i), Iota(7, 10 * i), 6)).ok());
  }
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(out.scheduled[2].block_ids, ElementsAre(5, 6));
  out = Step(*sched);  // decodes at position 7 still fit in the second block
  EXPECT_THAT(NumNew(out), ElementsAre(1, 1, 1));
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 0);

  out = Step(*sched);  // position 8 needs a third block each
  EXPECT_THAT(out.preempted_ids, ElementsAre("r2"));
  EXPECT_THAT(Ids(out), ElementsAre("r0", "r1"));
  EXPECT_THAT(out.scheduled[0].block_ids, ElementsAre(1, 2, 6));  // r2 freed tail first
  EXPECT_THAT(out.scheduled[1].block_ids, ElementsAre(3, 4, 5));
  const Request* r2 = sched->FindRequest("r2");
  EXPECT_EQ(r2->status(), RequestStatus::kPreempted);
  EXPECT_EQ(r2->num_preemptions(), 1);
  EXPECT_EQ(r2->num_computed_tokens(), 0);
  ASSERT_EQ(r2->num_output_tokens(), 2);
  const std::vector<int32_t> r2_tokens(r2->all_token_ids().begin(), r2->all_token_ids().end());

  std::vector<FinishedRequest> finished;
  for (int step = 0; step < 3; ++step) Step(*sched, &finished);  // r0, r1 reach 6 outputs
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0].status, RequestStatus::kFinishedLength);

  out = Step(*sched, &finished);  // r2 recomputes prompt + its 2 outputs
  ASSERT_THAT(Ids(out), ElementsAre("r2"));
  EXPECT_TRUE(out.scheduled[0].is_new);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 0);
  EXPECT_EQ(out.scheduled[0].new_token_ids, r2_tokens);
  EXPECT_THAT(out.finished_ids, ElementsAre("r0", "r1"));
  while (sched->HasUnfinishedRequests()) Step(*sched, &finished);

  // Same request alone, never preempted: identical continuation expected.
  std::vector<int32_t> expected = Iota(7, 20);
  for (int i = 0; i < 6; ++i) expected.push_back(FakeNextToken(expected));
  auto alone = MakeScheduler({});
  ASSERT_TRUE(alone->AddRequest(MakeRequest("r2", Iota(7, 20), 6)).ok());
  std::vector<int32_t> seen;
  while (alone->HasUnfinishedRequests()) {
    out = alone->Schedule();
    const std::vector<int32_t> sampled = FakeSample(*alone, out);
    seen.push_back(sampled[0]);
    alone->UpdateFromOutput(out, sampled);
  }
  EXPECT_EQ(seen, std::vector<int32_t>(expected.begin() + 7, expected.end()));
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 6);  // nothing leaked
}

std::unique_ptr<Request> WithPriority(const std::string& id, std::vector<int32_t> prompt, int32_t priority,
                                      double arrival_s) {
  SamplingParams params;
  params.max_tokens = 6;
  params.priority = priority;
  return std::make_unique<Request>(id, std::move(prompt), params, arrival_s);
}

// --scheduling-policy priority: the most urgent waiting request is admitted first
// (lower value, then arrival), and memory pressure preempts the least urgent running
// one, not the most recent; equal priorities keep fcfs order.
TEST(SchedulerTest, PriorityPolicyOrdersAdmissionAndPreemption) {
  auto sched = MakeScheduler({.max_num_seqs = 2, .num_blocks = 7, .max_model_len = 24, .priority = true});
  ASSERT_TRUE(sched->AddRequest(WithPriority("low", Iota(7, 10), 5, 0.0)).ok());
  ASSERT_TRUE(sched->AddRequest(WithPriority("mid", Iota(7, 20), 1, 1.0)).ok());
  ASSERT_TRUE(sched->AddRequest(WithPriority("urgent", Iota(7, 30), -3, 2.0)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("urgent", "mid"));  // two slots: "low" waits
  ASSERT_TRUE(sched->AddRequest(WithPriority("mid2", Iota(7, 40), 1, 3.0)).ok());
  std::vector<FinishedRequest> finished;
  while (sched->num_running() > 0) Step(*sched, &finished);
  EXPECT_EQ(finished[0].request_id, "urgent");

  // Memory pressure: three running requests outgrow 6 blocks; the least urgent yields.
  auto tight = MakeScheduler({.num_blocks = 7, .max_model_len = 24, .priority = true});
  ASSERT_TRUE(tight->AddRequest(WithPriority("b", Iota(7, 10), 0, 0.0)).ok());
  ASSERT_TRUE(tight->AddRequest(WithPriority("a", Iota(7, 20), 9, 1.0)).ok());
  ASSERT_TRUE(tight->AddRequest(WithPriority("c", Iota(7, 30), 0, 2.0)).ok());
  out = Step(*tight);
  EXPECT_THAT(Ids(out), ElementsAre("b", "c", "a"));
  Step(*tight);
  out = Step(*tight);  // position 8 needs a third block each
  EXPECT_THAT(out.preempted_ids, ElementsAre("a"));
  EXPECT_THAT(Ids(out), ElementsAre("b", "c"));
}

TEST(SchedulerTest, AbortFreesBlocksAtTheNextStep) {
  auto sched = MakeScheduler({});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("run", Iota(10), 20)).ok());
  Step(*sched);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("wait", Iota(5, 300), 20)).ok());
  ASSERT_TRUE(sched->AbortRequest("run").ok());
  ASSERT_TRUE(sched->AbortRequest("wait").ok());
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 64 - 3);  // not yet
  SchedulerOutput out = sched->Schedule();
  EXPECT_THAT(out.scheduled, IsEmpty());
  EXPECT_THAT(out.finished_ids, ElementsAre("run", "wait"));
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 64);
  EXPECT_FALSE(sched->HasUnfinishedRequests());
  EXPECT_EQ(sched->AbortRequest("run").code(), StatusCode::kNotFound);
}

TEST(SchedulerTest, SamplesOfOnePromptShareFullPromptBlocks) {
  auto sched = MakeScheduler({.caching = true});
  ASSERT_TRUE(sched->AddRequest(MakeRequest("s0", Iota(14), 3)).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("s1", Iota(14), 3)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(Ids(out), ElementsAre("s0"));  // s1 waits for s0's blocks
  out = Step(*sched);
  ASSERT_THAT(Ids(out), ElementsAre("s0", "s1"));
  EXPECT_EQ(out.scheduled[1].num_computed_tokens, 12);
  EXPECT_EQ(out.scheduled[1].num_new_tokens, 2);
  EXPECT_THAT(out.scheduled[0].block_ids, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(out.scheduled[1].block_ids, ElementsAre(1, 2, 3, 5));
  EXPECT_EQ(sched->FindRequest("s1")->num_cached_tokens(), 12);
  EXPECT_EQ(sched->kv_cache().prefix_cache_queries(), 28);
  EXPECT_EQ(sched->kv_cache().prefix_cache_hits(), 12);
  while (sched->HasUnfinishedRequests()) Step(*sched);
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 64);
}

TEST(SchedulerTest, EosAndEngineStopsFinishRequests) {
  auto sched = MakeScheduler({});
  const std::vector<int32_t> prompt = Iota(5);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("eos", prompt, 10, {FakeNextToken(prompt)})).ok());
  ASSERT_TRUE(sched->AddRequest(MakeRequest("str", Iota(5, 40), 10)).ok());
  SchedulerOutput out = sched->Schedule();
  const std::string stopped[] = {"str"};
  auto finished = sched->UpdateFromOutput(out, FakeSample(*sched, out), stopped);
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0].request_id, "eos");
  EXPECT_EQ(finished[0].status, RequestStatus::kFinishedStopped);
  EXPECT_EQ(finished[0].num_output_tokens, 1);
  EXPECT_EQ(finished[1].request_id, "str");
  EXPECT_THAT(sched->Schedule().finished_ids, ElementsAre("eos", "str"));
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 64);
}

}  // namespace
}  // namespace pagellm
