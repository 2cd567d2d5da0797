#include "sched/scheduler.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm {

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerConfig& config) {
  if (config.max_model_len < 1) {
    return InvalidArgumentError(
        fmt::format("max_model_len must be >= 1, got {}", config.max_model_len));
  }
  PAGELLM_RETURN_IF_ERROR(config.batch.Validate(config.max_model_len));
  if (config.num_state_slots < 0) {
    return InvalidArgumentError(fmt::format("num_state_slots must be >= 0, got {}", config.num_state_slots));
  }
  if (config.num_state_snapshots < 0 || config.state_snapshot_interval_blocks < 0) {
    return InvalidArgumentError(fmt::format("state snapshots: count {} and interval {} must be >= 0",
                                            config.num_state_snapshots, config.state_snapshot_interval_blocks));
  }
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<KvCacheManager> kv,
                           KvCacheManager::Create(config.kv_cache));
  const int64_t kv_capacity_tokens =
      static_cast<int64_t>(kv->pool().num_usable_blocks()) * kv->block_size();
  if (kv_capacity_tokens < config.max_model_len) {
    return InvalidArgumentError(fmt::format(
        "the KV cache holds {} tokens ({} blocks of {}), fewer than max_model_len ({}); "
        "add KV memory or lower max_model_len",
        kv_capacity_tokens, kv->pool().num_usable_blocks(), kv->block_size(),
        config.max_model_len));
  }
  return std::unique_ptr<Scheduler>(new Scheduler(config, std::move(kv)));
}

Scheduler::Scheduler(const SchedulerConfig& config, std::unique_ptr<KvCacheManager> kv)
    : config_(config), kv_(std::move(kv)), state_slots_(config.num_state_slots),
      snapshots_(std::max(config.num_state_snapshots, 0)),
      capacity_(kv_.get(), &state_slots_) {
  SetMaxPrefillTokensPerStep(config.batch.max_prefill_tokens_per_step);
}

void Scheduler::SetMaxPrefillTokensPerStep(int32_t num_tokens) {
  PAGELLM_CHECK(num_tokens >= 0);
  max_prefill_tokens_per_step_ = num_tokens > 0 ? std::max(num_tokens, kv_->block_size()) : 0;
}

int32_t Scheduler::num_running_decodes() const {
  return static_cast<int32_t>(std::count_if(running_.begin(), running_.end(), [](const Request* req) {
    return req->num_tokens() - req->num_computed_tokens() == 1;
  }));
}

Status Scheduler::AddRequest(std::unique_ptr<Request> request) {
  PAGELLM_CHECK(request != nullptr && request->status() == RequestStatus::kWaiting);
  if (request->num_prompt_tokens() == 0) {
    return InvalidArgumentError(fmt::format("request {}: the prompt is empty", request->request_id()));
  }
  if (request->num_prompt_tokens() > config_.max_model_len) {
    return InvalidArgumentError(fmt::format(
        "request {}: the prompt has {} tokens, more than max_model_len ({})",
        request->request_id(), request->num_prompt_tokens(), config_.max_model_len));
  }
  if (requests_.contains(request->request_id())) {
    return Status(StatusCode::kAlreadyExists, fmt::format("request id {} is already in use", request->request_id()));
  }
  Request* req = request.get();
  requests_.emplace(req->request_id(), std::move(request));
  Enqueue(req, /*preempted=*/false);
  return OkStatus();
}

namespace {

// (priority, arrival): lower is more urgent.
bool MoreUrgent(const Request* a, const Request* b) {
  const int32_t pa = a->sampling_params().priority, pb = b->sampling_params().priority;
  return pa != pb ? pa < pb : a->arrival_time_s() < b->arrival_time_s();
}

}  // namespace

void Scheduler::Enqueue(Request* req, bool preempted) {
  if (!config_.priority_policy) {
    preempted ? waiting_.push_front(req) : waiting_.push_back(req);
    return;
  }
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), req, MoreUrgent), req);
}

void Scheduler::AddRunning(Request* req) {
  if (!config_.priority_policy) return running_.push_back(req);
  running_.insert(std::upper_bound(running_.begin(), running_.end(), req, MoreUrgent), req);
}

Status Scheduler::AbortRequest(const std::string& request_id) {
  if (!requests_.contains(request_id)) {
    return NotFoundError(fmt::format("no unfinished request with id {}", request_id));
  }
  pending_abort_ids_.push_back(request_id);
  return OkStatus();
}

