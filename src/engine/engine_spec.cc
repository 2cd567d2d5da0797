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

void EngineCore::ProposeDrafts() {
  const int32_t k = spec_policy_->DraftsPerRequest(scheduler_->num_running(), step_cost_.fixed_s(),
                                                   step_cost_.per_token_s());
  if (k == 0) return;
  for (const Request* req : scheduler_->running()) {
    // Drafts follow sampled tokens only: a request still in its prompt has none yet.
    if (req->num_output_tokens() == 0) continue;
    auto it = samples_.find(req->request_id());
    if (it == samples_.end() || it->second->finished) continue;
    std::vector<int32_t> drafts = ngram_->Propose(req->all_token_ids(), k);
    drafts.resize(GrammarAllowedPrefix(*it->second, drafts));
    if (!drafts.empty()) scheduler_->SetSpecTokens(req->request_id(), std::move(drafts));
  }
}

}  // namespace pagellm
