#include "kv/free_block_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

using ::testing::ElementsAre;

TEST(FreeBlockQueueTest, FifoOrderAndMiddleRemoval) {
  FreeBlockQueue queue(6);
  EXPECT_TRUE(queue.empty());
  for (int32_t id : {4, 1, 5, 0, 2}) queue.PushBack(id);
  EXPECT_EQ(queue.size(), 5);
  EXPECT_THAT(queue.ToVector(), ElementsAre(4, 1, 5, 0, 2));

  queue.Remove(5);  // middle
  queue.Remove(2);  // tail
  queue.Remove(4);  // head
  EXPECT_THAT(queue.ToVector(), ElementsAre(1, 0));
  EXPECT_FALSE(queue.Contains(5));
  EXPECT_TRUE(queue.Contains(0));

  queue.PushBack(5);
  EXPECT_EQ(queue.PopFront(), 1);
  EXPECT_EQ(queue.PopFront(), 0);
  EXPECT_EQ(queue.PopFront(), 5);
  EXPECT_TRUE(queue.empty());
  EXPECT_THAT(queue.ToVector(), ElementsAre());
}

TEST(FreeBlockQueueDeathTest, DoublePushIsABug) {
  FreeBlockQueue queue(3);
  queue.PushBack(1);
  EXPECT_DEATH(queue.PushBack(1), "check failed");
  EXPECT_DEATH(queue.Remove(2), "check failed");
}

}  // namespace
}  // namespace pagellm
