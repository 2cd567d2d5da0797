#include "kv/block_pool.h"

#include "common/status.h"

namespace pagellm {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : num_blocks_(num_blocks),
      enable_caching_(enable_caching),
      free_queue_(num_blocks),
      ref_counts_(num_blocks, 0),
      has_hash_(num_blocks, false),
      hashes_(num_blocks) {
  PAGELLM_CHECK(num_blocks >= 2);
  for (int32_t block_id = 1; block_id < num_blocks; ++block_id) free_queue_.PushBack(block_id);
  ref_counts_[kNullBlockId] = 1;  // pinned forever; never enters the free queue
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(num_free_blocks()) / num_usable_blocks();
}

int32_t BlockPool::num_idle_cached_blocks() const {
  int32_t n = 0;
  for (const auto& [hash, block_id] : cached_) n += ref_counts_[block_id] == 0 ? 1 : 0;
  return n;
}

std::vector<int32_t> BlockPool::AllocateBlocks(int32_t num) {
  PAGELLM_CHECK(num >= 0 && num <= num_free_blocks());
  std::vector<int32_t> block_ids;
  block_ids.reserve(num);
  for (int32_t i = 0; i < num; ++i) {
    const int32_t block_id = free_queue_.PopFront();
    PAGELLM_CHECK(ref_counts_[block_id] == 0);
    EvictIfCached(block_id);
    ref_counts_[block_id] = 1;
    block_ids.push_back(block_id);
  }
  return block_ids;
}

void BlockPool::TouchBlocks(std::span<const int32_t> block_ids) {
  for (const int32_t block_id : block_ids) {
    PAGELLM_CHECK(block_id > kNullBlockId && block_id < num_blocks_);
    if (ref_counts_[block_id] == 0) {
      // Only a cached block may be revived from the free queue; an uncached free block
      // has no content anyone could want.
      PAGELLM_CHECK(has_hash_[block_id]);
      free_queue_.Remove(block_id);
    }
    ++ref_counts_[block_id];
  }
}

void BlockPool::FreeBlocks(std::span<const int32_t> block_ids) {
  for (const int32_t block_id : block_ids) {
    PAGELLM_CHECK(block_id > kNullBlockId && block_id < num_blocks_);
    PAGELLM_CHECK(ref_counts_[block_id] > 0);
    if (--ref_counts_[block_id] == 0) free_queue_.PushBack(block_id);
  }
}

std::optional<int32_t> BlockPool::LookupCachedBlock(const BlockHash& hash) const {
  if (!enable_caching_) return std::nullopt;
  const auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

bool BlockPool::CacheBlock(int32_t block_id, const BlockHash& hash) {
  PAGELLM_CHECK(block_id > kNullBlockId && block_id < num_blocks_);
  PAGELLM_CHECK(ref_counts_[block_id] > 0);
  if (!enable_caching_ || has_hash_[block_id]) return false;
  if (!cached_.emplace(hash, block_id).second) return false;
  has_hash_[block_id] = true;
  hashes_[block_id] = hash;
  return true;
}

bool BlockPool::ResetPrefixCache() {
  if (num_free_blocks() != num_usable_blocks()) return false;
  cached_.clear();
  std::fill(has_hash_.begin(), has_hash_.end(), false);
  return true;
}

void BlockPool::EvictIfCached(int32_t block_id) {
  if (!has_hash_[block_id]) return;
  const auto it = cached_.find(hashes_[block_id]);
  PAGELLM_CHECK(it != cached_.end() && it->second == block_id);
  cached_.erase(it);
  has_hash_[block_id] = false;
}

}  // namespace pagellm
