#include "sched/request.h"

#include <algorithm>

#include "common/status.h"

namespace pagellm {

const char* RequestStatusName(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting: return "WAITING";
    case RequestStatus::kRunning: return "RUNNING";
    case RequestStatus::kPreempted: return "PREEMPTED";
    case RequestStatus::kFinishedStopped: return "FINISHED_STOPPED";
    case RequestStatus::kFinishedLength: return "FINISHED_LENGTH";
    case RequestStatus::kFinishedAborted: return "FINISHED_ABORTED";
  }
  return "UNKNOWN";
}

bool IsFinished(RequestStatus status) {
  return status == RequestStatus::kFinishedStopped || status == RequestStatus::kFinishedLength ||
         status == RequestStatus::kFinishedAborted;
}

const char* RequestFinishReason(RequestStatus status) {
  switch (status) {
    case RequestStatus::kFinishedStopped: return "stop";
    case RequestStatus::kFinishedLength: return "length";
    case RequestStatus::kFinishedAborted: return "abort";
    default: return "";
  }
}

Request::Request(std::string request_id, std::vector<int32_t> prompt_token_ids,
                 SamplingParams params, double arrival_time_s, std::vector<int32_t> eos_token_ids,
                 std::string cache_key)
    : request_id_(std::move(request_id)),
      params_(std::move(params)),
      arrival_time_s_(arrival_time_s),
      eos_token_ids_(std::move(eos_token_ids)),
      cache_key_(std::move(cache_key)),
      token_ids_(std::move(prompt_token_ids)),
      num_prompt_tokens_(static_cast<int32_t>(token_ids_.size())) {}

void Request::set_num_computed_tokens(int32_t num_computed_tokens) {
  PAGELLM_CHECK(num_computed_tokens >= 0 && num_computed_tokens <= num_tokens());
  num_computed_tokens_ = num_computed_tokens;
}

void Request::AppendOutputToken(int32_t token_id) {
  PAGELLM_CHECK(token_id >= 0);
  token_ids_.push_back(token_id);
}

void Request::MarkPreempted() {
  status_ = RequestStatus::kPreempted;
  num_computed_tokens_ = 0;
  ++num_preemptions_;
  spec_token_ids_.clear();       // proposed for a state that is gone
  restore_checkpoint_ = false;   // the slot is released; recompute starts afresh
}

std::optional<RequestStatus> CheckTokenStop(const Request& request, int32_t max_model_len) {
  const SamplingParams& params = request.sampling_params();
  const int32_t num_output_tokens = request.num_output_tokens();
  // NOTE: length first, as vLLM's check_stop and engine/stop_checker.h: a final
  // token that is also EOS reports "length".
  if ((params.max_tokens.has_value() && num_output_tokens >= *params.max_tokens) ||
      request.num_tokens() >= max_model_len) {
    return RequestStatus::kFinishedLength;
  }
  if (num_output_tokens == 0 || num_output_tokens < params.min_tokens) return std::nullopt;
  const int32_t last = request.output_token_ids().back();
  const auto contains = [last](std::span<const int32_t> ids) {
    return std::find(ids.begin(), ids.end(), last) != ids.end();
  };
  if ((!params.ignore_eos && contains(request.eos_token_ids())) ||
      contains(params.stop_token_ids)) {
    return RequestStatus::kFinishedStopped;
  }
  return std::nullopt;
}

}  // namespace pagellm
