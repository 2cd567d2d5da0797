#include "sched/admission_hold.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

TEST(AdmissionHoldTest, GatesUntilEveryHeldRequestLeftTheQueue) {
  AdmissionHold hold;
  EXPECT_FALSE(hold.active());
  EXPECT_TRUE(hold.Allows(1.0, /*any_running=*/true));  // no hold: anything goes
  hold.Begin({"r7", "r6"}, 0.5);
  EXPECT_TRUE(hold.active());
  EXPECT_EQ(hold.num_held(), 2);
  EXPECT_TRUE(hold.Allows(0.5, true));
  EXPECT_FALSE(hold.Allows(0.51, true));
  EXPECT_TRUE(hold.Allows(0.9, /*any_running=*/false));  // alone it always runs
  hold.OnLeftQueue("unrelated");
  EXPECT_EQ(hold.num_held(), 2);
  hold.OnLeftQueue("r6");
  EXPECT_FALSE(hold.Allows(0.51, true));
  hold.OnLeftQueue("r7");
  EXPECT_FALSE(hold.active());
  EXPECT_TRUE(hold.Allows(0.99, true));
  EXPECT_DOUBLE_EQ(hold.ceiling(), 1.0);
}

TEST(AdmissionHoldTest, ALaterReclaimSetsTheCeilingAndNothingPreemptedHoldsNothing) {
  AdmissionHold hold;
  hold.Begin({}, 0.2);
  EXPECT_FALSE(hold.active());
  hold.Begin({"a"}, 0.2);
  hold.Begin({"b"}, 0.6);
  EXPECT_DOUBLE_EQ(hold.ceiling(), 0.6);
  hold.OnLeftQueue("b");
  EXPECT_TRUE(hold.active());  // "a" still waits
}

}  // namespace
}  // namespace pagellm
