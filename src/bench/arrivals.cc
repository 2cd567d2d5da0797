#include "bench/arrivals.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace pagellm::bench {

StatusOr<std::vector<double>> ArrivalOffsets(int64_t num_requests, const ArrivalConfig& config) {
  if (num_requests < 0) return InvalidArgumentError("the number of requests must be non-negative");
  if (!(config.request_rate > 0))
    return InvalidArgumentError(fmt::format("--request-rate must be positive, got {}", config.request_rate));
  if (!(config.burstiness > 0))
    return InvalidArgumentError(fmt::format("--burstiness must be positive, got {}", config.burstiness));
  std::vector<double> offsets(static_cast<size_t>(num_requests), 0.0);
  if (std::isinf(config.request_rate) || num_requests == 0) return offsets;

  std::mt19937_64 rng(config.seed);
  const double rate = config.request_rate;
  double t = 0.0;
  for (double& offset : offsets) {
    if (std::isinf(config.burstiness)) {
      t += 1.0 / rate;
    } else {
      std::gamma_distribution<double> gap(config.burstiness, 1.0 / (rate * config.burstiness));
      t += gap(rng);
    }
    offset = t;
  }
  if (offsets.back() > 0) {
    const double scale = (static_cast<double>(num_requests) / rate) / offsets.back();
    for (double& offset : offsets) offset *= scale;
  }
  return offsets;
}

}  // namespace pagellm::bench
