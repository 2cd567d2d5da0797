#include "engine/admission_control.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace pagellm {

Status AdmissionControl::Admit(int64_t queued_reqs, int64_t queued_tokens, int64_t num_seqs,
                               int64_t prompt_tokens) const {
  if (limits_.max_queued_reqs > 0 && queued_reqs + num_seqs > limits_.max_queued_reqs) {
    return ResourceExhaustedError(fmt::format(
        "the server is overloaded: {} requests are waiting and --max-num-queued-reqs is {}; retry later",
        queued_reqs, limits_.max_queued_reqs));
  }
  const int64_t tokens = num_seqs * prompt_tokens;
  if (limits_.max_queued_tokens > 0 && queued_tokens + tokens > limits_.max_queued_tokens) {
    // A prompt larger than the whole bound could never be admitted: that is the
    // client's error, not a reason to retry.
    if (tokens > limits_.max_queued_tokens) {
      return InvalidArgumentError(fmt::format(
          "prompt: {} prompt tokens ({} x {} sequences) exceed --max-num-queued-tokens ({}); this request can never "
          "be queued", tokens, prompt_tokens, num_seqs, limits_.max_queued_tokens));
    }
    return ResourceExhaustedError(fmt::format(
        "the server is overloaded: {} prompt tokens are waiting, this request adds {} and --max-num-queued-tokens is "
        "{}; retry later", queued_tokens, tokens, limits_.max_queued_tokens));
  }
  return OkStatus();
}

void AdmissionControl::OnStep(int64_t prompt_tokens_total, bool queue_waiting, double now_s) {
  if (last_tokens_ >= 0 && queue_waiting) {
    window_tokens_ += prompt_tokens_total - last_tokens_;
    window_s_ += now_s - last_s_;
  }
  last_tokens_ = prompt_tokens_total;
  last_s_ = now_s;
  if (window_s_ < 0.5) return;
  const double measured = static_cast<double>(window_tokens_) / window_s_;
  rate_ = rate_ == 0.0 ? measured : 0.7 * rate_ + 0.3 * measured;
  window_s_ = 0.0;
  window_tokens_ = 0;
}

int64_t AdmissionControl::RetryAfterSeconds(int64_t queued_tokens) const {
  if (rate_ <= 0.0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<double>(queued_tokens) / rate_)), 1, 600);
}

}  // namespace pagellm
