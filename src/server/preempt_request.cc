#include "server/preempt_request.h"

#include <fmt/format.h>

namespace pagellm::server {

StatusOr<PreemptionRequest> ParsePreemptRequest(const OrderedJson& body) {
  PreemptionRequest r;
  for (const auto& [key, value] : body.items()) {
    if (key == "num_requests") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX) {
        return InvalidArgumentError(fmt::format("num_requests: must be an integer >= 0, got {}", value.dump()));
      }
      r.max_num_requests = static_cast<int32_t>(value.get<int64_t>());
    } else if (key == "target_kv_cache_usage") {
      if (!value.is_number() || !(value.get<double>() >= 0.0 && value.get<double>() <= 1.0)) {
        return InvalidArgumentError(
            fmt::format("target_kv_cache_usage: must be a number in [0, 1] (a fraction, as "
                        "vllm:kv_cache_usage_perc), got {}", value.dump()));
      }
      r.target_kv_usage = value.get<double>();
    } else {
      return InvalidArgumentError(fmt::format(
          "{}: unknown field; /preempt_requests takes num_requests and target_kv_cache_usage", key));
    }
  }
  if (r.max_num_requests == 0 && !r.target_kv_usage) {
    return InvalidArgumentError("give num_requests (> 0) or target_kv_cache_usage (in [0, 1]), or both");
  }
  return r;
}

OrderedJson PreemptAnswerJson(const EnginePreemption& p) {
  const PreemptionResult& r = p.result;
  return {{"num_preempted_requests", r.request_ids.size()}, {"request_ids", p.request_ids},
          {"num_freed_blocks", r.num_freed_blocks}, {"num_freed_cached_blocks", r.num_freed_cached_blocks},
          {"kv_cache_usage_before", r.kv_usage_before}, {"kv_cache_usage_after", r.kv_usage_after},
          {"admission_ceiling", r.admission_ceiling}, {"num_running", p.num_running},
          {"num_waiting", p.num_waiting}, {"num_used_blocks", p.num_used_blocks},
          {"num_idle_cached_blocks", p.num_idle_cached_blocks}, {"num_blocks", p.num_usable_blocks}};
}

}  // namespace pagellm::server
