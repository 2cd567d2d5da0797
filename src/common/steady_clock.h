// Seconds on the monotonic clock: for durations and deadlines inside one process
// (never compared across processes or with wall time).
#pragma once

#include <chrono>

namespace pagellm {

inline double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace pagellm
