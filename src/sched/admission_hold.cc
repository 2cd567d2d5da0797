#include "sched/admission_hold.h"

#include "common/status.h"

namespace pagellm {

void AdmissionHold::Begin(const std::vector<std::string>& request_ids, double ceiling) {
  PAGELLM_CHECK(ceiling >= 0.0 && ceiling <= 1.0);
  if (request_ids.empty()) return;  // nothing was preempted: nothing to protect
  held_ids_.insert(request_ids.begin(), request_ids.end());
  ceiling_ = ceiling;
}

void AdmissionHold::OnLeftQueue(const std::string& request_id) {
  held_ids_.erase(request_id);
  if (held_ids_.empty()) ceiling_ = 1.0;
}

}  // namespace pagellm
