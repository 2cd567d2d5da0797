// Test helpers for sched tests: request construction and a deterministic fake model.
#pragma once

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "sched/request.h"
#include "sched/scheduler.h"

namespace pagellm::testing_util {

inline std::vector<int32_t> Iota(int32_t n, int32_t start = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

inline std::unique_ptr<Request> MakeRequest(const std::string& id, std::vector<int32_t> prompt,
                                            int32_t max_tokens = 4,
                                            std::vector<int32_t> eos = {}) {
  SamplingParams params;
  params.max_tokens = max_tokens;
  return std::make_unique<Request>(id, std::move(prompt), params, 0.0, std::move(eos));
}

// The "model": the next token is a pure function of the whole sequence so far, so a
// request that is preempted and recomputed must produce exactly the same tokens.
inline int32_t FakeNextToken(std::span<const int32_t> tokens) {
  uint64_t h = 1469598103934665603ULL;
  for (int32_t t : tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ULL;
  return static_cast<int32_t>(2000 + h % 5000);  // never collides with small test ids
}

// Sampled tokens for `out`, computed from the scheduler's own view of each request
// plus the new tokens; -1 for chunks that do not sample.
inline std::vector<int32_t> FakeSample(const Scheduler& sched, const SchedulerOutput& out) {
  std::vector<int32_t> sampled;
  for (const ScheduledRequest& s : out.scheduled) {
    const Request* req = sched.FindRequest(s.request_id);
    sampled.push_back(s.samples ? FakeNextToken(req->all_token_ids()) : -1);
  }
  return sampled;
}

}  // namespace pagellm::testing_util