const Request* Scheduler::FindRequest(const std::string& request_id) const {
  const auto it = requests_.find(request_id);
  return it == requests_.end() ? nullptr : it->second.get();
}

StatusOr<PreemptionResult> Scheduler::PreemptNewest(const PreemptionRequest& request) {
  if (request.max_num_requests < 0) {
    return InvalidArgumentError(fmt::format("num_requests must be >= 0, got {}", request.max_num_requests));
  }
  if (request.target_kv_usage && !(*request.target_kv_usage >= 0.0 && *request.target_kv_usage <= 1.0)) {
    return InvalidArgumentError(fmt::format("kv_cache_usage must be in [0, 1], got {}", *request.target_kv_usage));
  }
  if (request.max_num_requests == 0 && !request.target_kv_usage) {
    return InvalidArgumentError("give num_requests (> 0) or kv_cache_usage (a target in [0, 1]), or both");
  }
  PreemptionResult result;
  result.kv_usage_before = kv_->usage();
  const int32_t num_free_before = kv_->num_free_blocks();
  const int32_t num_idle_cached_before = kv_->pool().num_idle_cached_blocks();
  auto done = [&] {
    const bool count_reached =
        request.max_num_requests > 0 && static_cast<int32_t>(result.request_ids.size()) >= request.max_num_requests;
    return running_.empty() || count_reached || (request.target_kv_usage && kv_->usage() <= *request.target_kv_usage);
  };
  // The back of running_ is whom memory pressure would preempt (ReserveOrPreempt).
  std::vector<Request*> preempted;
  while (!done()) {
    Request* victim = running_.back();
    running_.pop_back();
    capacity_.Preempt(*victim);
    preempted.push_back(victim);
    result.request_ids.push_back(victim->request_id());
  }
  // As in Schedule(): the oldest victim ends at the head, so they resume in order.
  for (Request* req : preempted) Enqueue(req, /*preempted=*/true);
  preempted_ids_.insert(preempted_ids_.end(), result.request_ids.begin(), result.request_ids.end());
  result.num_freed_blocks = kv_->num_free_blocks() - num_free_before;
  result.num_freed_cached_blocks = kv_->pool().num_idle_cached_blocks() - num_idle_cached_before;
  result.kv_usage_after = kv_->usage();
  if (!preempted.empty()) {
    hold_.Begin(result.request_ids, request.target_kv_usage.value_or(result.kv_usage_after));
    result.admission_ceiling = hold_.ceiling();
  }
  return result;
}

SchedulerOutput Scheduler::Schedule() {
  SchedulerOutput out;
  out.finished_ids = std::move(finished_ids_);
  finished_ids_.clear();
  out.preempted_ids = std::move(preempted_ids_);
  preempted_ids_.clear();
  ProcessAborts(&out);
  BatchLimits limits = config_.batch;
  limits.max_prefill_tokens_per_step = max_prefill_tokens_per_step_;
  TokenBudget budget(limits, /*decodes_running=*/num_running_decodes() > 0);
  std::vector<Request*> preempted;
  ScheduleRunning(&budget, &out, &preempted);
  // NOTE: as in vLLM, a step that had to preempt admits nobody: memory is short.
  if (preempted.empty()) ScheduleWaiting(&budget, &out);
  // Most recent victim first in `preempted`; pushing each to the front leaves the
  // oldest victim at the head, so requests resume in admission order.
  for (Request* req : preempted) {
    Enqueue(req, /*preempted=*/true);
    out.preempted_ids.push_back(req->request_id());
  }
  out.total_num_new_tokens = budget.num_scheduled_tokens();
  return out;
}

void Scheduler::ProcessAborts(SchedulerOutput* out) {
  std::vector<FinishedRequest> ignored;
  for (const std::string& id : pending_abort_ids_) {
    const auto it = requests_.find(id);
    if (it == requests_.end()) continue;  // finished in the meantime
    Request* req = it->second.get();
    std::erase(waiting_, req);
    Finish(req, RequestStatus::kFinishedAborted, &ignored);
  }
  pending_abort_ids_.clear();
  // Finish() queued the ids for the *next* output; aborted ones belong in this one.
  out->finished_ids.insert(out->finished_ids.end(), finished_ids_.begin(), finished_ids_.end());
  finished_ids_.clear();
}

