// RopeTable: precomputed fp32 cos/sin for NeoX (rotate-half) rotary embeddings.
//
// Built once per model from the RoPE settings (docs/qwen-architectures.md §2.2) and
// read by every backend's Rope op. Angles are computed in fp32 like HF and vLLM
// (inv_freq in fp32, pos * inv_freq in fp32); cos/sin are then evaluated in double
// and rounded once, and already include YaRN's attention scaling.
//
//   RopeParams p{.rotary_dim = 128, .theta = 1e6, .max_positions = 40960};
//   PAGELLM_ASSIGN_OR_RETURN(RopeTable table, BuildRopeTable(p));
//   const float* c = table.cos_row(pos);  // [rotary_dim / 2]
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"

namespace pagellm {

enum class RopeScalingKind { kNone, kLinear, kDynamic, kYarn };

struct RopeParams {
  int64_t rotary_dim = 0;  // R: dims rotated at the start of each head; even
  double theta = 10000.0;
  RopeScalingKind scaling = RopeScalingKind::kNone;
  double factor = 1.0;
  int64_t original_max_positions = 0;  // dynamic / yarn
  double beta_fast = 32.0;             // yarn
  double beta_slow = 1.0;              // yarn
  std::optional<double> attention_factor = std::nullopt;  // yarn; default 0.1 * ln(factor) + 1
  int64_t max_positions = 0;               // table rows: positions 0 .. max_positions-1
};

struct RopeTable {
  int64_t rotary_dim = 0;
  int64_t max_positions = 0;
  float attention_scaling = 1.0f;  // already folded into cos/sin
  std::vector<float> inv_freq;     // [rotary_dim / 2]
  std::vector<float> cos;          // [max_positions, rotary_dim / 2]
  std::vector<float> sin;          // [max_positions, rotary_dim / 2]

  const float* cos_row(int64_t pos) const { return cos.data() + pos * (rotary_dim / 2); }
  const float* sin_row(int64_t pos) const { return sin.data() + pos * (rotary_dim / 2); }
};

// inv_freq after scaling, as fp32 [rotary_dim / 2]:
// - none:    theta^(-2j/R)
// - linear:  theta^(-2j/R) / factor
// - dynamic: vLLM's static NTK form. HF recomputes the base only once the current
//            length L exceeds original_max; vLLM (and we) fix L = original_max * factor
//            and use base' = base * ((factor * L / orig) - (factor - 1))^(R / (R - 2))
//            at ALL lengths, so short prompts differ slightly from HF's dynamic mode.
// - yarn:    HF's ramp blend of interpolated and extrapolated frequencies.
StatusOr<std::vector<float>> ComputeRopeInvFreq(const RopeParams& params);

// 1 except for yarn: attention_factor, or 0.1 * ln(factor) + 1 when factor > 1.
float RopeAttentionScaling(const RopeParams& params);

// The most positions a table is built for: 16x the longest Qwen context (Qwen2.5-1M's
// 1,010,000); at rotary dim 128 the table then takes 8 GiB. A config past it is refused
// rather than failing an allocation.
inline constexpr int64_t kMaxRopePositions = int64_t{1} << 24;

StatusOr<RopeTable> BuildRopeTable(const RopeParams& params);

}  // namespace pagellm
