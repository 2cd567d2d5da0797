// AdmissionHold: keeps an operator's preemption (Scheduler::PreemptNewest) from being
// undone at the very next step. Preempting frees the newest requests' KV blocks; the
// scheduler would readmit those requests at once (they wait at the queue's front and
// the blocks are free), taking the blocks back. While a hold lasts, a waiting request
// is admitted only if KV usage after admitting it stays at or below the hold's
// ceiling, unless nothing is running (so a request larger than the ceiling still
// runs, alone: the hold never starves anyone). The hold ends once every request it
// preempted has been admitted again (or finished while waiting: aborted, stopped).
//
//   AdmissionHold hold;
//   hold.Begin({"r7", "r6"}, /*ceiling=*/0.6);
//   if (hold.Allows(usage_after_admitting, num_running > 0)) { admit(r); hold.OnLeftQueue(r.id); }
//   hold.active();   // false once r7 and r6 both left the waiting queue
//
// Requests preempted by memory pressure are not held: the scheduler readmits them as
// soon as memory allows (vLLM's behaviour); only the operator's reclaim asks for room.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace pagellm {

class AdmissionHold {
 public:
  // Adds `request_ids` to the held set and sets the ceiling (a later call replaces it:
  // the newest reclaim states what the operator wants now). ceiling in [0, 1].
  void Begin(const std::vector<std::string>& request_ids, double ceiling);
  // A held request was admitted again or finished: it no longer holds the gate.
  void OnLeftQueue(const std::string& request_id);
  bool active() const { return !held_ids_.empty(); }
  double ceiling() const { return ceiling_; }
  int32_t num_held() const { return static_cast<int32_t>(held_ids_.size()); }
  // May a waiting request be admitted if KV usage would be `usage_after` with it?
  bool Allows(double usage_after, bool any_running) const {
    return !active() || !any_running || usage_after <= ceiling_;
  }

 private:
  std::set<std::string> held_ids_;
  double ceiling_ = 1.0;
};

}  // namespace pagellm
