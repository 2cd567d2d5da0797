#include "sched/state_slot_pool.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

TEST(StateSlotPoolTest, HandsOutLowestFreeIdAndReusesFreedOnes) {
  StateSlotPool pool(3);
  EXPECT_TRUE(pool.enabled());
  EXPECT_EQ(pool.Allocate(), 0);
  EXPECT_EQ(pool.Allocate(), 1);
  EXPECT_EQ(pool.Allocate(), 2);
  EXPECT_EQ(pool.Allocate(), std::nullopt);
  EXPECT_EQ(pool.num_free_slots(), 0);
  pool.Free(1);
  pool.Free(0);
  EXPECT_EQ(pool.num_free_slots(), 2);
  EXPECT_EQ(pool.Allocate(), 0);
  EXPECT_EQ(pool.Allocate(), 1);
}

TEST(StateSlotPoolTest, EmptyPoolIsDisabled) {
  StateSlotPool pool(0);
  EXPECT_FALSE(pool.enabled());
  EXPECT_EQ(pool.Allocate(), std::nullopt);
}

TEST(StateSlotPoolDeathTest, DoubleFreeIsABug) {
  StateSlotPool pool(2);
  int32_t slot = *pool.Allocate();
  pool.Free(slot);
  EXPECT_DEATH(pool.Free(slot), "");
  EXPECT_DEATH(pool.Free(7), "");
}

}  // namespace
}  // namespace pagellm
