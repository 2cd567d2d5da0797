// The body of `POST /preempt_requests` (pagellm's admin endpoint, named in the style of
// vLLM's /reset_prefix_cache): which running requests to preempt by recompute, and the
// JSON answer saying what that freed.
//
//   {"num_requests": 2}                     the two newest running requests
//   {"target_kv_cache_usage": 0.8}          the newest ones until usage <= 0.8
//   {"num_requests": 4, "target_kv_cache_usage": 0.8}   whichever bound is reached first
//
//   StatusOr<PreemptionRequest> r = ParsePreemptRequest(body);   // InvalidArgument -> 400
//   OrderedJson answer = PreemptAnswerJson(engine_preemption);
#pragma once

#include "common/json.h"
#include "common/status.h"
#include "engine/engine_core.h"

namespace pagellm::server {

// InvalidArgument (naming the field) for unknown fields, wrong types, out-of-range
// values, or neither bound given.
StatusOr<PreemptionRequest> ParsePreemptRequest(const OrderedJson& body);

// {"num_preempted_requests", "request_ids", "num_freed_blocks", "num_freed_cached_blocks",
//  "kv_cache_usage_before", "kv_cache_usage_after", "admission_ceiling", "num_running",
//  "num_waiting", "num_used_blocks", "num_idle_cached_blocks", "num_blocks"}; request_ids are
// the engine's request ids (as the server logs them), newest first.
OrderedJson PreemptAnswerJson(const EnginePreemption& p);

}  // namespace pagellm::server
