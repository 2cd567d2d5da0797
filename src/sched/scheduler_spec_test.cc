// Scheduler with speculative drafts (block_size 4): drafts ride behind a decode within
// the step budget and max_tokens; accepted ones advance the computed tokens, rejected
// ones give their slots back; blocks filled by accepted drafts reach the prefix cache
// with the hashes of the tokens they really hold; a hybrid request rolls its state back
// through its checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace pagellm {
namespace {

using ::testing::ElementsAre;
using testing_util::Iota;
using testing_util::MakeRequest;

std::unique_ptr<Scheduler> Make(int32_t budget = 64, int32_t num_state_slots = 0, bool caching = true) {
  SchedulerConfig config;
  config.batch = {.max_num_batched_tokens = budget, .max_num_seqs = 4};
  config.kv_cache = {.num_blocks = 33, .block_size = 4, .enable_prefix_caching = caching};
  config.max_model_len = 64;
  config.num_state_slots = num_state_slots;
  config.spec_checkpoint_base = num_state_slots > 0 ? 0 : -1;
  auto sched = Scheduler::Create(config);
  EXPECT_TRUE(sched.ok()) << sched.status();
  return std::move(sched).value();
}

// Runs the prompt (0, 1, ..., prompt_len - 1) and samples token 100.
void Prefill(Scheduler& s, const std::string& id, int32_t max_tokens = 20, int32_t prompt_len = 6) {
  ASSERT_TRUE(s.AddRequest(MakeRequest(id, Iota(prompt_len), max_tokens)).ok());
  SchedulerOutput out = s.Schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  std::vector<std::vector<int32_t>> produced = {{100}};
  s.UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced));
}

TEST(SchedulerSpecTest, DraftsRideBehindTheDecode) {
  auto s = Make();
  Prefill(*s, "a");
  s->SetSpecTokens("a", {101, 102, 103});
  SchedulerOutput out = s->Schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  const ScheduledRequest& r = out.scheduled[0];
  EXPECT_EQ(r.num_new_tokens, 4);
  EXPECT_EQ(r.num_spec_tokens, 3);
  EXPECT_THAT(r.new_token_ids, ElementsAre(100, 101, 102, 103));
  EXPECT_TRUE(r.samples);
  EXPECT_EQ(out.total_num_new_tokens, 4);
  EXPECT_EQ(r.block_ids.size(), 3u);  // positions 0..9
  // Two drafts accepted, then 7 sampled instead of 103.
  std::vector<std::vector<int32_t>> produced = {{101, 102, 7}};
  s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced));
  const Request* req = s->FindRequest("a");
  EXPECT_THAT(req->output_token_ids(), ElementsAre(100, 101, 102, 7));
  EXPECT_EQ(req->num_computed_tokens(), 9);  // prompt 6 + 100, 101, 102
  EXPECT_TRUE(req->spec_token_ids().empty());
  // The block for position 10 (rejected draft 103) was never needed: 3 blocks held.
  EXPECT_EQ(s->kv_cache().GetBlockIds("a").size(), 3u);
  // Blocks 0 and 1 (positions 0..7) are full of known tokens and committed.
  EXPECT_EQ(s->kv_cache().GetBlockHashes("a").size(), 2u);
}

TEST(SchedulerSpecTest, RejectedDraftSlotsAreReleased) {
  auto s = Make();
  Prefill(*s, "a");
  const int32_t free_before = s->kv_cache().num_free_blocks();
  s->SetSpecTokens("a", {1, 2, 3, 4, 5, 6, 7});  // positions 6..13: blocks 1..3
  SchedulerOutput out = s->Schedule();
  ASSERT_EQ(out.scheduled[0].num_spec_tokens, 7);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), free_before - 2);
  std::vector<std::vector<int32_t>> produced = {{9}};  // nothing accepted
  s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced));
  EXPECT_EQ(s->kv_cache().num_free_blocks(), free_before);  // 8 tokens: 2 blocks again
  EXPECT_EQ(s->FindRequest("a")->num_computed_tokens(), 7);
}

