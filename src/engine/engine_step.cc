// EngineCore::Step and what it does with one step's logits (engine_core.cc holds
// construction and request intake).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/logging.h"
#include "engine/engine_core.h"
#include "engine/sample_state.h"

namespace pagellm {
namespace {

// Identity, counts and timings every delta of a sample carries.
void StampDelta(const SampleState& st, RequestOutput* delta) {
  delta->request_id = st.parent_id;
  delta->index = st.index;
  delta->num_prompt_tokens = st.num_prompt_tokens;
  delta->num_cached_tokens = st.num_cached_tokens;
  delta->num_output_tokens = st.num_output_tokens;
  delta->times = st.times;
}

// Sets the scheduler's prefill cap for the next step: the user's fixed
// --max-prefill-tokens-per-step, else what the measured step times allow under
// --max-step-latency-ms (step_cost_model.h). The scheduler gets a number, no timings.
void PacePrefill(const EngineConfig& config, const StepCostModel& cost, Scheduler* scheduler) {
  if (config.max_prefill_tokens_per_step > 0) {
    scheduler->SetMaxPrefillTokensPerStep(config.max_prefill_tokens_per_step);
    return;
  }
  StepMix mix;
  mix.num_decodes = scheduler->num_running_decodes();
  mix.num_prefilling = scheduler->num_waiting() + scheduler->num_running() - mix.num_decodes;
  scheduler->SetMaxPrefillTokensPerStep(PrefillTokenCap(cost, mix, config.max_step_latency_ms / 1000.0));
}

}  // namespace

Status EngineCore::Step() {
  const double step_start_s = Now();
  PacePrefill(config_, step_cost_, scheduler_.get());
  SchedulerOutput out = scheduler_->Schedule();
  for (const std::string& id : out.finished_ids) EmitAbort(id);
  RecordStepStats(out);
  double now = Now();
  stats_.step_schedule_s += now - step_start_s;
  if (out.scheduled.empty()) return OkStatus();
  for (const ScheduledRequest& s : out.scheduled) {
    auto it = samples_.find(s.request_id);
    if (it != samples_.end() && it->second->times.first_scheduled_s == 0.0) {
      it->second->times.first_scheduled_s = now;
      const Request* req = scheduler_->FindRequest(s.request_id);
      it->second->num_cached_tokens = req != nullptr ? std::max(req->num_cached_tokens(), 0) : 0;
    }
  }
  PAGELLM_ASSIGN_OR_RETURN(const StepLogits* logits, runner_->Execute(out, score_sink_ != nullptr));
  const double forward_end_s = Now();
  stats_.step_forward_s += forward_end_s - now;
  const bool decode_only = RecordDecodeStepTiming(out, forward_end_s - now);
  std::vector<std::vector<int32_t>> produced(out.scheduled.size());
  std::vector<std::string> stopped_ids;
  std::unordered_map<std::string, RequestOutput> deltas;
  ProcessSamples(out, *logits, &produced, &stopped_ids, &deltas);
  std::vector<FinishedRequest> finished =
      scheduler_->UpdateFromOutput(out, std::span<const std::vector<int32_t>>(produced), stopped_ids);
  const double draft_s = spec_policy_ != nullptr ? ProposeDrafts(out, produced) : 0.0;
  for (const FinishedRequest& f : finished) {
    auto it = samples_.find(f.request_id);
    if (it == samples_.end() || it->second->finished) continue;
    // The scheduler ended it on its own (e.g. max_model_len): report its reason.
    FinishSample(f.request_id, RequestFinishReason(f.status), &deltas[f.request_id]);
  }
  const double sample_end_s = Now();
  stats_.step_sample_s += sample_end_s - forward_end_s;
  for (auto& [id, delta] : deltas) {
    auto it = samples_.find(id);
    if (it == samples_.end()) continue;
    SampleState& st = *it->second;
    StampDelta(st, &delta);
    bool done = delta.finished;
    (*st.callback)(std::move(delta));
    if (done) samples_.erase(it);
  }
  stats_.step_output_s += Now() - sample_end_s;
  RefreshGauges();  // so readers see the state after this step, not before it
  // The whole step is what a decoding request waits between two tokens, but for a draft
  // model's forwards, which the speculation policy prices on their own (draft_cost_).
  const double step_s = Now() - step_start_s - draft_s;
  step_cost_.Observe(out.total_num_new_tokens, step_s);
  if (decode_only) decode_cost_.Observe(out.total_num_new_tokens, step_s);
  for (auto it = children_.begin(); it != children_.end();) {
    bool alive = std::any_of(it->second.begin(), it->second.end(), [&](const std::string& c) { return samples_.count(c) > 0; });
    it = alive ? std::next(it) : children_.erase(it);
  }
  return OkStatus();
}

bool EngineCore::EmitToken(const std::string& id, SampleState& st, SampleResult&& result, double now,
                           std::vector<std::string>* stopped_ids, RequestOutput* delta) {
  const int32_t token = result.token;
  delta->new_token_ids.push_back(token);
  if (st.params.logprobs) delta->logprobs.push_back({token, result.logprob, std::move(result.top_logprobs)});
  ++st.num_output_tokens;
  ++stats_.generation_tokens_total;
  if (st.times.first_token_s == 0.0) st.times.first_token_s = now;
  st.times.last_token_s = now;
  bool grammar_done = AdvanceGrammar(st, token);
  StopResult r = st.stop.Update(token, st.detok.Push(token));
  st.unreleased_text += r.text_to_emit;
  if (grammar_done && !r.finished) {  // nothing but EOS could follow: end here
    r.finished = true;
    r.reason = FinishReason::kStop;
    st.unreleased_text += st.stop.FinishHeldBack();  // e.g. a closing "}" that began a stop string
  }
  // A delta carries text only when it ends with nothing held back, so the text of a
  // delta is final for every token in it: the router resumes a cut stream after the
  // last delta that carried text (router/stream_resume.h). Text released by an earlier
  // token of this delta waits too.
  if (r.finished || (!st.detok.holds_back() && !st.stop.holds_back())) {
    delta->text += st.unreleased_text;
    st.unreleased_text.clear();
  } else if (!delta->text.empty()) {
    st.unreleased_text.insert(0, delta->text);
    delta->text.clear();
  }
  if (!r.finished) return false;
  stopped_ids->push_back(id);
  delta->stop_reason = r.stop_reason;
  bool stopped_by_string = r.stop_reason && std::holds_alternative<std::string>(*r.stop_reason);
  if (!stopped_by_string) delta->text += st.detok.Flush();
  FinishSample(id, FinishReasonName(r.reason), delta);
  return true;
}

void EngineCore::ProcessSamples(const SchedulerOutput& out, const StepLogits& logits,
                                std::vector<std::vector<int32_t>>* produced, std::vector<std::string>* stopped_ids,
                                std::unordered_map<std::string, RequestOutput>* deltas) {
  // Per sampling request: its first row (the one after its last real token) and, with
  // drafts, one row per draft behind it (ModelRunner returns them in order).
  struct Verification {
    int32_t sched_index = 0;
    int32_t first_row = 0;
    int32_t num_drafts = 0;
    SampleState* st = nullptr;
    const Request* req = nullptr;
    std::vector<int32_t> outputs;        // output ids + tokens produced so far (drafts only)
    std::vector<SampleResult> results;   // one per produced token
    bool active = true;
    // Structured outputs with drafts: the grammar is advanced through each accepted
    // draft so the next round's mask is the one a plain decode would use, then rolled
    // back before EmitToken advances it for real.
    bool grammar_was_active = false;
    int32_t grammar_advanced = 0;
  };
  std::vector<Verification> verifications;
  for (int32_t r = 0; r < logits.num_rows(); ++r) {
    const int32_t si = logits.scheduled_index[static_cast<size_t>(r)];
    const ScheduledRequest& s = out.scheduled[static_cast<size_t>(si)];
    if (score_sink_ != nullptr) {
      const float* row = logits.row(r);
      score_sink_->insert(score_sink_->end(), row, row + logits.vocab_size);
    }
    const int32_t first_pos = s.num_computed_tokens + s.num_new_tokens - 1 - s.num_spec_tokens;
    if (!s.samples || logits.positions[static_cast<size_t>(r)] != first_pos) continue;
    Verification& v = verifications.emplace_back();
    v.sched_index = si;
    v.first_row = r;
    v.num_drafts = s.num_spec_tokens;
    v.st = samples_.at(s.request_id).get();
    v.req = scheduler_->FindRequest(s.request_id);
    if (v.num_drafts > 0) {
      v.outputs.assign(v.req->output_token_ids().begin(), v.req->output_token_ids().end());
      v.grammar_was_active = v.st->grammar_active;
    }
  }
  if (verifications.empty()) return;
  // Round i samples row first_row + i of every request still verifying: the ordinary
  // sampler on the target's logits, with the request's penalties seeing the tokens
  // accepted so far and its random stream advanced once per emitted token. A draft
  // stays iff the sampled token equals it: for a deterministic (n-gram) proposal that is
  // exact rejection sampling (spec/rejection_sampler.h), and greedy output cannot change.
  std::vector<SamplingRequest> requests;
  std::vector<Verification*> in_round;
  std::vector<const float*> round_rows;
  for (int32_t round = 0;; ++round) {
    requests.clear();
    in_round.clear();
    for (Verification& v : verifications) {
      if (!v.active || round > v.num_drafts) continue;
      in_round.push_back(&v);
      std::span<const int32_t> outputs = v.num_drafts > 0 ? std::span<const int32_t>(v.outputs) : v.req->output_token_ids();
      requests.push_back({&v.st->params, v.req->prompt_token_ids(), outputs, &v.st->rng});
      FillGrammarMask(*v.st, &requests.back());
    }
    if (requests.empty()) break;
    round_rows.clear();
    for (const Verification* v : in_round) round_rows.push_back(logits.row(v->first_row + round));
    std::vector<SampleResult> results = sampler_->Sample(round_rows, logits.vocab_size, requests);
    for (size_t i = 0; i < in_round.size(); ++i) {
      Verification& v = *in_round[i];
      const ScheduledRequest& s = out.scheduled[static_cast<size_t>(v.sched_index)];
      const int32_t token = results[i].token;
      v.results.push_back(std::move(results[i]));
      const size_t draft_at = s.new_token_ids.size() - static_cast<size_t>(s.num_spec_tokens) + static_cast<size_t>(round);
      const bool accepted = round < v.num_drafts && s.new_token_ids[draft_at] == token;
      if (v.num_drafts > 0) v.outputs.push_back(token);
      v.active = accepted;
      if (accepted && v.st->matcher != nullptr) v.active = AdvanceGrammarTentatively(*v.st, token, &v.grammar_advanced);
    }
  }
  for (Verification& v : verifications) {
    if (v.num_drafts == 0 || v.st->matcher == nullptr) continue;
    v.st->matcher->Rollback(v.grammar_advanced);
    v.st->grammar_active = v.grammar_was_active;
  }
  const double now = Now();
  int32_t num_drafts = 0, num_accepted = 0;
  for (Verification& v : verifications) {
    const ScheduledRequest& s = out.scheduled[static_cast<size_t>(v.sched_index)];
    if (v.num_drafts > 0) {
      const int32_t accepted = static_cast<int32_t>(v.results.size()) - 1;
      ++num_drafts;
      num_accepted += accepted;
      stats_.spec.num_draft_tokens += v.num_drafts;
      stats_.spec.num_accepted_tokens += accepted;
      if (stats_.spec.accepted_per_pos.size() < static_cast<size_t>(v.num_drafts)) {
        stats_.spec.accepted_per_pos.resize(static_cast<size_t>(v.num_drafts), 0);
      }
      for (int32_t p = 0; p < accepted; ++p) ++stats_.spec.accepted_per_pos[static_cast<size_t>(p)];
    }
    RequestOutput& delta = (*deltas)[s.request_id];
    std::vector<int32_t>& tokens = (*produced)[static_cast<size_t>(v.sched_index)];
    for (SampleResult& result : v.results) {
      tokens.push_back(result.token);
      // A stop (EOS, stop string, grammar end) ends the sample there: later accepted
      // drafts are dropped, as the tokens after a stop would never have been sampled.
      if (EmitToken(s.request_id, *v.st, std::move(result), now, stopped_ids, &delta)) break;
    }
  }
  if (num_drafts > 0) RecordVerification(num_drafts, num_accepted);
}

void EngineCore::FillGrammarMask(SampleState& st, SamplingRequest* req) {
  if (st.matcher == nullptr || !st.grammar_active) return;
  st.matcher->FillMask(st.mask);
  req->allowed_mask = st.mask;
}

bool EngineCore::AdvanceGrammar(SampleState& st, int32_t token) {
  if (st.matcher == nullptr) return false;
  if (!st.grammar_active) {
    st.grammar_active = token == st.params.structured_outputs->start_after_token;
    return false;
  }
  if (!st.matcher->AcceptToken(token)) {
    // Only reachable if every allowed logit was non-finite; end rather than emit more.
    PLOG_WARN("structured output: token {} not accepted by the grammar; ending the sample", token);
    return true;
  }
  return st.matcher->IsTerminated();
}

bool EngineCore::AdvanceGrammarTentatively(SampleState& st, int32_t token, int32_t* num_advanced) {
  if (!st.grammar_active) {
    st.grammar_active = token == st.params.structured_outputs->start_after_token;
    return true;
  }
  // The token was sampled under the grammar's mask, so the matcher takes it; once it is
  // complete the sample ends with this token and the rows behind it are not needed.
  if (!st.matcher->AcceptToken(token)) return false;
  ++*num_advanced;
  return !st.matcher->IsTerminated();
}

void EngineCore::FinishSample(const std::string& id, const std::string& reason, RequestOutput* delta) {
  SampleState& st = *samples_.at(id);
  st.finished = true;
  st.times.finished_s = Now();
  delta->finished = true;
  delta->finish_reason = reason;
  stats_.prompt_tokens_total += st.num_prompt_tokens;
  if (draft_ != nullptr) draft_->Forget(id);
  if (mtp_ != nullptr) mtp_->Forget(id);
}

void EngineCore::EmitAbort(const std::string& id) {
  // finished_ids also lists requests that finished normally in the previous step; if
  // the caller has since reused that id for a new request, the scheduler knows it
  // again and it must not be aborted.
  if (scheduler_->FindRequest(id) != nullptr) return;
  auto it = samples_.find(id);
  if (it == samples_.end() || it->second->finished) return;
  RequestOutput delta;
  FinishSample(id, "abort", &delta);
  SampleState& st = *it->second;
  StampDelta(st, &delta);
  (*st.callback)(std::move(delta));
  samples_.erase(it);
}

void EngineCore::RecordStepStats(const SchedulerOutput& out) {
  ++stats_.num_steps;
  stats_.last_step_tokens = out.total_num_new_tokens;
  stats_.num_preemptions_total += static_cast<int64_t>(out.preempted_ids.size());
  RefreshGauges();
}

void EngineCore::RefreshGauges() {
  stats_.num_running = scheduler_->num_running();
  stats_.num_waiting = scheduler_->num_waiting();
  stats_.num_waiting_tokens = scheduler_->num_waiting_tokens();
  stats_.kv_cache_usage = scheduler_->kv_cache().usage();
  stats_.prefix_cache_queries = scheduler_->kv_cache().prefix_cache_queries();
  stats_.prefix_cache_hits = scheduler_->kv_cache().prefix_cache_hits();
  stats_.prefill_token_cap = scheduler_->max_prefill_tokens_per_step();
}

StatusOr<std::vector<float>> EngineCore::ScorePrompt(std::span<const int32_t> prompt) {
  if (HasWork()) return FailedPreconditionError("ScorePrompt needs an idle engine");
  const size_t vocab = static_cast<size_t>(loaded_.config.vocab_size);
  std::vector<float> logits;
  // Sized once: grown row by row, a 300-token prompt's 182 MB moved through ~10 reallocations,
  // each a fresh block to fault in (seconds of a golden test's `pagellm logits`).
  logits.reserve(prompt.size() * vocab);
  SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = 1;
  params.ignore_eos = true;
  std::string id = fmt::format("score-{}", request_counter_);
  PAGELLM_RETURN_IF_ERROR(AddRequest(id, std::vector<int32_t>(prompt.begin(), prompt.end()), params,
                                     [](RequestOutput&&) {}, /*cache_key=*/id));
  score_sink_ = &logits;
  Status status = OkStatus();
  while (status.ok() && HasWork()) status = Step();
  score_sink_ = nullptr;
  PAGELLM_RETURN_IF_ERROR(status);
  if (logits.size() != prompt.size() * vocab) {
    return InternalError(fmt::format("scored {} rows for a {}-token prompt", logits.size() / vocab, prompt.size()));
  }
  return logits;
}

// Decode-only steps' forward times, with and without drafts (the verification overhead).
bool EngineCore::RecordDecodeStepTiming(const SchedulerOutput& out, double forward_s) {
  int32_t num_spec = 0;
  for (const ScheduledRequest& s : out.scheduled) {
    if (!s.samples || s.num_new_tokens != 1 + s.num_spec_tokens) return false;  // a prefill chunk is in the step
    num_spec += s.num_spec_tokens;
  }
  SpecDecodeStats& st = stats_.spec;
  const int64_t batch = static_cast<int64_t>(out.scheduled.size());
  if (num_spec > 0) {
    ++st.num_verify_steps;
    st.verify_forward_s += forward_s;
    st.verify_batch_sum += batch;
  } else {
    ++st.num_plain_decode_steps;
    st.plain_decode_forward_s += forward_s;
    st.plain_decode_batch_sum += batch;
  }
  return true;
}

void EngineCore::LogDecodeStepTimes() const {
  const SpecDecodeStats& s = stats_.spec;
  if (s.num_verify_steps + s.num_plain_decode_steps == 0) return;
  auto ms = [](double sec, int64_t n) { return n > 0 ? 1e3 * sec / static_cast<double>(n) : 0.0; };
  auto per = [](int64_t sum, int64_t n) { return n > 0 ? static_cast<double>(sum) / static_cast<double>(n) : 0.0; };
  PLOG_INFO("Decode step times: decode-only forwards with drafts {} at {:.2f} ms (batch {:.1f}), without {} at "
            "{:.2f} ms (batch {:.1f}); draft model {} calls at {:.2f} ms, {} catch-up tokens", s.num_verify_steps,
            ms(s.verify_forward_s, s.num_verify_steps), per(s.verify_batch_sum, s.num_verify_steps),
            s.num_plain_decode_steps, ms(s.plain_decode_forward_s, s.num_plain_decode_steps),
            per(s.plain_decode_batch_sum, s.num_plain_decode_steps), s.num_draft_model_calls,
            ms(s.draft_model_s, s.num_draft_model_calls), draft_ != nullptr ? draft_->num_catch_up_tokens() : 0);
}

}  // namespace pagellm