void Scheduler::ScheduleRunning(TokenBudget* budget, SchedulerOutput* out,
                                std::vector<Request*>* preempted) {
  // Index loop: preemption shrinks running_ from the back, behind the cursor.
  for (size_t idx = 0; idx < running_.size(); ++idx) {
    Request* req = running_[idx];
    const int32_t num_uncomputed = req->num_tokens() - req->num_computed_tokens();
    PAGELLM_CHECK(num_uncomputed >= 1);
    int32_t num_new = budget->Choose(num_uncomputed);
    if (num_new == 0) continue;
    num_new = CutAtSnapshotBoundary(req->num_computed_tokens(), num_new);
    int32_t num_spec = num_new == num_uncomputed ? NumSpecTokensFor(*req, num_new, budget->num_tokens_left()) : 0;
    // Drafts only take free blocks: nobody is preempted to make room for a guess.
    if (num_spec > 0) {
      const int32_t with_drafts = kv_->NumBlocksToTake(req->kv_sequence(), num_new + num_spec, {});
      if (with_drafts > kv_->NumBlocksToTake(req->kv_sequence(), num_new, {}) && with_drafts > kv_->num_free_blocks()) {
        num_spec = 0;
      }
    }
    if (!capacity_.ReserveOrPreempt(*req, num_new + num_spec, &running_, preempted)) break;
    budget->Charge(num_new, num_uncomputed);
    budget->ChargeDrafts(num_spec);
    AddScheduled(*req, num_new, /*is_new=*/false, out, num_spec);
    ScheduledRequest& s = out->scheduled.back();
    if (req->restore_checkpoint()) {
      s.restore_snapshot = config_.spec_checkpoint_base + req->state_slot();
      req->set_restore_checkpoint(false);
    }
    if (num_spec > 0 && req->state_slot() >= 0) s.checkpoint_snapshot = config_.spec_checkpoint_base + req->state_slot();
    PlanSnapshotSave(*req, &s);
  }
}

void Scheduler::ScheduleWaiting(TokenBudget* budget, SchedulerOutput* out) {
  std::vector<Request*> deferred;
  while (!waiting_.empty() && num_running() < config_.batch.max_num_seqs &&
         budget->num_tokens_left() > 0) {
    Request* req = waiting_.front();
    ComputedBlocks hits = kv_->GetComputedBlocks(req->kv_sequence());
    if (kv_->IsPrefixPending(req->kv_sequence(), hits)) {
      waiting_.pop_front();
      deferred.push_back(req);
      continue;
    }
    const int32_t restore_snapshot = TruncateHitsToSnapshot(&hits);
    const int32_t num_uncomputed = req->num_tokens() - hits.num_computed_tokens;
    int32_t num_new = budget->Choose(num_uncomputed);
    if (num_new > 0) num_new = CutAtSnapshotBoundary(hits.num_computed_tokens, num_new);
    if (num_new == 0 || !HoldAllows(*req, num_uncomputed, hits) || !capacity_.TryAdmit(*req, num_new, hits)) break;
    waiting_.pop_front();
    hold_.OnLeftQueue(req->request_id());
    AddRunning(req);
    req->set_status(RequestStatus::kRunning);
    req->set_num_computed_tokens(hits.num_computed_tokens);
    if (req->num_cached_tokens() < 0) req->set_num_cached_tokens(hits.num_computed_tokens);
    budget->Charge(num_new, num_uncomputed);
    AddScheduled(*req, num_new, /*is_new=*/true, out);
    out->scheduled.back().restore_snapshot = restore_snapshot;
    PlanSnapshotSave(*req, &out->scheduled.back());
  }
  waiting_.insert(waiting_.begin(), deferred.begin(), deferred.end());
}

bool Scheduler::HoldAllows(const Request& req, int32_t num_uncomputed_tokens, const ComputedBlocks& hits) const {
  if (!hold_.active()) return true;
  // The whole recompute, not just the first chunk: a held request must fit whole.
  const int32_t num_taken = kv_->NumBlocksToTake(req.kv_sequence(), num_uncomputed_tokens, hits);
  const double usage_after =
      1.0 - static_cast<double>(kv_->num_free_blocks() - num_taken) / kv_->pool().num_usable_blocks();
  return hold_.Allows(usage_after, num_running() > 0);
}

