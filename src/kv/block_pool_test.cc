#include "kv/block_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

using ::testing::ElementsAre;

BlockHash TestHash(int32_t token) {
  const int32_t tokens[] = {token, token, token, token};
  return HashBlockTokens(kRootBlockHash, tokens, "");
}

TEST(BlockHashTest, ChainDependsOnParentTokensAndKey) {
  const int32_t a[] = {1, 2, 3, 4};
  const int32_t b[] = {1, 2, 3, 5};
  const BlockHash h = HashBlockTokens(kRootBlockHash, a, "");
  EXPECT_EQ(h, HashBlockTokens(kRootBlockHash, a, ""));
  EXPECT_NE(h, HashBlockTokens(kRootBlockHash, b, ""));
  EXPECT_NE(h, HashBlockTokens(h, a, ""));                 // same tokens, other parent
  EXPECT_NE(h, HashBlockTokens(kRootBlockHash, a, "lora-a"));
  EXPECT_NE(h.low, h.high);
  // Lengths are hashed: moving bytes between the key and the tokens must not alias.
  const int32_t c[] = {1, 2, 3};
  EXPECT_NE(HashBlockTokens(kRootBlockHash, c, std::string_view("\x04\0\0\0", 4)),
            HashBlockTokens(kRootBlockHash, a, ""));
}

TEST(BlockHashTest, AppendBlockHashesChainsFromRoot) {
  const std::vector<int32_t> tokens = {1, 1, 2, 2, 3, 3, 9};
  std::vector<BlockHash> hashes;
  AppendBlockHashes(tokens, 2, 2, "k", &hashes);
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], HashBlockTokens(kRootBlockHash, std::span(tokens).subspan(0, 2), "k"));
  EXPECT_EQ(hashes[1], HashBlockTokens(hashes[0], std::span(tokens).subspan(2, 2), "k"));
  AppendBlockHashes(tokens, 2, 3, "k", &hashes);  // continues, does not recompute
  ASSERT_EQ(hashes.size(), 3u);
  EXPECT_EQ(hashes[2], HashBlockTokens(hashes[1], std::span(tokens).subspan(4, 2), "k"));
}

TEST(BlockPoolTest, NullBlockIsNeverHandedOut) {
  BlockPool pool(4, true);
  EXPECT_EQ(pool.num_usable_blocks(), 3);
  EXPECT_EQ(pool.num_free_blocks(), 3);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(1, 2, 3));
  EXPECT_THAT(pool.AllocateBlocks(3), ElementsAre(1, 2, 3));
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_DOUBLE_EQ(pool.usage(), 1.0);
}

TEST(BlockPoolTest, AllocateFreeOrderAndUsage) {
  BlockPool pool(11, true);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.0);
  const std::vector<int32_t> ids = pool.AllocateBlocks(4);
  EXPECT_THAT(ids, ElementsAre(1, 2, 3, 4));
  EXPECT_DOUBLE_EQ(pool.usage(), 0.4);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(5, 6, 7, 8, 9, 10));
  const int32_t tail_first[] = {4, 3, 2, 1};
  pool.FreeBlocks(tail_first);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(5, 6, 7, 8, 9, 10, 4, 3, 2, 1));
  EXPECT_DOUBLE_EQ(pool.usage(), 0.0);
  // The next allocation reuses the least recently freed block first.
  EXPECT_THAT(pool.AllocateBlocks(7), ElementsAre(5, 6, 7, 8, 9, 10, 4));
}

TEST(BlockPoolTest, SharedBlockReturnsToQueueOnlyAtRefZero) {
  BlockPool pool(5, true);
  const std::vector<int32_t> ids = pool.AllocateBlocks(1);
  ASSERT_TRUE(pool.CacheBlock(ids[0], TestHash(7)));
  pool.TouchBlocks(ids);
  EXPECT_EQ(pool.ref_count(1), 2);
  pool.FreeBlocks(ids);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(2, 3, 4));
  pool.FreeBlocks(ids);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(2, 3, 4, 1));
}

