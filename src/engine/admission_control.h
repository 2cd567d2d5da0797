// AdmissionControl: the bounded waiting queue of `pagellm serve` (vLLM's
// --max-num-queued-reqs / --max-num-queued-tokens). A request that would push the
// queue (requests not yet running: added, waiting, preempted) past either bound is
// refused at once with ResourceExhausted (HTTP 429), and the caller is told when to
// retry: the queue's tokens over the rate at which a waiting queue drained, measured
// from the engine's own steps (prompt tokens computed per second of time in which
// requests were waiting: a queue stuck behind long-running requests drains slowly,
// and the estimate says so), so a client backs off for as long as the queue takes.
//
//   AdmissionControl ac({.max_queued_reqs = 64, .max_queued_tokens = 0});
//   ac.OnStep(stats.prompt_tokens_total, /*queue_waiting=*/true, now);  // engine thread
//   Status s = ac.Admit(queued_reqs, queued_tokens, n, prompt_tokens);
//   if (!s.ok()) header("Retry-After", ac.RetryAfterSeconds(queued_tokens));
#pragma once

#include <cstdint>

#include "common/status.h"

namespace pagellm {

struct AdmissionLimits {
  int64_t max_queued_reqs = 0;    // 0: unbounded
  int64_t max_queued_tokens = 0;  // prompt tokens not yet computed; 0: unbounded
};

class AdmissionControl {
 public:
  explicit AdmissionControl(AdmissionLimits limits) : limits_(limits) {}

  // OK, or ResourceExhausted naming the bound and the numbers. `num_seqs` sequences
  // (n > 1 samples) of `prompt_tokens` each join the queue.
  Status Admit(int64_t queued_reqs, int64_t queued_tokens, int64_t num_seqs, int64_t prompt_tokens) const;

  // The engine's cumulative prompt tokens computed after a step ending at `now_s`;
  // `queue_waiting`: requests were waiting during the step (only then does its time
  // say how fast a queue drains).
  void OnStep(int64_t prompt_tokens_total, bool queue_waiting, double now_s);

  // Seconds until a queue of `queued_tokens` has drained at the measured prefill rate
  // (1..600; 1 before anything was measured).
  int64_t RetryAfterSeconds(int64_t queued_tokens) const;
  double prefill_tokens_per_s() const { return rate_; }

 private:
  AdmissionLimits limits_;
  int64_t last_tokens_ = -1;
  double last_s_ = 0.0;
  double window_s_ = 0.0;  // waiting time since the rate was last updated
  int64_t window_tokens_ = 0;
  double rate_ = 0.0;      // EWMA of drained tokens/s over windows of >= 0.5 s of waiting
};

}  // namespace pagellm
