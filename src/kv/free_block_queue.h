// FreeBlockQueue: the free KV blocks in eviction order, as an intrusive doubly linked
// list over two int32 arrays (vLLM's FreeKVCacheBlockQueue without node objects).
//
// The head is evicted (reused) first. Blocks freed by a request are appended at the
// tail, so the least recently freed block is reused first. Remove() takes a block out
// of the middle in O(1): that happens when a free block that still holds cached KV is
// hit by a new request's prefix lookup.
//
//   FreeBlockQueue queue(/*num_blocks=*/8);   // ids 0..7, none queued yet
//   queue.PushBack(3); queue.PushBack(5);
//   queue.Remove(3);
//   int32_t block_id = queue.PopFront();     // 5
//
// Two sentinel nodes (ids num_blocks and num_blocks+1) make every link operation
// branch-free; `next_[id] == kNotQueued` marks a block that is not in the queue.
#pragma once

#include <cstdint>
#include <vector>

namespace pagellm {

class FreeBlockQueue {
 public:
  explicit FreeBlockQueue(int32_t num_blocks);

  int32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool Contains(int32_t block_id) const { return next_[block_id] != kNotQueued; }

  // Precondition: !empty().
  int32_t PopFront();
  // Precondition: !Contains(block_id).
  void PushBack(int32_t block_id);
  // Precondition: Contains(block_id).
  void Remove(int32_t block_id);

  // Queued ids from head (evicted first) to tail; O(size), for tests and debugging.
  std::vector<int32_t> ToVector() const;

 private:
  static constexpr int32_t kNotQueued = -1;
  int32_t head_;  // sentinel id before the first block
  int32_t tail_;  // sentinel id after the last block
  int32_t size_ = 0;
  std::vector<int32_t> prev_;  // [num_blocks + 2]
  std::vector<int32_t> next_;  // [num_blocks + 2]
};

}  // namespace pagellm
