// Exact-id tests in the style of vLLM's tests/v1/core/test_prefix_caching.py, with
// block_size 4 and 11 blocks (block 0 is the null block, 1..10 usable).
#include "kv/kv_cache_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

using ::testing::ElementsAre;

constexpr int32_t kBlockSize = 4;

std::unique_ptr<KvCacheManager> MakeManager(int32_t num_blocks = 11, bool caching = true) {
  auto kv = KvCacheManager::Create(
      {.num_blocks = num_blocks, .block_size = kBlockSize, .enable_prefix_caching = caching});
  EXPECT_TRUE(kv.ok()) << kv.status();
  return std::move(kv).value();
}

// Three full common blocks (tokens 0,0,0,0,1,1,1,1,2,2,2,2) followed by `tail`.
std::vector<int32_t> WithCommonPrefix(std::vector<int32_t> tail) {
  std::vector<int32_t> tokens;
  for (int32_t b = 0; b < 3; ++b) tokens.insert(tokens.end(), kBlockSize, b);
  tokens.insert(tokens.end(), tail.begin(), tail.end());
  return tokens;
}

struct Req {
  Req(std::string id_in, std::vector<int32_t> tokens_in, std::string key = "")
      : id(std::move(id_in)), tokens(std::move(tokens_in)), extra_key(std::move(key)) {}
  std::string id;
  std::vector<int32_t> tokens;
  int32_t num_computed_tokens = 0;
  std::string extra_key;
  KvSequence seq() const { return {id, tokens, num_computed_tokens, extra_key}; }
};

// Admits `req` with whatever prefix hits exist and computes it whole in one step.
ComputedBlocks AdmitAndCompute(KvCacheManager& kv, Req& req) {
  ComputedBlocks hits = kv.GetComputedBlocks(req.seq());
  const int32_t num_new = static_cast<int32_t>(req.tokens.size()) - hits.num_computed_tokens;
  EXPECT_TRUE(kv.AllocateSlots(req.seq(), num_new, hits).has_value());
  req.num_computed_tokens = static_cast<int32_t>(req.tokens.size());
  kv.CommitComputedBlocks(req.seq());
  return hits;
}

TEST(KvCacheManagerTest, RejectsBadConfig) {
  EXPECT_FALSE(KvCacheManager::Create({.num_blocks = 1, .block_size = 4}).ok());
  EXPECT_FALSE(KvCacheManager::Create({.num_blocks = 8, .block_size = 0}).ok());
}

TEST(KvCacheManagerTest, PrefillSharesPrefixAndFreesTailFirst) {
  auto kv = MakeManager();
  Req req0{"0", WithCommonPrefix({3, 3, 3})};  // 15 tokens: 3 full blocks + 3
  ComputedBlocks hits0 = AdmitAndCompute(*kv, req0);
  EXPECT_TRUE(hits0.block_ids.empty());
  EXPECT_THAT(kv->GetBlockIds("0"), ElementsAre(1, 2, 3, 4));
  EXPECT_TRUE(kv->pool().is_cached(1) && kv->pool().is_cached(2) && kv->pool().is_cached(3));
  EXPECT_FALSE(kv->pool().is_cached(4));  // partial block is never cached

  Req req1{"1", WithCommonPrefix({5, 5, 5})};
  ComputedBlocks hits1 = kv->GetComputedBlocks(req1.seq());
  EXPECT_THAT(hits1.block_ids, ElementsAre(1, 2, 3));
  EXPECT_EQ(hits1.num_computed_tokens, 12);
  auto new_ids = kv->AllocateSlots(req1.seq(), 3, hits1);
  ASSERT_TRUE(new_ids.has_value());
  EXPECT_THAT(*new_ids, ElementsAre(5));
  EXPECT_THAT(kv->GetBlockIds("1"), ElementsAre(1, 2, 3, 5));
  EXPECT_EQ(kv->pool().ref_count(1), 2);
  EXPECT_EQ(kv->prefix_cache_queries(), 30);
  EXPECT_EQ(kv->prefix_cache_hits(), 12);

  kv->Free("0");  // only block 4 reaches ref 0
  EXPECT_THAT(kv->pool().FreeQueueOrder(), ElementsAre(6, 7, 8, 9, 10, 4));
  kv->Free("1");
  EXPECT_THAT(kv->pool().FreeQueueOrder(), ElementsAre(6, 7, 8, 9, 10, 4, 5, 3, 2, 1));
  EXPECT_EQ(kv->num_free_blocks(), 10);
  EXPECT_EQ(kv->num_requests(), 0);
}

TEST(KvCacheManagerTest, NeverHitsTheWholePrompt) {
  auto kv = MakeManager();
  Req req0{"0", WithCommonPrefix({})};  // exactly 3 full blocks
  AdmitAndCompute(*kv, req0);
  Req req1{"1", req0.tokens};
  ComputedBlocks hits = kv->GetComputedBlocks(req1.seq());
  // The last block is recomputed so the last token produces logits.
  EXPECT_THAT(hits.block_ids, ElementsAre(1, 2));
  EXPECT_EQ(hits.num_computed_tokens, 8);
  auto new_ids = kv->AllocateSlots(req1.seq(), 4, hits);
  ASSERT_TRUE(new_ids.has_value());
  EXPECT_THAT(*new_ids, ElementsAre(4));
}

