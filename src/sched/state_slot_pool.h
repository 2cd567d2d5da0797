// StateSlotPool: integer ids of the per-sequence recurrent-state slots of a hybrid model
// (Qwen3.5 / Qwen3-Next GDN conv + recurrent state, model/hybrid/hybrid_state_cache.h).
//
// Pure bookkeeping, like kv/BlockPool: the scheduler hands a slot to a request when it
// admits it and takes it back when the request is preempted, aborted or finished. The
// runner passes the id to the model (ForwardInput::state_slots); the model resets the
// slot's state when the sequence starts at position 0.
//
//   StateSlotPool slots(/*num_slots=*/8);
//   std::optional<int32_t> slot = slots.Allocate();   // 0, then 1, ...
//   slots.Free(*slot);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pagellm {

class StateSlotPool {
 public:
  // num_slots >= 0; a pool of 0 slots is the "model keeps no state" case (enabled() false).
  explicit StateSlotPool(int32_t num_slots);

  bool enabled() const { return num_slots_ > 0; }
  int32_t num_slots() const { return num_slots_; }
  int32_t num_free_slots() const { return static_cast<int32_t>(free_.size()); }

  // Lowest free slot id, or nullopt when every slot is held.
  std::optional<int32_t> Allocate();
  // Precondition: `slot_idx` is held (CHECK-fails on a double free or a bad id).
  void Free(int32_t slot_idx);

 private:
  int32_t num_slots_;
  std::vector<int32_t> free_;     // descending, so back() is the lowest id
  std::vector<bool> allocated_;   // [num_slots]
};

}  // namespace pagellm
