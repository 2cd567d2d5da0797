// BlockPool: owns the KV block ids, their ref counts, the free queue in eviction order
// and the prefix-cache map (block hash -> block id). Pure bookkeeping: it never sees
// device memory; the runner maps block id b to slots [b * block_size, (b+1) * block_size).
//
//   BlockPool pool(/*num_blocks=*/11, /*enable_caching=*/true);
//   std::vector<int32_t> ids = pool.AllocateBlocks(3);     // {1, 2, 3}
//   pool.CacheBlock(ids[0], hash0);                         // block 1 now findable
//   pool.FreeBlocks({3, 2, 1});                             // tail of the chain first
//   std::optional<int32_t> hit = pool.LookupCachedBlock(hash0);  // 1, still free
//   pool.TouchBlocks({*hit});                               // ref 1, out of the queue
//
// NOTE: block 0 is the reserved null block (as in vLLM): never allocated, never freed,
// so a runner can pad block tables with 0 and a block table entry of 0 always means
// "no block". Usable blocks are 1..num_blocks-1.
//
// Lifecycle of a block: free & uncached -> allocated (ref >= 1) -> possibly cached
// (hash set) -> freed (ref 0, back in the queue, hash kept, still findable) -> either
// touched again by a prefix hit (leaves the queue) or popped for reuse, which evicts
// its hash. Several requests may share a block (ref > 1) only through prefix hits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/free_block_queue.h"

namespace pagellm {

class BlockPool {
 public:
  static constexpr int32_t kNullBlockId = 0;

  // Precondition: num_blocks >= 2 (the null block plus one usable block).
  BlockPool(int32_t num_blocks, bool enable_caching);

  int32_t num_blocks() const { return num_blocks_; }          // including the null block
  int32_t num_usable_blocks() const { return num_blocks_ - 1; }
  // Blocks in the free queue, including evictable cached ones.
  int32_t num_free_blocks() const { return free_queue_.size(); }
  int32_t num_cached_blocks() const { return static_cast<int32_t>(cached_.size()); }
  // Cached blocks no request holds (ref 0): free, yet still prefix-cache hits until
  // evicted. O(num cached blocks); for an operator's reclaim decision, not per step.
  int32_t num_idle_cached_blocks() const;
  bool enable_caching() const { return enable_caching_; }
  // Fraction of usable blocks with ref > 0, in [0, 1] (vLLM kv_cache_usage_perc).
  double usage() const;

  int32_t ref_count(int32_t block_id) const { return ref_counts_[block_id]; }
  bool is_cached(int32_t block_id) const { return has_hash_[block_id]; }
  // Free queue from next-evicted to last-evicted (tests, debugging).
  std::vector<int32_t> FreeQueueOrder() const { return free_queue_.ToVector(); }

  // Pops `num_blocks` blocks from the head of the free queue, evicting any cached hash
  // they carried, and gives each a ref of 1. Precondition: num <= num_free_blocks().
  std::vector<int32_t> AllocateBlocks(int32_t num);
  // Takes one more ref on each block; a block with ref 0 (a free cached block hit by a
  // prefix lookup) leaves the free queue. Precondition: each id is allocated or cached.
  void TouchBlocks(std::span<const int32_t> block_ids);
  // Drops one ref on each block, in the given order; blocks reaching ref 0 are appended
  // to the free queue tail in that order (callers pass a chain tail-first).
  void FreeBlocks(std::span<const int32_t> block_ids);

  // Finds a cached block (free or in use) with this hash. nullopt if caching is off.
  std::optional<int32_t> LookupCachedBlock(const BlockHash& hash) const;
  // Registers a full, computed block under `hash`. Returns false (and caches nothing)
  // if caching is off, the block is already cached, or another block already holds the
  // hash (two requests computed the same content; the first copy stays canonical and
  // this block simply becomes an ordinary uncached block again when freed).
  bool CacheBlock(int32_t block_id, const BlockHash& hash);
  // Drops every cached hash. Only allowed when no block is in use (returns false
  // otherwise), e.g. after a weight reload (vLLM reset_prefix_cache).
  bool ResetPrefixCache();

 private:
  void EvictIfCached(int32_t block_id);

  int32_t num_blocks_;
  bool enable_caching_;
  FreeBlockQueue free_queue_;
  std::vector<int32_t> ref_counts_;   // [num_blocks]
  std::vector<bool> has_hash_;        // [num_blocks]
  std::vector<BlockHash> hashes_;     // [num_blocks], valid where has_hash_
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> cached_;  // hash -> block id
};

}  // namespace pagellm
