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

bool CapacityScheduler::TryAdmit(const Request& req, int32_t num_new_tokens,
                                 const ComputedBlocks& hits) {
  return kv_->AllocateSlots(req.kv_sequence(), num_new_tokens, hits).has_value();
}

void CapacityScheduler::Preempt(Request& req) {
  kv_->Free(req.request_id());
  req.MarkPreempted();
}

}  // namespace pagellm