void Scheduler::AddScheduled(const Request& req, int32_t num_new_tokens, bool is_new,
                             SchedulerOutput* out, int32_t num_spec_tokens) const {
  ScheduledRequest& s = out->scheduled.emplace_back();
  s.request_id = req.request_id();
  s.num_new_tokens = num_new_tokens + num_spec_tokens;
  s.num_computed_tokens = req.num_computed_tokens();
  const auto tokens = req.all_token_ids().subspan(s.num_computed_tokens, num_new_tokens);
  s.new_token_ids.assign(tokens.begin(), tokens.end());
  const auto drafts = req.spec_token_ids().first(static_cast<size_t>(num_spec_tokens));
  s.new_token_ids.insert(s.new_token_ids.end(), drafts.begin(), drafts.end());
  s.num_spec_tokens = num_spec_tokens;
  const std::span<const int32_t> block_ids = kv_->GetBlockIds(req.request_id());
  s.block_ids.assign(block_ids.begin(), block_ids.end());
  s.samples = s.num_computed_tokens + num_new_tokens == req.num_tokens();
  s.is_new = is_new;
  s.state_slot = req.state_slot();
}

std::vector<FinishedRequest> Scheduler::UpdateFromOutput(
    const SchedulerOutput& out, std::span<const int32_t> sampled_token_ids,
    std::span<const std::string> stopped_ids) {
  PAGELLM_CHECK(sampled_token_ids.size() == out.scheduled.size());
  std::vector<std::vector<int32_t>> outputs(out.scheduled.size());
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    if (out.scheduled[i].samples) outputs[i].push_back(sampled_token_ids[i]);
  }
  return UpdateFromOutput(out, std::span<const std::vector<int32_t>>(outputs), stopped_ids);
}

void Scheduler::SetSpecTokens(const std::string& request_id, std::vector<int32_t> draft_token_ids) {
  const auto it = requests_.find(request_id);
  if (it == requests_.end() || it->second->status() != RequestStatus::kRunning) return;
  it->second->set_spec_token_ids(std::move(draft_token_ids));
}

int32_t Scheduler::NumSpecTokensFor(const Request& req, int32_t num_new, int32_t num_tokens_left) const {
  int32_t k = std::min(static_cast<int32_t>(req.spec_token_ids().size()), num_tokens_left - num_new);
  // After verification the sequence holds at most num_tokens + k + 1 tokens.
  k = std::min(k, config_.max_model_len - req.num_tokens() - 1);
  const auto& max_tokens = req.sampling_params().max_tokens;
  if (max_tokens.has_value()) k = std::min(k, *max_tokens - req.num_output_tokens() - 1);
  if (req.state_slot() >= 0) {
    if (config_.spec_checkpoint_base < 0) return 0;
    if (snapshots_enabled()) {
      // A snapshot must never hold draft tokens: the step that reaches a boundary
      // carries none, and drafts stop short of the next one.
      const int32_t interval_tokens = config_.state_snapshot_interval_blocks * kv_->block_size();
      const int32_t end = req.num_computed_tokens() + num_new;
      if (end % interval_tokens == 0) return 0;
      const int32_t next_boundary = (end / interval_tokens + 1) * interval_tokens;
      k = std::min(k, next_boundary - end - 1);
    }
  }
  return std::max(k, 0);
}

