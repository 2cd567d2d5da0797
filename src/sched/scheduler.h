// Scheduler: vLLM-v1-style continuous batching over token counts.
//
//   auto sched = Scheduler::Create(config).value();
//   PAGELLM_RETURN_IF_ERROR(sched->AddRequest(std::make_unique<Request>(...)));
//   while (sched->HasUnfinishedRequests()) {
//     SchedulerOutput out = sched->Schedule();
//     std::vector<int32_t> sampled = RunModel(out);      // one token per scheduled req
//     std::vector<FinishedRequest> done =
//         sched->UpdateFromOutput(out, sampled, /*stopped_ids=*/StopStrings(...));
//   }
//
// NOTE: there is no prefill phase and no decode phase. Each request's
// num_computed_tokens catches up with its num_tokens (prompt + output). Each step
// fills the token budget with RUNNING requests first, in admission order (decodes and
// continuing prefill chunks), then admits WAITING requests in FCFS order (preempted
// ones first), up to max_num_seqs running. Which tokens fit in the step is TokenBudget's
// decision (in a step that carries decodes, prefill gets at most the cap the engine
// sets from its step-time model: SetMaxPrefillTokensPerStep); whether their KV fits is
// CapacityScheduler's (which preempts the most recently admitted request by
// recompute). Accepted work is never dropped: a preempted request resumes by
// recomputing prompt + output, mostly from the prefix cache. A waiting request whose
// next prefix block is being computed by another request in this very step is
// deferred one step so it can hit it (n > 1 sharing).
//
// An operator's reclaim (PreemptNewest, `POST /preempt_requests` in serve) preempts the
// requests memory pressure would preempt first, by the same recompute path, and holds
// admission below a KV ceiling until they are all running again (admission_hold.h).
//
// Single-threaded: the engine loop calls every method from one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "kv/kv_cache_manager.h"
#include "sched/admission_hold.h"
#include "sched/capacity_scheduler.h"
#include "sched/request.h"
#include "sched/scheduler_output.h"
#include "sched/state_slot_pool.h"
#include "sched/state_snapshot_cache.h"
#include "sched/token_budget.h"

namespace pagellm {

struct SchedulerConfig {
  BatchLimits batch;             // per-step token and sequence limits
  KvCacheConfig kv_cache;        // blocks, block size, prefix caching
  int32_t max_model_len = 4096;  // longest prompt + output, tokens
  // Recurrent-state slots of a hybrid model (usually max_num_seqs); 0: the model keeps
  // no per-sequence state. A running request holds one.
  int32_t num_state_slots = 0;
  // Hybrid prefix caching: state snapshots kept (LRU), and how often, in blocks (a
  // snapshot is taken where a sequence's computed length reaches a multiple of
  // interval * block_size; prefill chunks are cut there). Active only with state slots,
  // prefix caching, and both > 0; a prefix hit then reaches back to the deepest
  // snapshotted block only.
  int32_t num_state_snapshots = 0;
  int32_t state_snapshot_interval_blocks = 0;
  // vLLM's --scheduling-policy priority: the waiting and running queues are ordered by
  // (priority, arrival), so the most urgent request is admitted first and the least
  // urgent one is preempted first; false: fcfs.
  bool priority_policy = false;
  // Speculative decoding on a hybrid model: snapshot entries [base, base + num_state_slots)
  // are per-slot checkpoints taken before each verification; < 0: none, and hybrid
  // requests get no drafts (their GDN state could not be rolled back).
  int32_t spec_checkpoint_base = -1;
};

struct FinishedRequest {
  std::string request_id;
  RequestStatus status = RequestStatus::kFinishedStopped;
  int32_t num_output_tokens = 0;
};

// An operator's reclaim: preempt the newest running requests (fcfs: the most recently
// admitted; priority: the least urgent, then the most recent; the ones memory pressure
// preempts first). At least one bound; with both, the first one reached ends it.
struct PreemptionRequest {
  int32_t max_num_requests = 0;           // preempt at most this many (0: no count bound)
  std::optional<double> target_kv_usage;  // stop once KV usage <= this, in [0, 1]
};

struct PreemptionResult {
  std::vector<std::string> request_ids;   // preempted, newest first
  int32_t num_freed_blocks = 0;           // blocks whose last ref went (free again)
  // Of the freed blocks, those still cached: the preempted requests' resume hits.
  int32_t num_freed_cached_blocks = 0;
  double kv_usage_before = 0.0;           // vllm:kv_cache_usage_perc
  double kv_usage_after = 0.0;
  // Admission keeps usage at or below this until the preempted requests run again
  // (the target if given, else the usage reached); 1 when nothing was preempted.
  double admission_ceiling = 1.0;
};

class Scheduler {
 public:
  // Validates the config: limits, and that the KV pool can hold one max_model_len
  // sequence (else a lone request could never finish).
  static StatusOr<std::unique_ptr<Scheduler>> Create(const SchedulerConfig& config);

  // Queues a request. Rejects an empty prompt, a prompt longer than max_model_len
  // (InvalidArgument naming both numbers) and a duplicate id (AlreadyExists).
  Status AddRequest(std::unique_ptr<Request> request);
  // Marks a request aborted; its blocks are freed at the next Schedule(), which lists it
  // in finished_ids. NotFound if the id is unknown or already finished.
  Status AbortRequest(const std::string& request_id);

  // Preempts running requests by recompute, newest first (PreemptionRequest), between
  // steps; they are reported in the next Schedule()'s preempted_ids and resume from
  // the waiting queue's front, their output tokens kept. InvalidArgument when neither
  // bound is given or one is out of range.
  StatusOr<PreemptionResult> PreemptNewest(const PreemptionRequest& request);
  const AdmissionHold& admission_hold() const { return hold_; }