TEST(SchedulerSpecTest, BoundedByBudgetMaxTokensAndStops) {
  auto s = Make(/*budget=*/3);
  Prefill(*s, "a", /*max_tokens=*/4, /*prompt_len=*/3);
  s->SetSpecTokens("a", {1, 2, 3, 4});
  SchedulerOutput out = s->Schedule();
  EXPECT_EQ(out.scheduled[0].num_spec_tokens, 2);  // budget 3 = the decode + 2 drafts
  std::vector<std::vector<int32_t>> produced = {{1, 2, 8}};
  auto finished = s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced));
  ASSERT_EQ(finished.size(), 1u);  // 100, 1, 2, 8: max_tokens 4 reached
  EXPECT_EQ(finished[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(finished[0].num_output_tokens, 4);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 32);

  auto t = Make();
  Prefill(*t, "b", /*max_tokens=*/3);
  t->SetSpecTokens("b", {1, 2, 3, 4});
  out = t->Schedule();
  EXPECT_EQ(out.scheduled[0].num_spec_tokens, 1);  // 1 output so far: at most 2 more
}

TEST(SchedulerSpecTest, AcceptedDraftBlocksAreCachedUnderTheirRealHashes) {
  auto s = Make();
  Prefill(*s, "a");
  s->SetSpecTokens("a", {6, 7, 8, 9, 10});  // with 100 at position 6: 0..5, 100, 6..10
  SchedulerOutput out = s->Schedule();
  std::vector<std::vector<int32_t>> produced = {{6, 7, 8, 9, 10, 11}};  // all accepted + bonus
  s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced));
  const Request* a = s->FindRequest("a");
  EXPECT_EQ(a->num_computed_tokens(), 12);
  // A new request whose prompt is a's first 13 tokens hits its 3 full blocks, the last
  // two filled (partly) by accepted drafts and hashed at commit.
  std::vector<int32_t> prompt(a->all_token_ids().begin(), a->all_token_ids().begin() + 13);
  ASSERT_TRUE(s->AddRequest(MakeRequest("b", prompt, 2)).ok());
  s->Schedule();
  const Request* b = s->FindRequest("b");
  EXPECT_EQ(b->num_cached_tokens(), 12);
}

TEST(SchedulerSpecTest, HybridRejectionRollsBackThroughTheCheckpoint) {
  auto s = Make(64, /*num_state_slots=*/2, /*caching=*/false);
  Prefill(*s, "a");
  s->SetSpecTokens("a", {1, 2, 3});
  SchedulerOutput out = s->Schedule();
  const ScheduledRequest& r = out.scheduled[0];
  ASSERT_GE(r.state_slot, 0);
  EXPECT_EQ(r.checkpoint_snapshot, r.state_slot);  // base 0 + slot
  EXPECT_EQ(r.restore_snapshot, -1);
  std::vector<std::vector<int32_t>> produced = {{1, 9}};  // 2 and 3 rejected
  s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced));
  const Request* a = s->FindRequest("a");
  // The state absorbed 1, 2, 3: recompute from the checkpoint (before 100).
  EXPECT_EQ(a->num_computed_tokens(), 6);
  out = s->Schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].restore_snapshot, out.scheduled[0].state_slot);
  EXPECT_THAT(out.scheduled[0].new_token_ids, ElementsAre(100, 1, 9));
  std::vector<std::vector<int32_t>> next = {{5}};
  s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(next));
  EXPECT_EQ(a->num_computed_tokens(), 9);
  // All accepted: no rollback, the state is right as it is.
  s->SetSpecTokens("a", {6, 7});
  out = s->Schedule();
  EXPECT_EQ(out.scheduled[0].restore_snapshot, -1);
  std::vector<std::vector<int32_t>> all = {{6, 7, 8}};
  s->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(all));
  EXPECT_EQ(a->num_computed_tokens(), 12);
  EXPECT_FALSE(a->restore_checkpoint());
}

TEST(SchedulerSpecTest, HybridWithoutCheckpointsGetsNoDrafts) {
  SchedulerConfig config;
  config.batch = {.max_num_batched_tokens = 64, .max_num_seqs = 2};
  config.kv_cache = {.num_blocks = 33, .block_size = 4, .enable_prefix_caching = false};
  config.max_model_len = 64;
  config.num_state_slots = 2;
  auto s = std::move(Scheduler::Create(config)).value();
  Prefill(*s, "a");
  s->SetSpecTokens("a", {1, 2});
  EXPECT_EQ(s->Schedule().scheduled[0].num_spec_tokens, 0);
}

}  // namespace
}  // namespace pagellm
