#include "sched/capacity_scheduler.h"

#include "common/status.h"

namespace pagellm {

bool CapacityScheduler::ReserveOrPreempt(Request& req, int32_t num_new_tokens,
                                         std::vector<Request*>* running,
                                         std::vector<Request*>* preempted) {
  while (!kv_->AllocateSlots(req.kv_sequence(), num_new_tokens, {}).has_value()) {
    PAGELLM_CHECK(!running->empty());
    Request* victim = running->back();
    running->pop_back();
    Preempt(*victim);
    preempted->push_back(victim);
    if (victim == &req) return false;
  }
  return true;
}

bool CapacityScheduler::TryAdmit(Request& req, int32_t num_new_tokens, const ComputedBlocks& hits) {
  const bool needs_state = state_slots_ != nullptr && state_slots_->enabled();
  if (needs_state && state_slots_->num_free_slots() == 0) return false;
  if (!kv_->AllocateSlots(req.kv_sequence(), num_new_tokens, hits).has_value()) return false;
  if (needs_state) {
    PAGELLM_CHECK(req.state_slot() < 0);
    req.set_state_slot(*state_slots_->Allocate());
  }
  return true;
}

void CapacityScheduler::Preempt(Request& req) {
  kv_->Free(req.request_id());
  ReleaseStateSlot(req);
  req.MarkPreempted();
}

void CapacityScheduler::ReleaseStateSlot(Request& req) {
  if (req.state_slot() < 0) return;
  PAGELLM_CHECK(state_slots_ != nullptr);
  state_slots_->Free(req.state_slot());
  req.set_state_slot(-1);
}

}  // namespace pagellm
