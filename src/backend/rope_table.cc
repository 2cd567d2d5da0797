#include "backend/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

namespace pagellm {
namespace {

// theta^(-2j/R) in fp32, like torch's `1 / base ** (arange(0, R, 2).float() / R)`.
std::vector<float> BaseInvFreq(double base, int64_t rotary_dim) {
  std::vector<float> inv(static_cast<size_t>(rotary_dim / 2));
  for (int64_t j = 0; j < rotary_dim / 2; ++j) {
    float expo = static_cast<float>(2 * j) / static_cast<float>(rotary_dim);
    inv[static_cast<size_t>(j)] = static_cast<float>(1.0 / std::pow(base, static_cast<double>(expo)));
  }
  return inv;
}

double YarnCorrectionDim(double num_rotations, int64_t dim, double base, int64_t max_pos) {
  return (static_cast<double>(dim) * std::log(static_cast<double>(max_pos) / (num_rotations * 2 * std::numbers::pi))) /
         (2 * std::log(base));
}

std::vector<float> YarnInvFreq(const RopeParams& p) {
  const int64_t r = p.rotary_dim;
  std::vector<float> extrap = BaseInvFreq(p.theta, r);
  double low = std::max(std::floor(YarnCorrectionDim(p.beta_fast, r, p.theta, p.original_max_positions)), 0.0);
  double high = std::min(std::ceil(YarnCorrectionDim(p.beta_slow, r, p.theta, p.original_max_positions)),
                         static_cast<double>(r - 1));
  if (low == high) high += 0.001;
  std::vector<float> inv(extrap.size());
  for (size_t j = 0; j < inv.size(); ++j) {
    float ramp = std::clamp(static_cast<float>((static_cast<double>(j) - low) / (high - low)), 0.0f, 1.0f);
    float extrap_factor = 1.0f - ramp;
    float interp = extrap[j] / static_cast<float>(p.factor);
    inv[j] = interp * (1.0f - extrap_factor) + extrap[j] * extrap_factor;
  }
  return inv;
}

}  // namespace

StatusOr<std::vector<float>> ComputeRopeInvFreq(const RopeParams& p) {
  if (p.rotary_dim <= 0 || p.rotary_dim % 2 != 0) {
    return InvalidArgumentError(fmt::format("rotary_dim must be positive and even, got {}", p.rotary_dim));
  }
  if (p.theta <= 1.0) return InvalidArgumentError(fmt::format("rope_theta must be > 1, got {}", p.theta));
  if (p.scaling != RopeScalingKind::kNone && p.factor <= 0) {
    return InvalidArgumentError(fmt::format("rope scaling factor must be positive, got {}", p.factor));
  }
  bool needs_orig = p.scaling == RopeScalingKind::kDynamic || p.scaling == RopeScalingKind::kYarn;
  if (needs_orig && p.original_max_positions <= 0) {
    return InvalidArgumentError("rope scaling needs original_max_position_embeddings > 0");
  }
  switch (p.scaling) {
    case RopeScalingKind::kNone:
      return BaseInvFreq(p.theta, p.rotary_dim);
    case RopeScalingKind::kLinear: {
      std::vector<float> inv = BaseInvFreq(p.theta, p.rotary_dim);
      for (float& f : inv) f /= static_cast<float>(p.factor);
      return inv;
    }
    case RopeScalingKind::kDynamic: {
      if (p.rotary_dim <= 2) return InvalidArgumentError("dynamic rope needs rotary_dim > 2");
      double orig = static_cast<double>(p.original_max_positions);
      double max_len = orig * p.factor;
      double r = static_cast<double>(p.rotary_dim);
      double base = p.theta * std::pow((p.factor * max_len / orig) - (p.factor - 1), r / (r - 2));
      return BaseInvFreq(base, p.rotary_dim);
    }
    case RopeScalingKind::kYarn:
      return YarnInvFreq(p);
  }
  return InternalError("unknown rope scaling kind");
}

float RopeAttentionScaling(const RopeParams& p) {
  if (p.scaling != RopeScalingKind::kYarn) return 1.0f;
  if (p.attention_factor) return static_cast<float>(*p.attention_factor);
  return p.factor > 1.0 ? static_cast<float>(0.1 * std::log(p.factor) + 1.0) : 1.0f;
}

StatusOr<RopeTable> BuildRopeTable(const RopeParams& p) {
  if (p.max_positions <= 0) {
    return InvalidArgumentError(fmt::format("rope table needs max_positions > 0, got {}", p.max_positions));
  }
  if (p.max_positions > kMaxRopePositions) {
    return InvalidArgumentError(fmt::format(
        "the model's positions (max_position_embeddings, times the rope scaling factor where scaled) come to {}, "
        "past the {} a RoPE table is built for",
        p.max_positions, kMaxRopePositions));
  }
  RopeTable t;
  PAGELLM_ASSIGN_OR_RETURN(t.inv_freq, ComputeRopeInvFreq(p));
  t.rotary_dim = p.rotary_dim;
  t.max_positions = p.max_positions;
  t.attention_scaling = RopeAttentionScaling(p);
  const int64_t half = p.rotary_dim / 2;
  t.cos.resize(static_cast<size_t>(p.max_positions * half));
  t.sin.resize(t.cos.size());
  for (int64_t pos = 0; pos < p.max_positions; ++pos) {
    for (int64_t j = 0; j < half; ++j) {
      float angle = static_cast<float>(pos) * t.inv_freq[static_cast<size_t>(j)];  // fp32, as HF
      size_t idx = static_cast<size_t>(pos * half + j);
      t.cos[idx] = static_cast<float>(std::cos(static_cast<double>(angle))) * t.attention_scaling;
      t.sin[idx] = static_cast<float>(std::sin(static_cast<double>(angle))) * t.attention_scaling;
    }
  }
  return t;
}

}  // namespace pagellm
