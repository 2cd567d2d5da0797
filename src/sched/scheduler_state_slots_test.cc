// Scheduler + state slots (hybrid models): admission needs a free slot AND blocks;
// preemption, abort and completion give the slot back; exact ids worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace pagellm {
namespace {

using ::testing::ElementsAre;
using testing_util::FakeSample;
using testing_util::Iota;
using testing_util::MakeRequest;

std::unique_ptr<Scheduler> MakeHybridScheduler(int32_t num_slots, int32_t num_blocks, int32_t max_model_len = 64,
                                               int32_t num_snapshots = 0) {
  SchedulerConfig config;
  config.batch = {.max_num_batched_tokens = 64, .max_num_seqs = 8, .enable_chunked_prefill = true};
  config.kv_cache = {.num_blocks = num_blocks, .block_size = 4, .enable_prefix_caching = num_snapshots > 0};
  config.max_model_len = max_model_len;
  config.num_state_slots = num_slots;
  config.num_state_snapshots = num_snapshots;
  config.state_snapshot_interval_blocks = 2;  // a boundary every 8 tokens
  auto sched = Scheduler::Create(config);
  EXPECT_TRUE(sched.ok()) << sched.status();
  return std::move(sched).value();
}

std::vector<int32_t> Slots(const SchedulerOutput& out) {
  std::vector<int32_t> slots;
  for (const auto& s : out.scheduled) slots.push_back(s.state_slot);
  return slots;
}

SchedulerOutput Step(Scheduler& sched) {
  SchedulerOutput out = sched.Schedule();
  sched.UpdateFromOutput(out, FakeSample(sched, out));
  return out;
}

TEST(SchedulerStateSlotsTest, AdmissionWaitsForAFreeSlotEvenWithBlocksLeft) {
  auto sched = MakeHybridScheduler(/*num_slots=*/2, /*num_blocks=*/65);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sched->AddRequest(MakeRequest("r" + std::to_string(i), Iota(5, 10 * i), 2)).ok());
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(Slots(out), ElementsAre(0, 1));  // r2 waits: max_num_seqs 8 but only 2 slots
  EXPECT_EQ(sched->num_waiting(), 1);
  EXPECT_EQ(sched->state_slots().num_free_slots(), 0);
  out = Step(*sched);  // r0, r1 decode their 2nd and last token and finish
  EXPECT_THAT(Slots(out), ElementsAre(0, 1));
  EXPECT_EQ(sched->state_slots().num_free_slots(), 2);
  out = Step(*sched);
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request_id, "r2");
  EXPECT_EQ(out.scheduled[0].state_slot, 0);  // lowest free id reused
  while (sched->HasUnfinishedRequests()) Step(*sched);
  EXPECT_EQ(sched->state_slots().num_free_slots(), 2);
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 64);
}

TEST(SchedulerStateSlotsTest, PreemptionAndAbortReleaseTheSlot) {
  // 6 usable blocks of 4: three 7-token prompts fill them; position 8 preempts r2.
  auto sched = MakeHybridScheduler(/*num_slots=*/3, /*num_blocks=*/7, /*max_model_len=*/24);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sched->AddRequest(MakeRequest("r" + std::to_string(i), Iota(7, 10 * i), 6)).ok());
  EXPECT_THAT(Slots(Step(*sched)), ElementsAre(0, 1, 2));
  Step(*sched);
  SchedulerOutput out = Step(*sched);
  EXPECT_THAT(out.preempted_ids, ElementsAre("r2"));
  EXPECT_EQ(sched->FindRequest("r2")->state_slot(), -1);
  EXPECT_EQ(sched->state_slots().num_free_slots(), 1);
  ASSERT_TRUE(sched->AbortRequest("r1").ok());
  out = Step(*sched);
  EXPECT_THAT(out.finished_ids, ElementsAre("r1"));
  // r1's slot and blocks are back: r2 resumes from position 0 in the lowest free slot.
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[1].request_id, "r2");
  EXPECT_EQ(out.scheduled[1].num_computed_tokens, 0);
  EXPECT_EQ(out.scheduled[1].state_slot, 1);
  while (sched->HasUnfinishedRequests()) Step(*sched);
  EXPECT_EQ(sched->state_slots().num_free_slots(), 3);
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), 6);
}

TEST(SchedulerStateSlotsTest, SnapshotsCutChunksAndPrefixHitsStopAtTheDeepestSnapshot) {
  auto sched = MakeHybridScheduler(/*num_slots=*/2, /*num_blocks=*/65, /*max_model_len=*/64, /*num_snapshots=*/4);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("a", Iota(21), 1)).ok());
  SchedulerOutput out = Step(*sched);  // [0, 21) cut at the last boundary inside it: 16
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 16);
  EXPECT_FALSE(out.scheduled[0].samples);
  EXPECT_EQ(out.scheduled[0].restore_snapshot, -1);
  EXPECT_EQ(out.scheduled[0].save_snapshot, 0);  // state after token 16
  out = Step(*sched);  // the rest, [16, 21): no boundary at its end
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 5);
  EXPECT_EQ(out.scheduled[0].save_snapshot, -1);
  EXPECT_FALSE(sched->HasUnfinishedRequests());

  // Shares 20 tokens = 5 cached KV blocks with "a", but the deepest snapshot is at 16.
  std::vector<int32_t> prompt = Iota(20);
  prompt.push_back(99);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("b", prompt, 1)).ok());
  out = Step(*sched);
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 16);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 5);
  EXPECT_EQ(out.scheduled[0].restore_snapshot, 0);
  EXPECT_EQ(sched->FindRequest("b"), nullptr);  // finished after its one token
  EXPECT_EQ(sched->kv_cache().prefix_cache_hits(), 16);

  // A prompt diverging inside the first 8 tokens hits nothing.
  std::vector<int32_t> other = Iota(21);
  other[5] = 1000;
  ASSERT_TRUE(sched->AddRequest(MakeRequest("c", other, 1)).ok());
  out = Step(*sched);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 0);
  EXPECT_EQ(out.scheduled[0].restore_snapshot, -1);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 16);
}

TEST(SchedulerStateSlotsTest, AttentionOnlySchedulerHoldsNoSlots) {
  auto sched = MakeHybridScheduler(/*num_slots=*/0, /*num_blocks=*/65);
  ASSERT_TRUE(sched->AddRequest(MakeRequest("a", Iota(5), 2)).ok());
  EXPECT_THAT(Slots(Step(*sched)), ElementsAre(-1));
}

}  // namespace
}  // namespace pagellm
