// Request arrival times of `vllm bench serve`: everything at t = 0 for an infinite rate,
// otherwise Gamma-distributed gaps (shape = burstiness, scale = 1 / (rate * burstiness)),
// so the mean gap is 1/rate and the gaps' coefficient of variation is 1/sqrt(burstiness):
// burstiness 1 is a Poisson process, < 1 burstier, > 1 smoother, inf a fixed interval.
// As vLLM does, the cumulative times are then rescaled so the last arrival is exactly at
// num_requests / rate, which removes the seed's noise from the measured throughput.
//
//   ArrivalConfig config{.request_rate = 4.0, .burstiness = 0.5, .seed = 0};
//   PAGELLM_ASSIGN_OR_RETURN(std::vector<double> at_s, ArrivalOffsets(100, config));
//   // at_s[i] = seconds after the benchmark start at which request i is sent
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/status.h"

namespace pagellm::bench {

struct ArrivalConfig {
  double request_rate = std::numeric_limits<double>::infinity();  // requests / s, > 0
  double burstiness = 1.0;                                        // > 0, may be inf
  uint64_t seed = 0;
};

// [num_requests] non-decreasing offsets in seconds from the benchmark start.
StatusOr<std::vector<double>> ArrivalOffsets(int64_t num_requests, const ArrivalConfig& config);

}  // namespace pagellm::bench