  SchedulerOutput Schedule();
  // Applies a step's results. `sampled_token_ids` is aligned with out.scheduled (entries
  // of non-sampling chunks are ignored); `stopped_ids` are requests the engine's stop
  // checker ended (stop strings). Returns the requests that finished in this step;
  // they are gone from the scheduler afterwards.
  std::vector<FinishedRequest> UpdateFromOutput(const SchedulerOutput& out,
                                                std::span<const int32_t> sampled_token_ids,
                                                std::span<const std::string> stopped_ids = {});
  // Speculative decoding: `output_token_ids[i]` are the tokens scheduled request i
  // produced: its accepted drafts (a prefix of its drafts) then one sampled token;
  // empty for a chunk that does not sample. Computed tokens advance over the accepted
  // drafts only (a hybrid model's rejected verification is redone from its checkpoint),
  // the token stops apply after each token, and slots reserved for rejected drafts are
  // released.
  std::vector<FinishedRequest> UpdateFromOutput(const SchedulerOutput& out,
                                                std::span<const std::vector<int32_t>> output_token_ids,
                                                std::span<const std::string> stopped_ids = {});
  // Drafts for a running request's next step (Request::spec_token_ids); ignored for
  // requests that are not running.
  void SetSpecTokens(const std::string& request_id, std::vector<int32_t> draft_token_ids);
  // Drafts the next step could carry for `req` after `num_new` real tokens, with
  // `num_tokens_left` in the step's budget: bounded by max_model_len, max_tokens and
  // (hybrid) the checkpoint and snapshot rules.
  int32_t NumSpecTokensFor(const Request& req, int32_t num_new, int32_t num_tokens_left) const;

  // Prefill tokens per step while decodes are running (0: no cap), replacing
  // config.batch.max_prefill_tokens_per_step from the next Schedule() on. The engine
  // sets it before each step from its measured step times (the scheduler sees only
  // this number). A cap below one KV block is raised to a block, so prompts progress.
  void SetMaxPrefillTokensPerStep(int32_t num_tokens);
  int32_t max_prefill_tokens_per_step() const { return max_prefill_tokens_per_step_; }
  // Running requests whose next step is a decode (exactly one uncomputed token).
  int32_t num_running_decodes() const;

  bool HasUnfinishedRequests() const { return !requests_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  // Tokens the waiting requests (new and preempted) still have to compute.
  int64_t num_waiting_tokens() const {
    int64_t n = 0;
    for (const Request* r : waiting_) n += r->num_tokens() - r->num_computed_tokens();
    return n;
  }
  const Request* FindRequest(const std::string& request_id) const;
  const KvCacheManager& kv_cache() const { return *kv_; }
  // vLLM's reset_prefix_cache: only when no request holds blocks (false otherwise).
  bool ResetPrefixCache() { return kv_->ResetPrefixCache(); }
  const StateSlotPool& state_slots() const { return state_slots_; }
  const StateSnapshotCache& state_snapshots() const { return snapshots_; }
  bool snapshots_enabled() const;
  const SchedulerConfig& config() const { return config_; }
  std::span<Request* const> running() const { return running_; }

 private:
  explicit Scheduler(const SchedulerConfig& config, std::unique_ptr<KvCacheManager> kv);

  void ProcessAborts(SchedulerOutput* out);
  void ScheduleRunning(TokenBudget* budget, SchedulerOutput* out,
                       std::vector<Request*>* preempted);
  void ScheduleWaiting(TokenBudget* budget, SchedulerOutput* out);
  // Whether the admission hold lets `req` in: KV usage after taking the blocks of its
  // whole uncomputed part stays under the ceiling (or nothing runs).
  bool HoldAllows(const Request& req, int32_t num_uncomputed_tokens, const ComputedBlocks& hits) const;
  void AddScheduled(const Request& req, int32_t num_new_tokens, bool is_new,
                    SchedulerOutput* out, int32_t num_spec_tokens = 0) const;
  void Finish(Request* req, RequestStatus status, std::vector<FinishedRequest>* finished);
  // Hybrid prefix caching: keep only the hits up to the deepest snapshotted boundary
  // block and return that snapshot's id (-1 and no hits if there is none).
  int32_t TruncateHitsToSnapshot(ComputedBlocks* hits);
  // Shortens a chunk [num_computed, num_computed + num_new) so it ends at the last
  // snapshot boundary inside it, if any (the state at a chunk's end is all we can save).
  int32_t CutAtSnapshotBoundary(int32_t num_computed_tokens, int32_t num_new_tokens) const;
  // Marks the just-scheduled request's snapshot save if this step ends on a boundary.
  void PlanSnapshotSave(const Request& req, ScheduledRequest* scheduled);

  SchedulerConfig config_;
  std::unique_ptr<KvCacheManager> kv_;
  StateSlotPool state_slots_;
  StateSnapshotCache snapshots_;
  CapacityScheduler capacity_;
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;  // owner
  // Puts a request into waiting_: at the back (fcfs; a preempted one at the front), or
  // in (priority, arrival) order.
  void Enqueue(Request* req, bool preempted);
  // Appends to running_, or inserts in (priority, arrival) order.
  void AddRunning(Request* req);

  std::deque<Request*> waiting_;                 // FCFS; preempted ones pushed to the front
  std::vector<Request*> running_;                // admission order; preemption pops the back
  std::vector<std::string> pending_abort_ids_;   // applied at the next Schedule()
  std::vector<std::string> preempted_ids_;       // by PreemptNewest, reported by the next Schedule()
  AdmissionHold hold_;                           // after PreemptNewest
  std::vector<std::string> finished_ids_;        // reported by the next Schedule()
  int32_t max_prefill_tokens_per_step_ = 0;      // effective cap (block floor applied)
};

}  // namespace pagellm
