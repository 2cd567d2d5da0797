// StateSnapshotCache: which recurrent-state snapshots of a hybrid model exist, keyed by
// the prefix-cache hash of the block they end at (bookkeeping only: ids, no memory).
//
// GDN layers have no per-token KV: a prefix hit can skip computing tokens only if the
// state after that prefix is restored too. The scheduler snapshots a sequence's state
// when its computed length reaches a block boundary that is a multiple of the snapshot
// interval, and a later request with the same prefix restores the deepest snapshot
// whose block it hits. Entries are evicted least-recently-used first when the pool is
// full, like cached KV blocks.
//
// An inserted entry is PENDING (Lookup misses it) until CommitPending(), called once
// the step that saves it has run: a request admitted in that same step must not
// restore a snapshot whose contents are not written yet.
// No ref counts are needed: within one step the runner restores snapshots BEFORE the
// forward pass and saves new ones AFTER it, so an entry evicted and reused for a save
// in the same step has already been read.
//
//   StateSnapshotCache snaps(/*num_snapshots=*/16);
//   std::optional<int32_t> id = snaps.Insert(hash);   // nullopt: already snapshotted
//   std::optional<int32_t> hit = snaps.Lookup(hash);  // refreshes its LRU position
//
// Counters for metrics (pagellm:hybrid_state_snapshot_*): saves and evictions are
// exact here. Hits are not counted here: the scheduler may look a snapshot up for a
// request it then cannot admit (no free block), and looks it up again next step; the
// engine counts the restores the model actually performs (engine/causal_lm.h).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"

namespace pagellm {

class StateSnapshotCache {
 public:
  explicit StateSnapshotCache(int32_t num_snapshots);

  int32_t num_snapshots() const { return num_snapshots_; }
  int32_t num_cached() const { return static_cast<int32_t>(by_hash_.size()); }
  // Entries evicted to make room for a new one (LRU), since construction.
  int64_t num_evictions() const { return num_evictions_; }
  // Snapshot ids handed out by Insert (each is one save the runner performs).
  int64_t num_saves() const { return num_saves_; }

  // The saved snapshot taken at the block with this hash, if any (marks it recently
  // used). Pending entries are not returned.
  std::optional<int32_t> Lookup(const BlockHash& hash);
  // A snapshot id to save the state at `hash` into: a free one, else the least recently
  // used (evicted). nullopt if `hash` already has a snapshot or the pool is empty.
  std::optional<int32_t> Insert(const BlockHash& hash);
  // The step that saves every pending entry has run: they become findable.
  void CommitPending();

 private:
  struct Entry {
    int32_t snapshot_id;
    std::list<BlockHash>::iterator lru_pos;
    bool pending = true;
  };
  int32_t num_snapshots_;
  int32_t num_used_ = 0;              // ids [0, num_used_) handed out at least once
  std::list<BlockHash> lru_;          // front = least recently used
  std::unordered_map<BlockHash, Entry, BlockHashHasher> by_hash_;
  int64_t num_evictions_ = 0;
  int64_t num_saves_ = 0;
  std::vector<BlockHash> pending_;
};

}  // namespace pagellm
