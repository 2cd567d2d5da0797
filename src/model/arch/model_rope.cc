#include "model/arch/model_rope.h"

#include <algorithm>

namespace pagellm {

RopeParams MakeRopeParams(const ModelConfig& c) {
  RopeParams p;
  p.rotary_dim = c.rotary_dim();
  p.theta = c.rope_theta;
  p.factor = c.rope_scaling.factor;
  p.original_max_positions = c.rope_scaling.original_max_position_embeddings > 0
                                 ? c.rope_scaling.original_max_position_embeddings
                                 : c.max_position_embeddings;
  p.beta_fast = c.rope_scaling.beta_fast;
  p.beta_slow = c.rope_scaling.beta_slow;
  p.attention_factor = c.rope_scaling.attention_factor;
  p.max_positions = c.max_position_embeddings;
  switch (c.rope_scaling.type) {
    case RopeScalingType::kNone: p.scaling = RopeScalingKind::kNone; break;
    case RopeScalingType::kLinear: p.scaling = RopeScalingKind::kLinear; break;
    case RopeScalingType::kDynamic: p.scaling = RopeScalingKind::kDynamic; break;
    case RopeScalingType::kYarn: p.scaling = RopeScalingKind::kYarn; break;
  }
  if (p.scaling != RopeScalingKind::kNone) {
    // Scaled RoPE exists to run past the trained length: cover orig * factor too.
    // In double, kept within int64 (a factor of 1e30 must not overflow the cast): a table
    // this long is refused by BuildRopeTable, naming the count.
    const double scaled = std::min(static_cast<double>(p.original_max_positions) * p.factor, 1e18);
    p.max_positions = std::max<int64_t>(p.max_positions, static_cast<int64_t>(scaled));
  }
  return p;
}


}  // namespace pagellm
