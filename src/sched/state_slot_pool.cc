#include "sched/state_slot_pool.h"

#include <algorithm>

#include "common/status.h"

namespace pagellm {

StateSlotPool::StateSlotPool(int32_t num_slots)
    : num_slots_(num_slots), allocated_(static_cast<size_t>(std::max(num_slots, 0)), false) {
  PAGELLM_CHECK(num_slots >= 0);
  for (int32_t i = num_slots - 1; i >= 0; --i) free_.push_back(i);
}

std::optional<int32_t> StateSlotPool::Allocate() {
  if (free_.empty()) return std::nullopt;
  int32_t slot = free_.back();
  free_.pop_back();
  allocated_[static_cast<size_t>(slot)] = true;
  return slot;
}

void StateSlotPool::Free(int32_t slot_idx) {
  PAGELLM_CHECK(slot_idx >= 0 && slot_idx < num_slots_ && allocated_[static_cast<size_t>(slot_idx)]);
  allocated_[static_cast<size_t>(slot_idx)] = false;
  // Keep `free_` descending so the lowest id is reused first (deterministic ids in tests).
  free_.insert(std::upper_bound(free_.begin(), free_.end(), slot_idx, std::greater<int32_t>()), slot_idx);
}

}  // namespace pagellm
