// LlmEngine: a thread-safe front for EngineCore. Requests are added and aborted from
// any thread (HTTP handlers, the CLI); one engine thread runs the step loop and calls
// each request's callback with its deltas.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto engine, LlmEngine::Create(config));
//   engine->Start();                                   // background step loop
//   engine->AddRequest("r1", ids, params, [](RequestOutput&& d) { queue.push(d); });
//   ...
//   engine->Stop();
//
// Offline use without a thread: AddRequest(...) then RunUntilIdle().
// NOTE: callbacks run on the engine thread: they must hand the delta off (post to an
// io_context, push to a queue) and return, or they stall every other request.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/admission_control.h"
#include "engine/engine_core.h"

namespace pagellm {

class LlmEngine {
 public:
  static StatusOr<std::unique_ptr<LlmEngine>> Create(const EngineConfig& config);
  ~LlmEngine();

  // Validates synchronously (the Status says why a request is refused) and queues it
  // for the engine thread.
  Status AddRequest(const std::string& request_id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
                    OutputCallback callback, const std::string& cache_key = "");
  void AbortRequest(const std::string& request_id);
  // vLLM's /reset_prefix_cache, run on the engine thread between steps; `done` gets
  // whether the cache was reset (false while any request holds blocks) there.
  void ResetPrefixCache(std::function<void(bool reset)> done);
  // An operator's reclaim (POST /preempt_requests): preempts the newest running
  // requests by recompute on the engine thread between steps (EngineCore::PreemptRequests);
  // `done` gets what was freed, or InvalidArgument for a request without a valid bound.
  void PreemptRequests(PreemptionRequest request, std::function<void(StatusOr<EnginePreemption>)> done);
  // After AddRequest refused a request as overloaded (ResourceExhausted): seconds until
  // the waiting queue has drained at the measured rate (admission_control.h).
  int64_t RetryAfterSeconds() const;

  void Start();  // spawns the engine thread
  void Stop();   // finishes the current step and joins; pending requests are aborted
  // Runs steps on the calling thread until no request is left (offline mode).
  Status RunUntilIdle();

  EngineStats stats() const;
  bool has_work() const;
  // OK while the engine can serve. Unavailable for good once a step failed because the
  // tensor-parallel group broke (a rank exited or hung) or a worker rank exited: the
  // engine stops stepping, /health answers 503, and `serve` exits non-zero.
  Status Health() const;
  // Read-only facts about the loaded model; safe from any thread.
  const EngineCore& core() const { return *core_; }

 private:
  // Stats start as the core's, so /metrics shows every family (hybrid ones too) before
  // the first step.
  LlmEngine(std::unique_ptr<EngineCore> core, AdmissionLimits limits)
      : core_(std::move(core)), stats_(core_->stats()), admission_(limits) {}
  void Loop();
  void DrainCommands();  // applies queued adds/aborts; engine thread only
  // Queues `fn` for the engine thread, between steps (admin calls).
  void RunBetweenSteps(std::function<void(EngineCore&)> fn);

  struct PendingAdd {
    std::string id;
    std::vector<int32_t> prompt;
    SamplingParams params;
    OutputCallback callback;
    std::string cache_key;
  };
  std::unique_ptr<EngineCore> core_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PendingAdd> pending_adds_;
  std::vector<std::string> pending_aborts_;
  std::vector<std::function<void(EngineCore&)>> pending_calls_;  // RunBetweenSteps
  int64_t pending_tokens_ = 0;  // prompt tokens of pending_adds_ (x n)
  EngineStats stats_;
  AdmissionControl admission_;
  int64_t num_inflight_ = 0;  // queued + in the core
  Status fatal_;              // a step's Unavailable error: the group is broken
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pagellm
