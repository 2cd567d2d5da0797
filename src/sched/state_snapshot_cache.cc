#include "sched/state_snapshot_cache.h"

#include "common/status.h"

namespace pagellm {

StateSnapshotCache::StateSnapshotCache(int32_t num_snapshots) : num_snapshots_(num_snapshots) {
  PAGELLM_CHECK(num_snapshots >= 0);
}

std::optional<int32_t> StateSnapshotCache::Lookup(const BlockHash& hash) {
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || it->second.pending) return std::nullopt;
  lru_.splice(lru_.end(), lru_, it->second.lru_pos);
  return it->second.snapshot_id;
}

std::optional<int32_t> StateSnapshotCache::Insert(const BlockHash& hash) {
  if (num_snapshots_ == 0 || by_hash_.contains(hash)) return std::nullopt;
  int32_t snapshot_id;
  if (num_used_ < num_snapshots_) {
    snapshot_id = num_used_++;
  } else {
    const auto victim = by_hash_.find(lru_.front());
    PAGELLM_CHECK(victim != by_hash_.end());
    snapshot_id = victim->second.snapshot_id;
    by_hash_.erase(victim);
    lru_.pop_front();
    ++num_evictions_;
  }
  lru_.push_back(hash);
  by_hash_.emplace(hash, Entry{snapshot_id, std::prev(lru_.end())});
  pending_.push_back(hash);
  ++num_saves_;
  return snapshot_id;
}

void StateSnapshotCache::CommitPending() {
  for (const BlockHash& hash : pending_) {
    const auto it = by_hash_.find(hash);
    if (it != by_hash_.end()) it->second.pending = false;  // else evicted in the same step
  }
  pending_.clear();
}

}  // namespace pagellm
