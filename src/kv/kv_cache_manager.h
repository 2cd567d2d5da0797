// KvCacheManager: the seam between the scheduler and the block pool (vLLM's
// KVCacheManager). It keeps one block table per request, finds prefix-cache hits,
// reserves slots for the tokens a step will compute, and publishes newly full
// blocks to the prefix cache once their KV has been written.
//
//   auto kv = KvCacheManager::Create({.num_blocks = 11, .block_size = 16}).value();
//   KvSequence seq{.request_id = "r0", .token_ids = tokens, .num_computed_tokens = 0};
//   ComputedBlocks hits = kv->GetComputedBlocks(seq);          // no refs taken yet
//   auto new_ids = kv->AllocateSlots(seq, tokens.size() - hits.num_computed_tokens, hits);
//   if (!new_ids) { /* not enough free blocks: preempt someone or wait */ }
//   ... the step runs; the request's num_computed_tokens advances ...
//   seq.num_computed_tokens = tokens.size();
//   kv->CommitComputedBlocks(seq);                            // full blocks become hits
//   kv->Free("r0");                                           // blocks stay cached
//
// NOTE: a block becomes findable only in CommitComputedBlocks, i.e. after the step that
// writes its KV. vLLM publishes blocks when they are allocated and relies on the runner
// writing every layer's KV before any attention read in the same step; publishing late
// removes that cross-module ordering contract. The price: two requests with the same
// prefix admitted in the same step would both compute it. IsPrefixPending() lets the
// scheduler defer the second one by a step instead, which is how n > 1 samples of one
// prompt (added as n requests with the same prompt) share their full prompt blocks;
// their last partial block is recomputed per sample (at most block_size - 1 tokens).
//
// Blocks are identified by integer ids (block 0 is the null block, see block_pool.h);
// requests by their string id.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace pagellm {

struct KvCacheConfig {
  int32_t num_blocks = 0;              // including the null block 0
  int32_t block_size = 16;             // tokens per block
  bool enable_prefix_caching = true;
};

// What the manager needs to know about one request; a view, the scheduler owns it.
struct KvSequence {
  std::string_view request_id;
  std::span<const int32_t> token_ids;  // [num_tokens] prompt + output tokens so far
  int32_t num_computed_tokens = 0;     // tokens whose KV is written (excl. new hits)
  std::string_view extra_key;          // prefix-cache namespace; "" = default
};

// Result of a prefix-cache lookup: the longest run of cached full blocks.
struct ComputedBlocks {
  std::vector<int32_t> block_ids;      // [num_hit_blocks]
  std::vector<BlockHash> block_hashes; // [num_hit_blocks], chain of those blocks
  int32_t num_computed_tokens = 0;     // num_hit_blocks * block_size
};

class KvCacheManager {
 public:
  static StatusOr<std::unique_ptr<KvCacheManager>> Create(const KvCacheConfig& config);

  int32_t block_size() const { return block_size_; }
  const BlockPool& pool() const { return pool_; }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  double usage() const { return pool_.usage(); }
  // Drops every cached prefix hash; false (nothing dropped) while any block is in use.
  bool ResetPrefixCache() { return pool_.ResetPrefixCache(); }
  // Tokens looked up / found in the prefix cache by admitted requests (vLLM
  // prefix_cache_queries / prefix_cache_hits; counted in tokens).
  int64_t prefix_cache_queries() const { return prefix_cache_queries_; }
  int64_t prefix_cache_hits() const { return prefix_cache_hits_; }

  // Longest cached prefix of full blocks, never the whole sequence: at most
  // (num_tokens - 1) / block_size blocks, so the last token is always computed and
  // yields logits. Takes no refs (call AllocateSlots to keep them). Precondition: the
  // request holds no blocks.
  ComputedBlocks GetComputedBlocks(const KvSequence& seq) const;
  // True if the first block after `hits` is being computed by another request right
  // now (allocated, not yet committed): waiting one step turns it into a hit.
  bool IsPrefixPending(const KvSequence& seq, const ComputedBlocks& hits) const;

  // Reserves slots so that tokens [0, num_computed + hits + num_new_tokens) have
  // blocks (which may reach past seq.token_ids: draft tokens; only blocks of known
  // tokens are hashed), taking refs on `new_computed` hits (only for a request without blocks).
  // Returns the newly allocated block ids (may be empty), or nullopt, changing nothing,
  // if the free queue (evictable cached blocks included) cannot supply them.
  std::optional<std::vector<int32_t>> AllocateSlots(const KvSequence& seq,
                                                    int32_t num_new_tokens,
                                                    const ComputedBlocks& new_computed);
  // Free-queue blocks that AllocateSlots(seq, num_new_tokens, new_computed) would take
  // (new blocks plus hits revived from the free queue), changing nothing.
  int32_t NumBlocksToTake(const KvSequence& seq, int32_t num_new_tokens,
                          const ComputedBlocks& new_computed) const;
  // Publishes the request's full blocks within [0, seq.num_computed_tokens) to the
  // prefix cache. Call after each step that computed tokens for it.
  void CommitComputedBlocks(const KvSequence& seq);
  // Speculative decoding: releases the request's tail blocks that no position in
  // [0, num_tokens) uses (slots reserved for drafts that were rejected), never a
  // committed block. Returns the number of blocks freed.
  int32_t TrimBlocks(std::string_view request_id, int32_t num_tokens);
  // Releases the request's blocks, tail of the chain first; cached ones stay findable
  // until evicted. No-op for an unknown id.
  void Free(std::string_view request_id);

  // The request's block table: block i holds tokens [i * block_size, (i+1) * block_size).
  std::span<const int32_t> GetBlockIds(std::string_view request_id) const;
  // Chain hashes of the request's full blocks covered by reserved slots (prefix caching
  // on; empty otherwise): entry i identifies the prefix ending with block i.
  std::span<const BlockHash> GetBlockHashes(std::string_view request_id) const;
  bool HasRequest(std::string_view request_id) const;
  int32_t num_requests() const { return static_cast<int32_t>(requests_.size()); }

 private:
  struct RequestBlocks {
    std::vector<int32_t> block_ids;
    // Hashes of the full blocks covered by reserved slots: [0, num_committed_blocks)
    // are published, the rest are "pending" (being computed).
    std::vector<BlockHash> block_hashes;
    int32_t num_committed_blocks = 0;
  };

  explicit KvCacheManager(const KvCacheConfig& config);
  void AddPending(std::span<const BlockHash> hashes);
  int32_t NumBlocksToAllocate(const KvSequence& seq, int32_t num_new_tokens, const ComputedBlocks& new_computed) const;
  int32_t NumRevivedBlocks(const ComputedBlocks& new_computed) const;  // hits with ref 0
  void RemovePending(const BlockHash& hash);

  // Lets requests_ be searched with a string_view without building a std::string.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  int32_t block_size_;
  BlockPool pool_;
  std::unordered_map<std::string, RequestBlocks, StringHash, std::equal_to<>> requests_;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> pending_counts_;
  int64_t prefix_cache_queries_ = 0;
  int64_t prefix_cache_hits_ = 0;
};

}  // namespace pagellm
