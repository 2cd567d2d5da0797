#include "engine/llm_engine.h"

#include "common/logging.h"
#include "common/steady_clock.h"
#include "engine/sampling_validation.h"
#include "model/generation_config.h"

namespace pagellm {
StatusOr<std::unique_ptr<LlmEngine>> LlmEngine::Create(const EngineConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core, EngineCore::Create(config));
  AdmissionLimits limits{.max_queued_reqs = config.max_num_queued_reqs, .max_queued_tokens = config.max_num_queued_tokens};
  return std::unique_ptr<LlmEngine>(new LlmEngine(std::move(core), limits));
}

LlmEngine::~LlmEngine() { Stop(); }

Status LlmEngine::AddRequest(const std::string& request_id, std::vector<int32_t> prompt, SamplingParams params,
                             OutputCallback callback, const std::string& cache_key) {
  // Validate here so the caller gets the error synchronously (the core re-checks).
  PAGELLM_RETURN_IF_ERROR(core_->ValidateRequest(prompt, params));
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The queue: added but not yet taken by the engine thread, and waiting in the core.
    const int64_t queued_reqs = static_cast<int64_t>(pending_adds_.size()) + stats_.num_waiting;
    const int64_t queued_tokens = pending_tokens_ + stats_.num_waiting_tokens;
    const int64_t tokens = static_cast<int64_t>(prompt.size());
    PAGELLM_RETURN_IF_ERROR(admission_.Admit(queued_reqs, queued_tokens, params.n, tokens));
    pending_tokens_ += tokens * params.n;
    pending_adds_.push_back({request_id, std::move(prompt), std::move(params), std::move(callback), cache_key});
    ++num_inflight_;
  }
  cv_.notify_one();
  return OkStatus();
}

void LlmEngine::RunBetweenSteps(std::function<void(EngineCore&)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_calls_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void LlmEngine::ResetPrefixCache(std::function<void(bool)> done) {
  RunBetweenSteps([done = std::move(done)](EngineCore& core) {
    bool reset = core.ResetPrefixCache();
    PLOG_INFO("reset_prefix_cache: {}", reset ? "cached blocks dropped" : "refused, requests hold blocks");
    done(reset);
  });
}

void LlmEngine::PreemptRequests(PreemptionRequest request, std::function<void(StatusOr<EnginePreemption>)> done) {
  RunBetweenSteps([request, done = std::move(done)](EngineCore& core) {
    StatusOr<EnginePreemption> r = core.PreemptRequests(request);
    if (r.ok()) {
      PLOG_INFO("preempt_requests: {} preempted, {} blocks freed, KV usage {:.3f} -> {:.3f}, admission held at {:.3f}",
                r->result.request_ids.size(), r->result.num_freed_blocks, r->result.kv_usage_before,
                r->result.kv_usage_after, r->result.admission_ceiling);
    }
    done(std::move(r));
  });
}

int64_t LlmEngine::RetryAfterSeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admission_.RetryAfterSeconds(pending_tokens_ + stats_.num_waiting_tokens);
}

void LlmEngine::AbortRequest(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_aborts_.push_back(request_id);
  }
  cv_.notify_one();
}

void LlmEngine::DrainCommands() {
  std::deque<PendingAdd> adds;
  std::vector<std::string> aborts;
  std::vector<std::function<void(EngineCore&)>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    adds.swap(pending_adds_);
    aborts.swap(pending_aborts_);
    calls.swap(pending_calls_);
    // They join the core's waiting queue: keep the admission count whole until the
    // step's stats recount it.
    for (const PendingAdd& add : adds) stats_.num_waiting += add.params.n;
    stats_.num_waiting_tokens += pending_tokens_;
    pending_tokens_ = 0;
  }
  for (PendingAdd& add : adds) {
    // Count completion through the callback so has_work() stays exact.
    OutputCallback user_cb = std::move(add.callback);
    OutputCallback cb = [this, user_cb](RequestOutput&& delta) {
      bool done = delta.finished;
      user_cb(std::move(delta));
      if (done) {
        std::lock_guard<std::mutex> lock(mu_);
        --num_inflight_;
      }
    };
    int32_t n = add.params.n;
    Status status = core_->AddRequest(add.id, std::move(add.prompt), add.params, cb, add.cache_key);
    if (!status.ok()) {
      RequestOutput failed;
      failed.request_id = add.id;
      failed.finished = true;
      failed.finish_reason = "abort";
      failed.error = status;
      user_cb(std::move(failed));
      std::lock_guard<std::mutex> lock(mu_);
      --num_inflight_;
    } else if (n > 1) {
      std::lock_guard<std::mutex> lock(mu_);
      num_inflight_ += n - 1;  // one final delta per sample
    }
  }
  for (const std::string& id : aborts) core_->AbortRequest(id);
  if (calls.empty()) return;
  for (auto& call : calls) call(*core_);
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = core_->stats();  // an admin call changed the queues or the KV usage
}

Status LlmEngine::RunUntilIdle() {
  DrainCommands();
  while (core_->HasWork()) {
    PAGELLM_RETURN_IF_ERROR(core_->Step());
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_ = core_->stats();
    }
    DrainCommands();
  }
  return OkStatus();
}

void LlmEngine::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void LlmEngine::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !pending_adds_.empty() || !pending_aborts_.empty() || !pending_calls_.empty() ||
                               core_->HasWork(); });
      if (stop_) break;
    }
    DrainCommands();
    if (!core_->HasWork()) continue;
    const bool queue_waiting = core_->scheduler().num_waiting() > 0;
    Status status = core_->Step();
    if (!status.ok()) PLOG_ERROR("engine step failed: {}", status.ToString());
    std::unique_lock<std::mutex> lock(mu_);
    stats_ = core_->stats();
    admission_.OnStep(stats_.prompt_tokens_total, queue_waiting, SteadySeconds());
    if (status.code() == StatusCode::kUnavailable) {
      fatal_ = status;  // the model's ranks are gone: no step can succeed again
      cv_.wait(lock, [&] { return stop_; });
      break;
    }
  }
}

void LlmEngine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

EngineStats LlmEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status LlmEngine::Health() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fatal_.ok()) return fatal_;
  }
  return core_->GroupHealth();
}

bool LlmEngine::has_work() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_inflight_ > 0;
}

}  // namespace pagellm
