// Request: one generation request as the scheduler sees it (one sample; the engine
// turns SamplingParams.n > 1 into n Requests with the same prompt, which then share
// their full prompt blocks through the prefix cache, see kv/kv_cache_manager.h).
//
// Immutable part: id, prompt token ids, SamplingParams, arrival time, EOS ids and the
// prefix-cache namespace. Mutable part, changed only by the Scheduler: output token
// ids, num_computed_tokens, status, num_cached_tokens, num_preemptions.
//
//   Request req("cmpl-1", {151644, 872, 198}, params, /*arrival_time_s=*/0.0,
//               /*eos_token_ids=*/{151645});
//   req.num_tokens();   // 3: prompt + output
//
// NOTE: there are no prefill/decode phases. num_computed_tokens (tokens whose KV is
// written) catches up with num_tokens() (prompt + output); a prefill chunk, a decode
// step and a recompute after preemption are all "compute the next few tokens".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/sampling_params.h"

namespace pagellm {

enum class RequestStatus {
  kWaiting,          // not admitted yet
  kRunning,          // holds KV blocks
  kPreempted,        // blocks taken back; waits (at the queue front) to recompute
  kFinishedStopped,  // EOS, a stop token, or a stop string (engine)
  kFinishedLength,   // max_tokens or max_model_len reached
  kFinishedAborted,  // client went away or AbortRequest
};

const char* RequestStatusName(RequestStatus status);
bool IsFinished(RequestStatus status);
// OpenAI finish_reason: "stop", "length", "abort"; "" while not finished.
const char* RequestFinishReason(RequestStatus status);

class Request {
 public:
  Request(std::string request_id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
          double arrival_time_s, std::vector<int32_t> eos_token_ids = {},
          std::string cache_key = "");

  const std::string& request_id() const { return request_id_; }
  const SamplingParams& sampling_params() const { return params_; }
  double arrival_time_s() const { return arrival_time_s_; }
  std::span<const int32_t> eos_token_ids() const { return eos_token_ids_; }
  // Prefix-cache namespace (LoRA name, cache_salt); requests only share KV inside one.
  const std::string& cache_key() const { return cache_key_; }

  std::span<const int32_t> all_token_ids() const { return token_ids_; }  // [num_tokens]
  std::span<const int32_t> prompt_token_ids() const {
    return std::span(token_ids_).first(num_prompt_tokens_);
  }
  std::span<const int32_t> output_token_ids() const {
    return std::span(token_ids_).subspan(num_prompt_tokens_);
  }
  int32_t num_prompt_tokens() const { return num_prompt_tokens_; }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  int32_t num_tokens() const { return static_cast<int32_t>(token_ids_.size()); }

  RequestStatus status() const { return status_; }
  int32_t num_computed_tokens() const { return num_computed_tokens_; }
  // Prompt tokens found in the prefix cache at first admission (-1: not admitted yet).
  int32_t num_cached_tokens() const { return num_cached_tokens_; }
  int32_t num_preemptions() const { return num_preemptions_; }
  // Recurrent-state slot held while running (hybrid models), -1 otherwise.
  int32_t state_slot() const { return state_slot_; }

  // The view the KV cache manager works on.
  KvSequence kv_sequence() const {
    return {request_id_, token_ids_, num_computed_tokens_, cache_key_};
  }

  // Mutators for the scheduler (and its tests); they keep the invariants checked.
  void set_status(RequestStatus status) { status_ = status; }
  void set_num_computed_tokens(int32_t num_computed_tokens);
  void set_num_cached_tokens(int32_t num_cached_tokens) { num_cached_tokens_ = num_cached_tokens; }
  void set_state_slot(int32_t state_slot) { state_slot_ = state_slot; }
  void AppendOutputToken(int32_t token_id);
  // Speculative decoding: draft tokens proposed to follow num_tokens() (not part of the
  // sequence until verified). The engine sets them between steps; Schedule() sends
  // what fits and UpdateFromOutput() clears them.
  std::span<const int32_t> spec_token_ids() const { return spec_token_ids_; }
  void set_spec_token_ids(std::vector<int32_t> ids) { spec_token_ids_ = std::move(ids); }
  // Hybrid models: the last verification rejected a draft, so the state slot holds
  // tokens that are not in the sequence; the next step restores the slot's checkpoint.
  bool restore_checkpoint() const { return restore_checkpoint_; }
  void set_restore_checkpoint(bool restore) { restore_checkpoint_ = restore; }
  // Recompute preemption: KV is gone, output tokens are kept so the request resumes by
  // recomputing prompt + output.
  void MarkPreempted();

 private:
  std::string request_id_;
  SamplingParams params_;
  double arrival_time_s_;
  std::vector<int32_t> eos_token_ids_;
  std::string cache_key_;
  std::vector<int32_t> token_ids_;  // prompt then output, contiguous
  int32_t num_prompt_tokens_;
  RequestStatus status_ = RequestStatus::kWaiting;
  int32_t num_computed_tokens_ = 0;
  int32_t num_cached_tokens_ = -1;
  int32_t num_preemptions_ = 0;
  int32_t state_slot_ = -1;
  std::vector<int32_t> spec_token_ids_;
  bool restore_checkpoint_ = false;
};

// Token-level stop rules the scheduler applies after each sampled token (vLLM's
// check_stop): max_tokens outputs or max_model_len total tokens => kFinishedLength
// (checked first); else a stop token (EOS unless ignore_eos, or stop_token_ids; once
// num_output_tokens >= min_tokens) => kFinishedStopped. Stop strings need text and are
// the engine's job (engine/stop_checker.h, passed back as UpdateFromOutput's stopped_ids);
// the scheduler's own check guarantees every request ends even without them.
std::optional<RequestStatus> CheckTokenStop(const Request& request, int32_t max_model_len);

}  // namespace pagellm
