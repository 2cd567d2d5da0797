#include "sched/capacity_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler_test_util.h"

namespace pagellm {
namespace {

using ::testing::ElementsAre;
using testing_util::Iota;
using testing_util::MakeRequest;

class CapacitySchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 6 usable blocks of 4 tokens; prefix caching off so block reuse order is plain.
    kv_ = KvCacheManager::Create({.num_blocks = 7, .block_size = 4,
                                  .enable_prefix_caching = false}).value();
    for (int i = 0; i < 3; ++i) {
      reqs_.push_back(MakeRequest("r" + std::to_string(i), Iota(7, 10 * i)));
    }
  }

  // Admits all three 7-token prompts and marks them computed: blocks 1-2, 3-4, 5-6.
  void AdmitAll(CapacityScheduler& capacity) {
    for (auto& req : reqs_) {
      ASSERT_TRUE(capacity.TryAdmit(*req, 7, {}));
      req->set_status(RequestStatus::kRunning);
      req->set_num_computed_tokens(7);
      req->AppendOutputToken(100);
      running_.push_back(req.get());
    }
  }

  std::unique_ptr<KvCacheManager> kv_;
  std::vector<std::unique_ptr<Request>> reqs_;
  std::vector<Request*> running_;
};

TEST_F(CapacitySchedulerTest, AdmissionNeverPreempts) {
  CapacityScheduler capacity(kv_.get());
  AdmitAll(capacity);
  EXPECT_EQ(kv_->num_free_blocks(), 0);
  auto late = MakeRequest("late", Iota(3));
  EXPECT_FALSE(capacity.TryAdmit(*late, 3, {}));
  EXPECT_FALSE(kv_->HasRequest("late"));
  EXPECT_EQ(kv_->num_free_blocks(), 0);
}

TEST_F(CapacitySchedulerTest, PreemptsMostRecentlyAdmittedFirst) {
  CapacityScheduler capacity(kv_.get());
  AdmitAll(capacity);
  EXPECT_THAT(kv_->GetBlockIds("r2"), ElementsAre(5, 6));
  std::vector<Request*> preempted;

  // r0's 9th token needs a third block: r2 (the back) is preempted, r0 gets block 6
  // (r2's blocks were freed tail first: queue 6, 5).
  Request& r0 = *reqs_[0];
  r0.set_num_computed_tokens(8);
  r0.AppendOutputToken(101);
  ASSERT_TRUE(capacity.ReserveOrPreempt(r0, 1, &running_, &preempted));
  EXPECT_THAT(preempted, ElementsAre(reqs_[2].get()));
  EXPECT_THAT(running_, ElementsAre(reqs_[0].get(), reqs_[1].get()));
  EXPECT_THAT(kv_->GetBlockIds("r0"), ElementsAre(1, 2, 6));
  EXPECT_EQ(reqs_[2]->status(), RequestStatus::kPreempted);
  EXPECT_EQ(reqs_[2]->num_computed_tokens(), 0);
  EXPECT_EQ(reqs_[2]->num_output_tokens(), 1);
  EXPECT_FALSE(kv_->HasRequest("r2"));

  // r0 now wants 30 tokens (8 blocks > 6 usable): r1 goes, then r0 itself.
  for (int i = 0; i < 21; ++i) r0.AppendOutputToken(200 + i);
  ASSERT_EQ(r0.num_tokens(), 30);
  EXPECT_FALSE(capacity.ReserveOrPreempt(r0, 30 - 8, &running_, &preempted));
  EXPECT_THAT(preempted, ElementsAre(reqs_[2].get(), reqs_[1].get(), reqs_[0].get()));
  EXPECT_TRUE(running_.empty());
  EXPECT_EQ(kv_->num_free_blocks(), 6);
  EXPECT_EQ(kv_->num_requests(), 0);
}

}  // namespace
}  // namespace pagellm