TEST(KvCacheManagerTest, DecodeFillsPartialBlockThenCachesIt) {
  auto kv = MakeManager();
  Req req{"0", WithCommonPrefix({3, 3, 3})};
  AdmitAndCompute(*kv, req);
  req.tokens.push_back(3);  // sampled token; its KV is computed next step
  ASSERT_TRUE(kv->AllocateSlots(req.seq(), 1, {}).has_value());
  EXPECT_THAT(kv->GetBlockIds("0"), ElementsAre(1, 2, 3, 4));  // fits in block 4
  req.num_computed_tokens = 16;
  kv->CommitComputedBlocks(req.seq());
  EXPECT_TRUE(kv->pool().is_cached(4));
  req.tokens.push_back(7);
  auto new_ids = kv->AllocateSlots(req.seq(), 1, {});
  ASSERT_TRUE(new_ids.has_value());
  EXPECT_THAT(*new_ids, ElementsAre(5));
  // A later request sharing prompt + generated text hits all four blocks.
  Req other{"1", WithCommonPrefix({3, 3, 3, 3, 9})};
  EXPECT_THAT(kv->GetComputedBlocks(other.seq()).block_ids, ElementsAre(1, 2, 3, 4));
}

TEST(KvCacheManagerTest, EvictsLeastRecentlyFreedAndChainTailFirst) {
  auto kv = MakeManager();
  Req req0{"0", WithCommonPrefix({3, 3, 3})};
  AdmitAndCompute(*kv, req0);
  kv->Free("0");
  EXPECT_THAT(kv->pool().FreeQueueOrder(), ElementsAre(5, 6, 7, 8, 9, 10, 4, 3, 2, 1));
  // An unrelated request needing 8 blocks takes 5..10, then 4, then block 3 (the
  // tail of the cached chain), evicting its hash; blocks 1 and 2 survive.
  Req big{"big", std::vector<int32_t>(29, 42)};
  AdmitAndCompute(*kv, big);
  EXPECT_THAT(kv->GetBlockIds("big"), ElementsAre(5, 6, 7, 8, 9, 10, 4, 3));
  Req again{"2", req0.tokens};
  ComputedBlocks hits = kv->GetComputedBlocks(again.seq());
  EXPECT_THAT(hits.block_ids, ElementsAre(1, 2));
  EXPECT_THAT(kv->pool().FreeQueueOrder(), ElementsAre(2, 1));
  // Taking the hits removes them from the free queue; 2 more blocks are needed and
  // only the hits were free, so allocation fails and nothing changes.
  EXPECT_FALSE(kv->AllocateSlots(again.seq(), 7, hits).has_value());
  EXPECT_THAT(kv->pool().FreeQueueOrder(), ElementsAre(2, 1));
  EXPECT_FALSE(kv->HasRequest("2"));
  kv->Free("big");
  ASSERT_TRUE(kv->AllocateSlots(again.seq(), 7, hits).has_value());
  EXPECT_THAT(kv->GetBlockIds("2"), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(kv->pool().FreeQueueOrder().size(), 6u);
}

TEST(KvCacheManagerTest, HitOnFreedCachedBlockCountsAsFreeCapacity) {
  auto kv = MakeManager(/*num_blocks=*/5);  // usable 1..4
  Req req0{"0", WithCommonPrefix({3})};      // 13 tokens -> 4 blocks
  AdmitAndCompute(*kv, req0);
  kv->Free("0");
  EXPECT_EQ(kv->num_free_blocks(), 4);
  Req req1{"1", WithCommonPrefix({8})};
  ComputedBlocks hits = kv->GetComputedBlocks(req1.seq());
  EXPECT_THAT(hits.block_ids, ElementsAre(1, 2, 3));
  auto new_ids = kv->AllocateSlots(req1.seq(), 1, hits);
  ASSERT_TRUE(new_ids.has_value());
  EXPECT_THAT(*new_ids, ElementsAre(4));  // the only block left is the uncached one
  EXPECT_EQ(kv->num_free_blocks(), 0);
  EXPECT_DOUBLE_EQ(kv->usage(), 1.0);
}

// NumBlocksToTake is what AllocateSlots would take from the free queue: new blocks plus
// hits revived from it, and it changes nothing.
TEST(KvCacheManagerTest, NumBlocksToTakeCountsNewAndRevivedBlocks) {
  auto kv = MakeManager(/*num_blocks=*/7);  // usable 1..6
  Req req0{"0", WithCommonPrefix({3})};      // 13 tokens -> 4 blocks, 3 full ones cached
  AdmitAndCompute(*kv, req0);
  kv->Free("0");
  Req req1{"1", WithCommonPrefix({8, 9, 10, 11, 12})};  // 17 tokens -> 5 blocks
  ComputedBlocks hits = kv->GetComputedBlocks(req1.seq());
  ASSERT_THAT(hits.block_ids, ElementsAre(1, 2, 3));
  EXPECT_EQ(kv->NumBlocksToTake(req1.seq(), 5, hits), 3 + 2);  // 3 revived, 2 new
  EXPECT_EQ(kv->NumBlocksToTake(req1.seq(), 1, hits), 3 + 1);
  EXPECT_EQ(kv->num_free_blocks(), 6);
  EXPECT_EQ(kv->pool().num_idle_cached_blocks(), 3);
  ASSERT_TRUE(kv->AllocateSlots(req1.seq(), 5, hits).has_value());
  EXPECT_EQ(kv->num_free_blocks(), 6 - 5);
  EXPECT_EQ(kv->pool().num_idle_cached_blocks(), 0);  // the hits are held again
}

TEST(KvCacheManagerTest, ExtraKeyIsolatesNamespaces) {
  auto kv = MakeManager();
  Req base{"0", WithCommonPrefix({3}), "lora-a"};
  AdmitAndCompute(*kv, base);
  Req other_ns{"1", base.tokens, "lora-b"};
  EXPECT_TRUE(kv->GetComputedBlocks(other_ns.seq()).block_ids.empty());
  Req default_ns{"2", base.tokens, ""};
  EXPECT_TRUE(kv->GetComputedBlocks(default_ns.seq()).block_ids.empty());
  Req same_ns{"3", base.tokens, "lora-a"};
  EXPECT_THAT(kv->GetComputedBlocks(same_ns.seq()).block_ids, ElementsAre(1, 2, 3));
}

TEST(KvCacheManagerTest, PrefixCachingDisabled) {
  auto kv = MakeManager(11, /*caching=*/false);
  Req req0{"0", WithCommonPrefix({3})};
  AdmitAndCompute(*kv, req0);
  Req req1{"1", req0.tokens};
  ComputedBlocks hits = AdmitAndCompute(*kv, req1);
  EXPECT_TRUE(hits.block_ids.empty());
  EXPECT_THAT(kv->GetBlockIds("1"), ElementsAre(5, 6, 7, 8));
  EXPECT_EQ(kv->pool().num_cached_blocks(), 0);
  EXPECT_EQ(kv->prefix_cache_queries(), 0);
  kv->Free("0");
  kv->Free("1");
  EXPECT_EQ(kv->num_free_blocks(), 10);
}

TEST(KvCacheManagerTest, BlocksBeingComputedArePendingNotHits) {
  auto kv = MakeManager();
  Req req0{"0", WithCommonPrefix({3})};
  ASSERT_TRUE(kv->AllocateSlots(req0.seq(), 8, {}).has_value());  // chunk: 2 blocks
  Req twin{"1", req0.tokens};
  ComputedBlocks hits = kv->GetComputedBlocks(twin.seq());
  EXPECT_TRUE(hits.block_ids.empty());  // not written yet, so not findable
  EXPECT_TRUE(kv->IsPrefixPending(twin.seq(), hits));
  req0.num_computed_tokens = 8;
  kv->CommitComputedBlocks(req0.seq());
  hits = kv->GetComputedBlocks(twin.seq());
  EXPECT_THAT(hits.block_ids, ElementsAre(1, 2));
  EXPECT_FALSE(kv->IsPrefixPending(twin.seq(), hits));  // block 3 not allocated yet
  ASSERT_TRUE(kv->AllocateSlots(req0.seq(), 5, {}).has_value());
  EXPECT_TRUE(kv->IsPrefixPending(twin.seq(), hits));
  kv->Free("0");  // aborted mid-prefill: pending entries vanish with it
  EXPECT_FALSE(kv->IsPrefixPending(twin.seq(), kv->GetComputedBlocks(twin.seq())));
  EXPECT_EQ(kv->num_free_blocks(), 10);
}

TEST(KvCacheManagerTest, ChunkedAllocationGrowsTableIncrementally) {
  auto kv = MakeManager();
  Req req{"0", std::vector<int32_t>(10, 1)};
  auto ids = kv->AllocateSlots(req.seq(), 5, {});
  ASSERT_TRUE(ids.has_value());
  EXPECT_THAT(*ids, ElementsAre(1, 2));
  req.num_computed_tokens = 5;
  kv->CommitComputedBlocks(req.seq());
  ids = kv->AllocateSlots(req.seq(), 3, {});  // tokens 5..7 fit in block 2
  ASSERT_TRUE(ids.has_value());
  EXPECT_TRUE(ids->empty());
  req.num_computed_tokens = 8;
  ids = kv->AllocateSlots(req.seq(), 2, {});
  ASSERT_TRUE(ids.has_value());
  EXPECT_THAT(*ids, ElementsAre(3));
  EXPECT_THAT(kv->GetBlockIds("0"), ElementsAre(1, 2, 3));
}

}  // namespace
}  // namespace pagellm
