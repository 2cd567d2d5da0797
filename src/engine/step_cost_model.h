// StepCostModel: how long an engine step takes as a function of the tokens it computes,
// learned online from measured step wall times; and PrefillTokenCap, the prefill budget
// per step that this model implies while decodes are running.
//
//   StepCostModel cost;
//   ... run a step of out.total_num_new_tokens tokens that took `seconds` ...
//   cost.Observe(out.total_num_new_tokens, seconds);
//   int32_t cap = PrefillTokenCap(cost, {.num_decodes = 12, .num_prefilling = 3},
//                                 /*max_step_latency_s=*/0.0);   // 0: auto target
//   scheduler.SetMaxPrefillTokensPerStep(cap);                     // 0: no cap
//
// Why: on a CPU, prefill runs ~100-200 tokens/s, so a step that mixes the default 2048
// prefill tokens with running decodes stalls every decode for 10+ s (on a GPU the same
// step takes ~50 ms and vLLM's fixed budgets are fine). The cap is therefore derived
// from measured time, not from a fixed token count, and it follows the machine's load.
//
// Model: seconds = fixed_s + per_token_s * num_tokens (weights are read once per step;
// every token then costs about the same compute), fitted by exponentially weighted
// least squares so that recent steps count most (load and context lengths drift).
// The engine measures; the scheduler only ever sees the resulting token count.
#pragma once

#include <cstdint>

namespace pagellm {

class StepCostModel {
 public:
  // `decay`: weight kept by the past at each observation (0.9: ~10 steps' memory).
  // `min_spread_tokens`: how far apart (standard deviation) the observed token counts
  // must be before fixed and per-token costs are told apart. 4 suits steps mixing
  // prefill chunks; decode-only steps of B and B (1 + k) tokens at B = 1 are 2 apart.
  explicit StepCostModel(double decay = 0.9, double min_spread_tokens = 4.0);

  // A step that computed `num_tokens` (>= 1) tokens took `seconds` of wall time.
  void Observe(int32_t num_tokens, double seconds);

  bool has_observations() const { return weight_ > 0.0; }
  // Fixed and per-token costs have been told apart (before: per_token_s is proportional).
  bool has_slope() const { return has_slope_; }
  double fixed_s() const { return fixed_s_; }
  double per_token_s() const { return per_token_s_; }
  double PredictSeconds(int32_t num_tokens) const { return fixed_s_ + per_token_s_ * num_tokens; }

 private:
  void Refit();

  double decay_;
  double min_spread_tokens_;
  // Exponentially weighted sums of 1, x, y, x^2, xy (x = tokens, y = seconds).
  double weight_ = 0.0, sum_x_ = 0.0, sum_y_ = 0.0, sum_xx_ = 0.0, sum_xy_ = 0.0;
  double fixed_s_ = 0.0;
  double per_token_s_ = 0.0;
  bool has_slope_ = false;  // a two-parameter fit has been possible at least once
};

// Who the next step serves.
struct StepMix {
  int32_t num_decodes = 0;     // running requests that decode one token
  int32_t num_prefilling = 0;  // requests still before their first token (waiting too)
};

// Prefill tokens the next step may take next to its decodes; 0 means no cap.
// `max_step_latency_s` > 0: the step should take at most that long.
// `max_step_latency_s` == 0 (auto): prefill may add max(1, prefilling / decodes) times
//   the time of the decodes alone, i.e. decodes' inter-token latency at most doubles
//   while prompts are prefilled, and prefill gets a larger share when more requests
//   wait for their first token than are decoding (so TTFT does not explode in bursts).
// `max_step_latency_s` < 0: off.
// No cap without decodes or before any measurement; at least 1 when a cap applies (the
// scheduler raises it to one KV block).
int32_t PrefillTokenCap(const StepCostModel& cost, const StepMix& mix, double max_step_latency_s);

}  // namespace pagellm