std::vector<FinishedRequest> Scheduler::UpdateFromOutput(
    const SchedulerOutput& out, std::span<const std::vector<int32_t>> output_token_ids,
    std::span<const std::string> stopped_ids) {
  PAGELLM_CHECK(output_token_ids.size() == out.scheduled.size());
  snapshots_.CommitPending();  // the runner has saved this step's snapshots
  std::vector<FinishedRequest> finished;
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledRequest& s = out.scheduled[i];
    const auto it = requests_.find(s.request_id);
    PAGELLM_CHECK(it != requests_.end());  // nothing can end a request between the calls
    Request* req = it->second.get();
    PAGELLM_CHECK(req->status() == RequestStatus::kRunning &&
                  req->num_computed_tokens() == s.num_computed_tokens);
    req->set_spec_token_ids({});  // consumed (or stale): the engine proposes afresh
    const std::span<const int32_t> tokens = output_token_ids[i];
    if (!s.samples) {
      req->set_num_computed_tokens(s.num_computed_tokens + s.num_new_tokens);
      kv_->CommitComputedBlocks(req->kv_sequence());
      continue;
    }
    PAGELLM_CHECK(!tokens.empty() && static_cast<int32_t>(tokens.size()) <= s.num_spec_tokens + 1);
    const int32_t num_accepted = static_cast<int32_t>(tokens.size()) - 1;
    const int32_t num_real = s.num_new_tokens - s.num_spec_tokens;
    int32_t computed = s.num_computed_tokens + num_real + num_accepted;
    if (req->state_slot() >= 0 && num_accepted < s.num_spec_tokens) {
      // The GDN state absorbed rejected drafts: redo this step's accepted part from the
      // checkpoint taken before it (attention KV of those positions is rewritten alike).
      computed = s.num_computed_tokens;
      req->set_restore_checkpoint(true);
    }
    std::optional<RequestStatus> stop;
    for (const int32_t token : tokens) {
      req->AppendOutputToken(token);
      if ((stop = CheckTokenStop(*req, config_.max_model_len))) break;
    }
    req->set_num_computed_tokens(std::min(computed, req->num_tokens()));
    kv_->CommitComputedBlocks(req->kv_sequence());
    if (s.num_spec_tokens > 0) kv_->TrimBlocks(req->request_id(), req->num_tokens());
    if (stop) Finish(req, *stop, &finished);
  }
  for (const std::string& id : stopped_ids) {
    const auto it = requests_.find(id);
    if (it != requests_.end()) {
      std::erase(waiting_, it->second.get());
      Finish(it->second.get(), RequestStatus::kFinishedStopped, &finished);
    }
  }
  return finished;
}

void Scheduler::Finish(Request* req, RequestStatus status, std::vector<FinishedRequest>* finished) {
  kv_->Free(req->request_id());
  capacity_.ReleaseStateSlot(*req);
  std::erase(running_, req);
  req->set_status(status);
  const std::string request_id = req->request_id();  // copy: erase destroys *req
  hold_.OnLeftQueue(request_id);
  finished->push_back({request_id, status, req->num_output_tokens()});
  finished_ids_.push_back(request_id);
  requests_.erase(request_id);
}

bool Scheduler::snapshots_enabled() const {
  return state_slots_.enabled() && snapshots_.num_snapshots() > 0 && config_.state_snapshot_interval_blocks > 0 &&
         config_.kv_cache.enable_prefix_caching;
}

int32_t Scheduler::TruncateHitsToSnapshot(ComputedBlocks* hits) {
  if (!state_slots_.enabled()) return -1;  // attention-only: every hit block is usable
  const int32_t interval = config_.state_snapshot_interval_blocks;
  for (int32_t num_blocks = static_cast<int32_t>(hits->block_ids.size()); snapshots_enabled() && num_blocks > 0;
       --num_blocks) {
    if (num_blocks % interval != 0) continue;
    const std::optional<int32_t> snapshot = snapshots_.Lookup(hits->block_hashes[num_blocks - 1]);
    if (!snapshot) continue;
    hits->block_ids.resize(num_blocks);
    hits->block_hashes.resize(num_blocks);
    hits->num_computed_tokens = num_blocks * kv_->block_size();
    return *snapshot;
  }
  *hits = ComputedBlocks{};
  return -1;
}

int32_t Scheduler::CutAtSnapshotBoundary(int32_t num_computed_tokens, int32_t num_new_tokens) const {
  if (!snapshots_enabled()) return num_new_tokens;
  const int32_t interval_tokens = config_.state_snapshot_interval_blocks * kv_->block_size();
  const int32_t last_boundary = (num_computed_tokens + num_new_tokens) / interval_tokens * interval_tokens;
  return last_boundary > num_computed_tokens ? last_boundary - num_computed_tokens : num_new_tokens;
}

void Scheduler::PlanSnapshotSave(const Request& req, ScheduledRequest* scheduled) {
  if (!snapshots_enabled()) return;
  const int32_t end = scheduled->num_computed_tokens + scheduled->num_new_tokens;
  const int32_t interval_tokens = config_.state_snapshot_interval_blocks * kv_->block_size();
  if (end == 0 || end % interval_tokens != 0) return;
  const std::span<const BlockHash> hashes = kv_->GetBlockHashes(req.request_id());
  const size_t block_idx = static_cast<size_t>(end / kv_->block_size() - 1);
  PAGELLM_CHECK(block_idx < hashes.size());  // AllocateSlots hashed every full block
  const std::optional<int32_t> snapshot = snapshots_.Insert(hashes[block_idx]);
  if (snapshot) scheduled->save_snapshot = *snapshot;
}

}  // namespace pagellm
