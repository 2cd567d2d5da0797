#include "engine/step_cost_model.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace pagellm {
namespace {

// Steps must differ by at least this much (standard deviation of their token counts,
// absolute (min_spread_tokens) and relative to the mean) before the fixed and per-token
// costs are told apart; a run of equal decode steps only says what such a step costs.
constexpr double kMinRelativeSpread = 0.05;
constexpr double kMaxCap = 1 << 30;

}  // namespace

StepCostModel::StepCostModel(double decay, double min_spread_tokens)
    : decay_(decay), min_spread_tokens_(min_spread_tokens) {
  PAGELLM_CHECK(decay > 0.0 && decay < 1.0 && min_spread_tokens > 0.0);
}

void StepCostModel::Observe(int32_t num_tokens, double seconds) {
  PAGELLM_CHECK(num_tokens >= 1);
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) return;  // a clock hiccup teaches nothing
  const double x = num_tokens;
  weight_ = decay_ * weight_ + 1.0;
  sum_x_ = decay_ * sum_x_ + x;
  sum_y_ = decay_ * sum_y_ + seconds;
  sum_xx_ = decay_ * sum_xx_ + x * x;
  sum_xy_ = decay_ * sum_xy_ + x * seconds;
  Refit();
}

void StepCostModel::Refit() {
  const double mean_x = sum_x_ / weight_;
  const double mean_y = sum_y_ / weight_;
  const double var_x = std::max(sum_xx_ / weight_ - mean_x * mean_x, 0.0);
  const double cov_xy = sum_xy_ / weight_ - mean_x * mean_y;
  const double min_spread = std::max(min_spread_tokens_, kMinRelativeSpread * mean_x);
  if (var_x >= min_spread * min_spread && cov_xy > 0.0) {
    per_token_s_ = cov_xy / var_x;
    has_slope_ = true;
  } else if (!has_slope_) {
    // Proportional until sizes vary: it over-states the per-token cost (it carries the
    // fixed cost too), so early caps err small, on the side of the decodes.
    per_token_s_ = mean_y / mean_x;
  }
  // Otherwise keep the last slope and re-anchor the line on the recent steps, so a
  // change of load is still followed.
  fixed_s_ = mean_y - per_token_s_ * mean_x;
  if (fixed_s_ < 0.0) {  // no negative fixed cost: fall back to proportional
    fixed_s_ = 0.0;
    per_token_s_ = mean_y / mean_x;
  }
}

int32_t PrefillTokenCap(const StepCostModel& cost, const StepMix& mix, double max_step_latency_s) {
  if (max_step_latency_s < 0.0 || mix.num_decodes <= 0 || !cost.has_observations()) return 0;
  if (!(cost.per_token_s() > 0.0)) return 0;
  const double decode_s = cost.PredictSeconds(mix.num_decodes);
  double target_s = max_step_latency_s;
  if (target_s == 0.0) {
    const double prefill_share = std::max(1.0, static_cast<double>(mix.num_prefilling) / mix.num_decodes);
    target_s = decode_s * (1.0 + prefill_share);
  }
  const double cap = std::floor((target_s - decode_s) / cost.per_token_s());
  return static_cast<int32_t>(std::clamp(cap, 1.0, kMaxCap));
}

}  // namespace pagellm
