#include "spec/spec_policy.h"

#include <algorithm>

namespace pagellm {

int32_t SpecPolicy::DraftsPerRequest(int32_t num_running, double fixed_s, double per_token_s, double draft_s) {
  const int32_t k = config_.num_speculative_tokens;
  auto decide = [&](bool on) {
    last_on_ = on;
    num_off_steps_ = on ? 0 : num_off_steps_ + 1;
    return on ? k : 0;
  };
  if (num_running <= 0 || k <= 0) return decide(false);
  // The user's bound replaces the cost model (vLLM's semantics: on up to that size).
  if (config_.disable_by_batch_size > 0) return decide(num_running <= config_.disable_by_batch_size);
  if (per_token_s <= 0.0) return decide(!last_on_ || num_decisions_++ == 0);
  auto cost = [&](double tokens) { return std::max(fixed_s, 0.0) + per_token_s * tokens; };
  const double b = num_running;
  const double with_drafts = (cost(b * (1 + k)) + std::max(draft_s, 0.0)) * 1.05;
  const double a = mean_accepted_ < 0.0 ? k : mean_accepted_;
  if ((1.0 + a) * cost(b) > with_drafts) {
    cost_probe_interval_ = kMinCostProbeInterval;
    return decide(true);
  }
  // Would perfect acceptance pay? Then low acceptance is why: probe now and then.
  const bool could_pay = (1.0 + k) * cost(b) > with_drafts;
  if (could_pay && num_off_steps_ >= 31) return decide(true);
  // Not even then, by the fitted costs. They can be wrong: one slow verification (a first
  // touch of larger buffers) once fixed the slope so high that no draft went out again
  // (n-gram, 1 sequence: 68 plain steps of 111). Probe anyway, further apart each time
  // the rule still says no after it (8, 16, ... 1024 steps), so a wrong fit heals and a
  // right one costs little (and nothing when acceptance is high: the probe's tokens come
  // at the plain rate).
  if (!could_pay && num_off_steps_ >= cost_probe_interval_ - 1) {
    cost_probe_interval_ = std::min(2 * cost_probe_interval_, kMaxCostProbeInterval);
    return decide(true);
  }
  return decide(false);
}

void SpecPolicy::Observe(int32_t num_drafts, int32_t num_accepted_tokens) {
  if (num_drafts <= 0) return;
  const double step_mean = static_cast<double>(num_accepted_tokens) / num_drafts;
  // ~5 verified steps of memory: one unlucky first step, or a probe that finds the text
  // repeating again, moves the decision within a few steps.
  mean_accepted_ = mean_accepted_ < 0.0 ? step_mean : 0.8 * mean_accepted_ + 0.2 * step_mean;
}

}  // namespace pagellm
