#include "kv/kv_cache_manager.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm {

StatusOr<std::unique_ptr<KvCacheManager>> KvCacheManager::Create(const KvCacheConfig& config) {
  if (config.block_size < 1) {
    return InvalidArgumentError(fmt::format("block_size must be >= 1, got {}", config.block_size));
  }
  if (config.num_blocks < 2) {
    return InvalidArgumentError(fmt::format(
        "the KV cache needs at least 2 blocks (1 null + 1 usable), got {}", config.num_blocks));
  }
  return std::unique_ptr<KvCacheManager>(new KvCacheManager(config));
}

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : block_size_(config.block_size),
      pool_(config.num_blocks, config.enable_prefix_caching) {}

ComputedBlocks KvCacheManager::GetComputedBlocks(const KvSequence& seq) const {
  PAGELLM_CHECK(!HasRequest(seq.request_id));
  ComputedBlocks hits;
  if (!pool_.enable_caching() || seq.token_ids.empty()) return hits;
  const int32_t num_tokens = static_cast<int32_t>(seq.token_ids.size());
  const int32_t max_hit_blocks = (num_tokens - 1) / block_size_;
  BlockHash parent = kRootBlockHash;
  for (int32_t block_idx = 0; block_idx < max_hit_blocks; ++block_idx) {
    const BlockHash hash = HashBlockTokens(
        parent, seq.token_ids.subspan(static_cast<size_t>(block_idx) * block_size_, block_size_),
        seq.extra_key);
    const std::optional<int32_t> block_id = pool_.LookupCachedBlock(hash);
    if (!block_id) break;
    hits.block_ids.push_back(*block_id);
    hits.block_hashes.push_back(hash);
    parent = hash;
  }
  hits.num_computed_tokens = static_cast<int32_t>(hits.block_ids.size()) * block_size_;
  return hits;
}

bool KvCacheManager::IsPrefixPending(const KvSequence& seq, const ComputedBlocks& hits) const {
  if (!pool_.enable_caching() || pending_counts_.empty()) return false;
  const int32_t num_tokens = static_cast<int32_t>(seq.token_ids.size());
  const int32_t block_idx = static_cast<int32_t>(hits.block_ids.size());
  if (block_idx >= (num_tokens - 1) / block_size_) return false;
  const BlockHash parent = block_idx == 0 ? kRootBlockHash : hits.block_hashes.back();
  const BlockHash hash = HashBlockTokens(
      parent, seq.token_ids.subspan(static_cast<size_t>(block_idx) * block_size_, block_size_),
      seq.extra_key);
  return pending_counts_.contains(hash);
}

int32_t KvCacheManager::NumBlocksToAllocate(const KvSequence& seq, int32_t num_new_tokens,
                                            const ComputedBlocks& new_computed) const {
  const auto it = requests_.find(seq.request_id);
  const bool is_new = it == requests_.end();
  PAGELLM_CHECK(is_new || new_computed.block_ids.empty());
  PAGELLM_CHECK(num_new_tokens >= 0);
  const int32_t num_computed = seq.num_computed_tokens + new_computed.num_computed_tokens;
  // Slots may reach past the known tokens: speculative draft tokens are not part of the
  // sequence until they are accepted.
  PAGELLM_CHECK(num_computed <= static_cast<int32_t>(seq.token_ids.size()));
  const int32_t num_held = is_new ? 0 : static_cast<int32_t>(it->second.block_ids.size());
  const int32_t num_hit = static_cast<int32_t>(new_computed.block_ids.size());
  const int32_t num_required = (num_computed + num_new_tokens + block_size_ - 1) / block_size_;
  return std::max(0, num_required - num_held - num_hit);
}

int32_t KvCacheManager::NumRevivedBlocks(const ComputedBlocks& new_computed) const {
  return static_cast<int32_t>(std::count_if(new_computed.block_ids.begin(), new_computed.block_ids.end(),
                                            [&](int32_t block_id) { return pool_.ref_count(block_id) == 0; }));
}

int32_t KvCacheManager::NumBlocksToTake(const KvSequence& seq, int32_t num_new_tokens,
                                        const ComputedBlocks& new_computed) const {
  // Hits sitting in the free queue are taken out of it, so they count against it.
  return NumBlocksToAllocate(seq, num_new_tokens, new_computed) + NumRevivedBlocks(new_computed);
}

