#include "engine/stop_checker.h"

#include <algorithm>

#include "common/status.h"

namespace pagellm {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
  }
  return "";
}

StopChecker::StopChecker(const SamplingParams& params, std::span<const int32_t> eos_token_ids,
                         int32_t max_model_len, int32_t num_prompt_tokens)
    : eos_token_ids_(eos_token_ids.begin(), eos_token_ids.end()),
      stop_token_ids_(params.stop_token_ids),
      max_tokens_(params.max_tokens),
      min_tokens_(params.min_tokens),
      ignore_eos_(params.ignore_eos),
      include_stop_str_(params.include_stop_str_in_output),
      max_total_tokens_(max_model_len > 0 ? int64_t{max_model_len} - num_prompt_tokens : 0) {
  // An empty stop string would match everywhere; vLLM's API rejects it, we skip it.
  for (const std::string& stop : params.stop) {
    if (!stop.empty()) stop_strings_.push_back(stop);
  }
  // max_model_len already reached by the prompt: the first token ends the sequence.
  if (max_model_len > 0 && max_total_tokens_ < 1) max_total_tokens_ = 1;
}

FinishReason StopChecker::CheckTokenStop(int32_t token_id, StopResult& result) const {
  if (num_output_tokens_ <= min_tokens_) return FinishReason::kNone;
  if (!ignore_eos_ &&
      std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token_id) != eos_token_ids_.end()) {
    return FinishReason::kStop;  // vLLM leaves stop_reason unset for EOS
  }
  if (std::find(stop_token_ids_.begin(), stop_token_ids_.end(), token_id) !=
      stop_token_ids_.end()) {
    result.stop_reason = token_id;
    return FinishReason::kStop;
  }
  return FinishReason::kNone;
}

bool StopChecker::CheckStopStrings(size_t search_from, StopResult& result) {
  size_t best_pos = std::string::npos;
  const std::string* best = nullptr;
  for (const std::string& stop : stop_strings_) {
    // Only matches that end in the unsearched text [search_from, end) are new.
    const size_t start = search_from + 1 > stop.size() ? search_from + 1 - stop.size() : 0;
    const size_t pos = text_.find(stop, start);
    if (pos != std::string::npos && pos < best_pos) {
      best_pos = pos;
      best = &stop;
    }
  }
  if (best == nullptr) return false;
  const size_t cut = include_stop_str_ ? best_pos + best->size() : best_pos;
  // Hold-back guarantees nothing of the stop string has been streamed already.
  PAGELLM_CHECK(cut >= num_emitted_bytes_);
  text_.resize(cut);
  result.stop_reason = *best;
  return true;
}

size_t StopChecker::HoldBackLength() const {
  // With include_stop_str_in_output the stop string is part of the output anyway, so
  // nothing before it ever needs retracting (vLLM holds back nothing either).
  if (include_stop_str_) return 0;
  size_t held = 0;
  for (const std::string& stop : stop_strings_) {
    const size_t longest = std::min(stop.size() - 1, text_.size());
    for (size_t k = longest; k > held; --k) {
      if (std::string_view(text_).substr(text_.size() - k) == std::string_view(stop).substr(0, k)) {
        held = k;
        break;
      }
    }
  }
  return held;
}

StopResult StopChecker::Update(int32_t token_id, std::string_view text_delta) {
  PAGELLM_CHECK(!finished_);
  ++num_output_tokens_;
  StopResult result;
  const bool length_capped = (max_tokens_.has_value() && num_output_tokens_ >= *max_tokens_) ||
                             (max_total_tokens_ > 0 && num_output_tokens_ >= max_total_tokens_);
  FinishReason reason = length_capped ? FinishReason::kLength : CheckTokenStop(token_id, result);
  const size_t previous_size = text_.size();
  if (reason != FinishReason::kStop || include_stop_str_) text_.append(text_delta);
  if (num_output_tokens_ <= min_tokens_) min_tokens_text_end_ = text_.size();
  if (!stop_strings_.empty() && num_output_tokens_ > min_tokens_ &&
      text_.size() > previous_size) {
    if (CheckStopStrings(std::max(previous_size, min_tokens_text_end_), result)) {
      reason = FinishReason::kStop;
    }
  }
  finished_ = reason != FinishReason::kNone;
  result.finished = finished_;
  result.reason = reason;
  const size_t held = finished_ ? 0 : HoldBackLength();
  const size_t emit_end = std::max(num_emitted_bytes_, text_.size() - std::min(held, text_.size()));
  result.text_to_emit = text_.substr(num_emitted_bytes_, emit_end - num_emitted_bytes_);
  num_emitted_bytes_ = emit_end;
  return result;
}

std::string StopChecker::FinishHeldBack() {
  finished_ = true;
  std::string held = text_.substr(num_emitted_bytes_);
  num_emitted_bytes_ = text_.size();
  return held;
}

}  // namespace pagellm
