#include "sched/state_snapshot_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagellm {
namespace {

BlockHash H(int32_t i) {
  std::vector<int32_t> tokens{i, i + 1};
  return HashBlockTokens(kRootBlockHash, tokens, "");
}

TEST(StateSnapshotCacheTest, PendingEntriesAreInvisibleUntilCommitted) {
  StateSnapshotCache cache(2);
  EXPECT_EQ(cache.Insert(H(1)), 0);
  EXPECT_EQ(cache.Lookup(H(1)), std::nullopt);  // its save has not run yet
  EXPECT_EQ(cache.Insert(H(1)), std::nullopt);  // already has (or is getting) a snapshot
  cache.CommitPending();
  EXPECT_EQ(cache.Lookup(H(1)), 0);
  EXPECT_EQ(cache.Lookup(H(2)), std::nullopt);
}

TEST(StateSnapshotCacheTest, EvictsLeastRecentlyUsedAndReusesItsId) {
  StateSnapshotCache cache(2);
  EXPECT_EQ(cache.Insert(H(1)), 0);
  EXPECT_EQ(cache.Insert(H(2)), 1);
  cache.CommitPending();
  EXPECT_EQ(cache.Lookup(H(1)), 0);  // H(2) is now the least recently used
  EXPECT_EQ(cache.Insert(H(3)), 1);
  cache.CommitPending();
  EXPECT_EQ(cache.num_evictions(), 1);
  EXPECT_EQ(cache.Lookup(H(2)), std::nullopt);
  EXPECT_EQ(cache.Lookup(H(3)), 1);
  EXPECT_EQ(cache.Insert(H(4)), 0);  // H(1) least recent now
  cache.CommitPending();
  EXPECT_EQ(cache.Lookup(H(1)), std::nullopt);
  EXPECT_EQ(cache.num_cached(), 2);
}

TEST(StateSnapshotCacheTest, EmptyPoolNeverSnapshots) {
  StateSnapshotCache cache(0);
  EXPECT_EQ(cache.Insert(H(1)), std::nullopt);
  EXPECT_EQ(cache.Lookup(H(1)), std::nullopt);
}

}  // namespace
}  // namespace pagellm