std::optional<std::vector<int32_t>> KvCacheManager::AllocateSlots(
    const KvSequence& seq, int32_t num_new_tokens, const ComputedBlocks& new_computed) {
  const int32_t num_to_allocate = NumBlocksToAllocate(seq, num_new_tokens, new_computed);
  if (num_to_allocate + NumRevivedBlocks(new_computed) > pool_.num_free_blocks()) return std::nullopt;
  const bool is_new = !requests_.contains(seq.request_id);
  const int32_t num_tokens = static_cast<int32_t>(seq.token_ids.size());
  const int32_t num_computed = seq.num_computed_tokens + new_computed.num_computed_tokens;
  const int32_t num_hit = static_cast<int32_t>(new_computed.block_ids.size());

  RequestBlocks& state = requests_[std::string(seq.request_id)];
  if (is_new) {
    pool_.TouchBlocks(new_computed.block_ids);
    state.block_ids = new_computed.block_ids;
    state.block_hashes = new_computed.block_hashes;
    state.num_committed_blocks = num_hit;
    if (pool_.enable_caching()) {
      prefix_cache_queries_ += num_tokens;
      prefix_cache_hits_ += new_computed.num_computed_tokens;
    }
  }
  std::vector<int32_t> new_block_ids = pool_.AllocateBlocks(num_to_allocate);
  state.block_ids.insert(state.block_ids.end(), new_block_ids.begin(), new_block_ids.end());
  if (pool_.enable_caching()) {
    // Blocks that will be full after this step are "pending" until committed.
    // Only blocks whose tokens are all known: slots reserved for draft tokens (speculative
    // decoding) are hashed at commit, from the tokens that were accepted.
    const size_t num_old_hashes = state.block_hashes.size();
    const int32_t num_full = std::min(num_computed + num_new_tokens, num_tokens) / block_size_;
    AppendBlockHashes(seq.token_ids, block_size_, std::max(num_full, static_cast<int32_t>(num_old_hashes)),
                      seq.extra_key, &state.block_hashes);
    AddPending(std::span(state.block_hashes).subspan(num_old_hashes));
  }
  return new_block_ids;
}

void KvCacheManager::CommitComputedBlocks(const KvSequence& seq) {
  const auto it = requests_.find(seq.request_id);
  PAGELLM_CHECK(it != requests_.end());
  RequestBlocks& state = it->second;
  if (!pool_.enable_caching()) return;
  const int32_t num_full_blocks = seq.num_computed_tokens / block_size_;
  PAGELLM_CHECK(num_full_blocks <= static_cast<int32_t>(state.block_ids.size()));
  const int32_t num_pending_end = static_cast<int32_t>(state.block_hashes.size());
  if (num_full_blocks > num_pending_end) {
    // Filled by accepted draft tokens: hashed now, from what the blocks really hold
    // (never pending: they were not known when their slots were reserved).
    AppendBlockHashes(seq.token_ids, block_size_, num_full_blocks, seq.extra_key, &state.block_hashes);
  }
  for (int32_t block_idx = state.num_committed_blocks; block_idx < num_full_blocks; ++block_idx) {
    pool_.CacheBlock(state.block_ids[block_idx], state.block_hashes[block_idx]);
    if (block_idx < num_pending_end) RemovePending(state.block_hashes[block_idx]);
  }
  state.num_committed_blocks = std::max(state.num_committed_blocks, num_full_blocks);
}

int32_t KvCacheManager::TrimBlocks(std::string_view request_id, int32_t num_tokens) {
  const auto it = requests_.find(request_id);
  if (it == requests_.end()) return 0;
  RequestBlocks& state = it->second;
  const size_t keep = static_cast<size_t>(std::max<int32_t>((num_tokens + block_size_ - 1) / block_size_,
                                                            state.num_committed_blocks));
  if (state.block_ids.size() <= keep) return 0;
  for (size_t i = std::max(keep, static_cast<size_t>(state.num_committed_blocks)); i < state.block_hashes.size(); ++i) {
    RemovePending(state.block_hashes[i]);
  }
  if (state.block_hashes.size() > keep) state.block_hashes.resize(keep);
  std::vector<int32_t> tail(state.block_ids.rbegin(), state.block_ids.rend() - static_cast<std::ptrdiff_t>(keep));
  pool_.FreeBlocks(tail);
  state.block_ids.resize(keep);
  return static_cast<int32_t>(tail.size());
}

void KvCacheManager::Free(std::string_view request_id) {
  const auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  RequestBlocks& state = it->second;
  for (size_t i = state.num_committed_blocks; i < state.block_hashes.size(); ++i) {
    RemovePending(state.block_hashes[i]);
  }
  // NOTE: tail first, so within one chain the prefix is evicted last.
  std::vector<int32_t> reversed(state.block_ids.rbegin(), state.block_ids.rend());
  pool_.FreeBlocks(reversed);
  requests_.erase(it);
}

std::span<const int32_t> KvCacheManager::GetBlockIds(std::string_view request_id) const {
  const auto it = requests_.find(request_id);
  if (it == requests_.end()) return {};
  return it->second.block_ids;
}

std::span<const BlockHash> KvCacheManager::GetBlockHashes(std::string_view request_id) const {
  const auto it = requests_.find(request_id);
  if (it == requests_.end()) return {};
  return it->second.block_hashes;
}

bool KvCacheManager::HasRequest(std::string_view request_id) const {
  return requests_.find(request_id) != requests_.end();
}

void KvCacheManager::AddPending(std::span<const BlockHash> hashes) {
  for (const BlockHash& hash : hashes) ++pending_counts_[hash];
}

void KvCacheManager::RemovePending(const BlockHash& hash) {
  const auto it = pending_counts_.find(hash);
  PAGELLM_CHECK(it != pending_counts_.end() && it->second > 0);
  if (--it->second == 0) pending_counts_.erase(it);
}

}  // namespace pagellm