TEST(BlockPoolTest, CachedFreeBlockHitLeavesQueueFromTheMiddle) {
  BlockPool pool(6, true);
  const std::vector<int32_t> ids = pool.AllocateBlocks(3);  // 1 2 3
  ASSERT_TRUE(pool.CacheBlock(2, TestHash(2)));
  const int32_t tail_first[] = {3, 2, 1};
  pool.FreeBlocks(tail_first);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(4, 5, 3, 2, 1));
  const std::optional<int32_t> hit = pool.LookupCachedBlock(TestHash(2));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, 2);
  pool.TouchBlocks(std::span(&*hit, 1));
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_THAT(pool.FreeQueueOrder(), ElementsAre(4, 5, 3, 1));
}

TEST(BlockPoolTest, ReusingACachedBlockEvictsItsHash) {
  BlockPool pool(3, true);  // usable: 1, 2
  std::vector<int32_t> ids = pool.AllocateBlocks(2);
  ASSERT_TRUE(pool.CacheBlock(1, TestHash(1)));
  ASSERT_TRUE(pool.CacheBlock(2, TestHash(2)));
  EXPECT_FALSE(pool.CacheBlock(2, TestHash(3)));  // already cached
  const int32_t tail_first[] = {2, 1};
  pool.FreeBlocks(tail_first);
  EXPECT_EQ(pool.num_cached_blocks(), 2);
  EXPECT_THAT(pool.AllocateBlocks(1), ElementsAre(2));  // LRU: freed first
  EXPECT_FALSE(pool.LookupCachedBlock(TestHash(2)).has_value());
  EXPECT_FALSE(pool.is_cached(2));
  EXPECT_EQ(pool.LookupCachedBlock(TestHash(1)), std::optional<int32_t>(1));
  EXPECT_EQ(pool.num_cached_blocks(), 1);
}

TEST(BlockPoolTest, DuplicateHashKeepsFirstBlockCanonical) {
  BlockPool pool(4, true);
  pool.AllocateBlocks(2);
  EXPECT_TRUE(pool.CacheBlock(1, TestHash(5)));
  EXPECT_FALSE(pool.CacheBlock(2, TestHash(5)));
  EXPECT_EQ(pool.LookupCachedBlock(TestHash(5)), std::optional<int32_t>(1));
  EXPECT_FALSE(pool.is_cached(2));
}

TEST(BlockPoolTest, CachingDisabledCachesNothing) {
  BlockPool pool(4, false);
  pool.AllocateBlocks(1);
  EXPECT_FALSE(pool.CacheBlock(1, TestHash(1)));
  EXPECT_FALSE(pool.LookupCachedBlock(TestHash(1)).has_value());
}

TEST(BlockPoolTest, ResetPrefixCacheOnlyWhenIdle) {
  BlockPool pool(4, true);
  std::vector<int32_t> ids = pool.AllocateBlocks(1);
  ASSERT_TRUE(pool.CacheBlock(1, TestHash(1)));
  EXPECT_FALSE(pool.ResetPrefixCache());
  pool.FreeBlocks(ids);
  EXPECT_TRUE(pool.ResetPrefixCache());
  EXPECT_FALSE(pool.LookupCachedBlock(TestHash(1)).has_value());
  EXPECT_EQ(pool.num_free_blocks(), 3);
}

TEST(BlockPoolDeathTest, FreeingAFreeBlockIsABug) {
  BlockPool pool(4, true);
  const int32_t id = 1;
  EXPECT_DEATH(pool.FreeBlocks(std::span(&id, 1)), "check failed");
  const int32_t null_id = BlockPool::kNullBlockId;
  EXPECT_DEATH(pool.FreeBlocks(std::span(&null_id, 1)), "check failed");
}

}  // namespace
}  // namespace pagellm
