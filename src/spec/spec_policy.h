// SpecPolicy: whether this step should carry drafts at all (speculation costs
// throughput once a step is no longer bound by reading the weights: vLLM's n-gram is
// 2.4-3x at batch 1 but 0.77x at 8 concurrent requests).
//
//   SpecPolicy policy({.num_speculative_tokens = 4});
//   int32_t k = policy.DraftsPerRequest(num_running, cost.fixed_s(), cost.per_token_s(), /*draft_s=*/0);
//   ... verify ...
//   policy.Observe(/*num_drafts=*/3, /*num_accepted_tokens=*/5);
//
// The decision: with B running requests, a step without drafts costs T(B) and yields B
// tokens; with k drafts each it costs T(B * (1 + k)) and yields B * (1 + a) tokens, a
// being the mean tokens accepted per draft (measured, exponentially weighted). T is the
// engine's measured cost of decode-only steps (fixed + per_token * tokens,
// engine/step_cost_model.h; prefill steps, far cheaper per token, are left out);
// D is what proposing costs (0 for n-gram lookup; a draft model's k forwards over the
// batch, measured the same way). Drafts go out iff (1 + a) * T(B) > (T(B * (1 + k)) + D)
// * 1.05 (5 % margin for the proposing and verification work T does not see). When the rule says no only because
// acceptance was low, one probing step in 32 measures again, so a request whose text
// starts repeating is noticed; when even perfect acceptance would not pay, probes come
// after 8, 16, ... 1024 steps, so a cost fit spoiled by one slow step heals. A user's disable_by_batch_size replaces the rule: drafts
// while at most that many requests run (vLLM's meaning of the key).
#pragma once

#include <cstdint>

namespace pagellm {

struct SpecPolicyConfig {
  int32_t num_speculative_tokens = 1;
  int32_t disable_by_batch_size = 0;  // 0: no fixed bound
};

class SpecPolicy {
 public:
  explicit SpecPolicy(SpecPolicyConfig config) : config_(config) {}
  // Drafts per request for the next step (0 or num_speculative_tokens). Before the
  // cost model has a slope (per_token_s <= 0) steps alternate, drafts first, so that
  // both step sizes get measured (a model fitted on steps of one size only cannot say
  // whether the other pays). `draft_s`: seconds the proposer needs for this batch (D above).
  int32_t DraftsPerRequest(int32_t num_running, double fixed_s, double per_token_s, double draft_s);
  // A verified step: `num_drafts` requests carried drafts, `num_accepted_tokens` of
  // their draft tokens were accepted.
  void Observe(int32_t num_drafts, int32_t num_accepted_tokens);
  double mean_accepted_per_draft() const { return mean_accepted_; }
  bool last_decision() const { return last_on_; }

 private:
  SpecPolicyConfig config_;
  double mean_accepted_ = -1.0;  // < 0: nothing measured yet (optimistic: k)
  int64_t num_off_steps_ = 0;
  int64_t num_decisions_ = 0;  // while there is no slope
  static constexpr int64_t kMinCostProbeInterval = 8, kMaxCostProbeInterval = 1024;
  int64_t cost_probe_interval_ = kMinCostProbeInterval;
  bool last_on_ = true;
};

}  // namespace pagellm
