#include "engine/sampling_validation.h"

#include <cmath>

#include <fmt/format.h>

namespace pagellm {
namespace {

Status Bad(const char* param, const std::string& what) {
  return InvalidArgumentError(fmt::format("{}: {}", param, what));
}

bool Finite(float x) { return std::isfinite(x); }

}  // namespace

Status ValidateSamplingParams(const SamplingParams& p, int32_t max_logprobs, int32_t vocab_size) {
  if (p.n < 1 || p.n > 128) return Bad("n", fmt::format("must be in [1, 128], got {}", p.n));
  if (p.temperature && (!Finite(*p.temperature) || *p.temperature < 0.0f || *p.temperature > 100.0f)) {
    return Bad("temperature", fmt::format("must be in [0, 100], got {}", *p.temperature));
  }
  if (p.top_p && (!Finite(*p.top_p) || *p.top_p <= 0.0f || *p.top_p > 1.0f)) {
    return Bad("top_p", fmt::format("must be in (0, 1], got {}", *p.top_p));
  }
  if (p.top_k && *p.top_k < -1) return Bad("top_k", fmt::format("must be -1 (disabled) or >= 0, got {}", *p.top_k));
  if (p.min_p && (!Finite(*p.min_p) || *p.min_p < 0.0f || *p.min_p > 1.0f)) {
    return Bad("min_p", fmt::format("must be in [0, 1], got {}", *p.min_p));
  }
  if (!Finite(p.presence_penalty) || p.presence_penalty < -2.0f || p.presence_penalty > 2.0f) {
    return Bad("presence_penalty", fmt::format("must be in [-2, 2], got {}", p.presence_penalty));
  }
  if (!Finite(p.frequency_penalty) || p.frequency_penalty < -2.0f || p.frequency_penalty > 2.0f) {
    return Bad("frequency_penalty", fmt::format("must be in [-2, 2], got {}", p.frequency_penalty));
  }
  if (p.repetition_penalty && (!Finite(*p.repetition_penalty) || *p.repetition_penalty <= 0.0f ||
                               *p.repetition_penalty > 2.0f)) {
    return Bad("repetition_penalty", fmt::format("must be in (0, 2], got {}", *p.repetition_penalty));
  }
  if (p.max_tokens && *p.max_tokens < 1) return Bad("max_tokens", fmt::format("must be at least 1, got {}", *p.max_tokens));
  if (p.min_tokens < 0) return Bad("min_tokens", fmt::format("must be >= 0, got {}", p.min_tokens));
  if (p.max_tokens && p.min_tokens > *p.max_tokens) {
    return Bad("min_tokens", fmt::format("must be <= max_tokens ({}), got {}", *p.max_tokens, p.min_tokens));
  }
  if (p.logprobs && (*p.logprobs < 0 || *p.logprobs > max_logprobs)) {
    return Bad("logprobs", fmt::format("must be in [0, {}] (--max-logprobs), got {}", max_logprobs, *p.logprobs));
  }
  if (p.prompt_logprobs && (*p.prompt_logprobs < 0 || *p.prompt_logprobs > max_logprobs)) {
    return Bad("prompt_logprobs", fmt::format("must be in [0, {}], got {}", max_logprobs, *p.prompt_logprobs));
  }
  for (const auto& [token, bias] : p.logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return Bad("logit_bias", fmt::format("token id {} is outside the vocabulary [0, {})", token, vocab_size));
    }
    if (!Finite(bias) || bias < -100.0f || bias > 100.0f) {
      return Bad("logit_bias", fmt::format("bias for token {} must be in [-100, 100], got {}", token, bias));
    }
  }
  for (int32_t token : p.stop_token_ids) {
    if (token < 0 || token >= vocab_size) {
      return Bad("stop_token_ids", fmt::format("token id {} is outside the vocabulary [0, {})", token, vocab_size));
    }
  }
  for (const std::string& s : p.stop) {
    if (s.empty()) return Bad("stop", "stop strings must not be empty");
  }
  return OkStatus();
}

}  // namespace pagellm
