#include "kv/free_block_queue.h"

#include "common/status.h"

namespace pagellm {

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks)
    : head_(num_blocks),
      tail_(num_blocks + 1),
      prev_(num_blocks + 2, kNotQueued),
      next_(num_blocks + 2, kNotQueued) {
  PAGELLM_CHECK(num_blocks >= 0);
  next_[head_] = tail_;
  prev_[tail_] = head_;
}

int32_t FreeBlockQueue::PopFront() {
  PAGELLM_CHECK(size_ > 0);
  const int32_t block_id = next_[head_];
  Remove(block_id);
  return block_id;
}

void FreeBlockQueue::PushBack(int32_t block_id) {
  PAGELLM_CHECK(block_id >= 0 && block_id < head_ && !Contains(block_id));
  const int32_t last = prev_[tail_];
  next_[last] = block_id;
  prev_[block_id] = last;
  next_[block_id] = tail_;
  prev_[tail_] = block_id;
  ++size_;
}

void FreeBlockQueue::Remove(int32_t block_id) {
  PAGELLM_CHECK(block_id >= 0 && block_id < head_ && Contains(block_id));
  next_[prev_[block_id]] = next_[block_id];
  prev_[next_[block_id]] = prev_[block_id];
  next_[block_id] = kNotQueued;
  prev_[block_id] = kNotQueued;
  --size_;
}

std::vector<int32_t> FreeBlockQueue::ToVector() const {
  std::vector<int32_t> ids;
  ids.reserve(size_);
  for (int32_t id = next_[head_]; id != tail_; id = next_[id]) ids.push_back(id);
  return ids;
}

}  // namespace pagellm
