// CapacityScheduler: the KV-MEMORY decision — can a request get blocks for the tokens
// it is about to compute, and whom to preempt when it cannot. It knows nothing about
// the step's token budget (that is TokenBudget's decision).
//
//   CapacityScheduler capacity(kv);
//   std::vector<Request*> preempted;
//   if (!capacity.ReserveOrPreempt(*req, num_new, &running, &preempted)) {
//     // req itself was preempted (it was the most recently admitted one)
//   }
//   if (capacity.TryAdmit(*waiting_req, num_new, hits)) { ... }
//
// Policy (vLLM v1): a running request that needs blocks preempts the most recently
// admitted running request (the back of `running`) by RECOMPUTE: its blocks are freed
// (full ones stay in the prefix cache, so resuming is often cheap), its
// num_computed_tokens goes to 0, its output tokens are kept. A waiting request never
// preempts anyone: admission simply stops when memory is short.
// Hybrid models: a running request also holds one recurrent-state slot. Admission needs
// a free slot AND the blocks (one decision); preemption gives both back.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/request.h"
#include "sched/state_slot_pool.h"

namespace pagellm {

class CapacityScheduler {
 public:
  // `kv` (and `state_slots`, if given) are borrowed and must outlive this object.
  // Without `state_slots` (or with a disabled pool) requests hold no state slot.
  explicit CapacityScheduler(KvCacheManager* kv, StateSlotPool* state_slots = nullptr)
      : kv_(kv), state_slots_(state_slots) {}

  // Reserves slots for `num_new_tokens` more tokens of `req`, an element of `running`
  // (admission order). While that fails, pops the back of `running`, preempts it and
  // appends it to `preempted`. Returns false iff `req` itself had to be preempted.
  // Precondition: every element after `req` in `running` is unscheduled in this step.
  bool ReserveOrPreempt(Request& req, int32_t num_new_tokens, std::vector<Request*>* running,
                        std::vector<Request*>* preempted);
  // Reserves slots for a waiting request that keeps the prefix `hits` (and a state slot,
  // stored in the request, for hybrid models); never preempts.
  bool TryAdmit(Request& req, int32_t num_new_tokens, const ComputedBlocks& hits);
  // Frees the request's blocks and state slot and resets it for recompute (kPreempted).
  void Preempt(Request& req);
  // Returns the request's state slot, if it holds one (finish, abort, preemption).
  void ReleaseStateSlot(Request& req);

 private:
  KvCacheManager* kv_;
  StateSlotPool* state_slots_;
};

}  // namespace pagellm
