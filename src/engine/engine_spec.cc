// EngineCore's speculative decoding around the step: drafts proposed after a step for
// the next one (vLLM v1: the scheduler sends what fits; engine_step.cc verifies them
// against the target's logits), and the counters behind vllm:spec_decode_*.
#include <fmt/format.h>

#include "common/logging.h"
#include "engine/engine_core.h"
#include "engine/sample_state.h"

namespace pagellm {

// Structured outputs: how many of the drafts the grammar allows from the sample's state
// (a refused draft could never be sampled, so none behind it could be accepted); the
// matcher is advanced through them and rolled back. Drafts end where the grammar is
// complete, as the sample does.
size_t EngineCore::GrammarAllowedPrefix(SampleState& st, std::span<const int32_t> drafts) {
  if (st.matcher == nullptr) return drafts.size();
  const bool was_active = st.grammar_active;
  int32_t advanced = 0;
  size_t n = 0;
  while (n < drafts.size()) {
    const int32_t before = advanced;
    const bool more = AdvanceGrammarTentatively(st, drafts[n], &advanced);
    if (more || advanced > before) ++n;  // allowed (the one that completes the grammar too)
    if (!more) break;
  }
  st.matcher->Rollback(advanced);
  st.grammar_active = was_active;
  return n;
}

void EngineCore::RecordVerification(int32_t num_drafts, int32_t num_accepted) {
  stats_.spec.num_drafts += num_drafts;
  spec_policy_->Observe(num_drafts, num_accepted);
}

void EngineCore::LogSpecDecodeSummary() const {
  const SpecDecodeStats& s = stats_.spec;
  std::string per_pos;
  for (size_t i = 0; i < s.accepted_per_pos.size(); ++i) {
    per_pos += fmt::format("{}{:.3f}", i ? ", " : "", s.num_drafts > 0 ? double(s.accepted_per_pos[i]) / s.num_drafts : 0.0);
  }
  PLOG_INFO("SpecDecoding metrics: Mean acceptance length: {:.2f}, Accepted: {} tokens, Drafted: {} tokens, Drafts: {}, "
            "Acceptance rate: {:.1f}%, Per-position acceptance rate: {}",
            s.num_drafts > 0 ? 1.0 + double(s.num_accepted_tokens) / s.num_drafts : 1.0, s.num_accepted_tokens,
            s.num_draft_tokens, s.num_drafts,
            s.num_draft_tokens > 0 ? 100.0 * s.num_accepted_tokens / s.num_draft_tokens : 0.0, per_pos);
}

double EngineCore::ProposeDrafts(const SchedulerOutput& out, std::span<const std::vector<int32_t>> produced) {
  // Drafting k tokens with a draft model (or the MTP head) costs k of its forwards over
  // the batch (the catch-up of the tokens verified since is one or two tokens more per
  // request).
  const int32_t b = scheduler_->num_running();
  const double draft_s = (draft_ != nullptr || mtp_ != nullptr) && draft_cost_.has_observations()
                             ? spec_config_.num_speculative_tokens * draft_cost_.PredictSeconds(b)
                             : 0.0;
  // Priced on decode-only steps: what a step of B tokens costs against one of B (1 + k).
  // Until both sizes have been seen there is no slope, and the policy alternates to see them.
  const double per_token_s = decode_cost_.has_slope() ? decode_cost_.per_token_s() : 0.0;
  const int32_t k = spec_policy_->DraftsPerRequest(b, decode_cost_.fixed_s(), per_token_s, draft_s);
  // The MTP head sees every step's hidden states, drafting or not: they exist only now.
  if (mtp_ != nullptr) return ProposeMtpDrafts(out, produced, k);
  if (k == 0) return 0.0;
  if (draft_ != nullptr) return ProposeModelDrafts(k);
  for (const Request* req : scheduler_->running()) {
    // Drafts follow sampled tokens only: a request still in its prompt has none yet.
    if (req->num_output_tokens() == 0) continue;
    auto it = samples_.find(req->request_id());
    if (it == samples_.end() || it->second->finished) continue;
    std::vector<int32_t> drafts = ngram_->Propose(req->all_token_ids(), k);
    drafts.resize(GrammarAllowedPrefix(*it->second, drafts));
    if (!drafts.empty()) scheduler_->SetSpecTokens(req->request_id(), std::move(drafts));
  }
  return 0.0;
}

double EngineCore::ProposeModelDrafts(int32_t k) {
  const double start = Now();
  std::vector<DraftSequence> seqs;
  std::vector<SampleState*> states;
  for (const Request* req : scheduler_->running()) {
    if (req->num_output_tokens() == 0) continue;  // still in its prompt
    auto it = samples_.find(req->request_id());
    if (it == samples_.end() || it->second->finished) continue;
    seqs.push_back({req->request_id(), req->all_token_ids()});
    states.push_back(it->second.get());
  }
  std::vector<std::string_view> ids;
  for (const DraftSequence& seq : seqs) ids.push_back(seq.request_id);
  StatusOr<std::vector<std::vector<int32_t>>> proposals = draft_->Propose(seqs, k);
  return ApplyModelDrafts("draft model", ids, states, std::move(proposals), draft_->last_forwards(), start);
}

double EngineCore::ApplyModelDrafts(const char* proposer, std::span<const std::string_view> request_ids,
                                    std::span<SampleState* const> states,
                                    StatusOr<std::vector<std::vector<int32_t>>> proposals,
                                    std::span<const DraftForwardTiming> forwards, double start) {
  for (const DraftForwardTiming& f : forwards) draft_cost_.Observe(f.num_tokens, f.seconds);
  if (!proposals.ok()) {
    // The target's step is not at fault: this step goes without drafts.
    PLOG_ERROR("{} forward failed, no drafts this step: {}", proposer, proposals.status().ToString());
  } else {
    for (size_t i = 0; i < request_ids.size(); ++i) {
      std::vector<int32_t>& drafts = (*proposals)[i];
      if (drafts.empty() || states[i] == nullptr) continue;
      drafts.resize(GrammarAllowedPrefix(*states[i], drafts));
      if (!drafts.empty()) scheduler_->SetSpecTokens(std::string(request_ids[i]), std::move(drafts));
    }
  }
  const double seconds = Now() - start;
  ++stats_.spec.num_draft_model_calls;
  stats_.spec.draft_model_s += seconds;
  return seconds;
}

double EngineCore::ProposeMtpDrafts(const SchedulerOutput& out, std::span<const std::vector<int32_t>> produced,
                                    int32_t k) {
  const double start = Now();
  const std::span<const float> hidden = model_->mtp_head()->last_hidden();
  const size_t h = static_cast<size_t>(loaded_.config.hidden_size);
  // Where each scheduled request's rows sit in the step (the runner's order), and how many
  // count: a prompt chunk's all; a verification's first token and its accepted drafts
  // (produced = accepted + 1), never a rejected draft's.
  struct Rows {
    int32_t begin_row = 0, first_position = 0, count = 0;
  };
  std::unordered_map<std::string_view, Rows> rows;
  int32_t row = 0;
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledRequest& s = out.scheduled[i];
    int32_t count = s.num_new_tokens - s.num_spec_tokens;
    if (s.num_spec_tokens > 0 && !produced[i].empty()) count += static_cast<int32_t>(produced[i].size()) - 1;
    rows[s.request_id] = {row, s.num_computed_tokens, count};
    row += s.num_new_tokens;
  }
  PAGELLM_CHECK(static_cast<size_t>(row) * h == hidden.size());
  std::vector<MtpSequence> seqs;
  std::vector<SampleState*> states;
  for (const Request* req : scheduler_->running()) {
    auto it = samples_.find(req->request_id());
    SampleState* st = it != samples_.end() && !it->second->finished ? it->second.get() : nullptr;
    MtpSequence& seq = seqs.emplace_back();
    seq.request_id = req->request_id();
    seq.token_ids = req->all_token_ids();
    if (auto r = rows.find(req->request_id()); r != rows.end()) {
      seq.hidden_begin = r->second.first_position;
      seq.hidden = hidden.subspan(static_cast<size_t>(r->second.begin_row) * h, static_cast<size_t>(r->second.count) * h);
    }
    // Drafts follow sampled tokens only: a request still in its prompt has none yet.
    seq.wants_drafts = k > 0 && st != nullptr && req->num_output_tokens() > 0;
    states.push_back(st);
  }
  std::vector<std::string_view> ids;
  for (const MtpSequence& seq : seqs) ids.push_back(seq.request_id);
  StatusOr<std::vector<std::vector<int32_t>>> proposals = mtp_->Propose(seqs, k);
  return ApplyModelDrafts("MTP head", ids, states, std::move(proposals), mtp_->last_forwards(), start);
}

}  // namespace pagellm
