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

TEST(StateSnapshotCacheTest, CountsSavesEvictionsAndEntriesInUse) {
  StateSnapshotCache cache(3);
  EXPECT_EQ(cache.num_saves(), 0);
  for (int32_t i = 1; i <= 3; ++i) EXPECT_EQ(cache.Insert(H(i)), i - 1);
  EXPECT_EQ(cache.Insert(H(2)), std::nullopt);  // already there: no save
  cache.CommitPending();
  EXPECT_EQ(cache.num_saves(), 3);
  EXPECT_EQ(cache.num_evictions(), 0);
  EXPECT_EQ(cache.num_cached(), 3);
  EXPECT_EQ(cache.Lookup(H(1)), 0);  // H(2) becomes the least recently used
  EXPECT_EQ(cache.Lookup(H(9)), std::nullopt);
  EXPECT_EQ(cache.Insert(H(4)), 1);  // evicts H(2)
  EXPECT_EQ(cache.Insert(H(5)), 2);  // evicts H(3)
  EXPECT_EQ(cache.Insert(H(6)), 0);  // evicts H(1)
  EXPECT_EQ(cache.Insert(H(7)), 1);  // evicts H(4) while still pending
  cache.CommitPending();
  EXPECT_EQ(cache.num_saves(), 7);
  EXPECT_EQ(cache.num_evictions(), 4);
  EXPECT_EQ(cache.num_cached(), 3);  // never more than the pool
  EXPECT_EQ(cache.Lookup(H(4)), std::nullopt);
  EXPECT_EQ(cache.Lookup(H(5)), 2);
}

TEST(StateSnapshotCacheTest, EmptyPoolNeverSnapshots) {
  StateSnapshotCache cache(0);
  EXPECT_EQ(cache.Insert(H(1)), std::nullopt);
  EXPECT_EQ(cache.Lookup(H(1)), std::nullopt);
  EXPECT_EQ(cache.num_saves(), 0);
  EXPECT_EQ(cache.num_cached(), 0);
}

}  // namespace
}  // namespace pagellm
