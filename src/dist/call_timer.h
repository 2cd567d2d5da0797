// Helpers the Communicator transports share (shm_communicator.cc, mpi_communicator.cc).
//
//   CallTimer timer(stats_);   // counts the call and adds its wall time to stats_.total_s
//   return ForEachChunk(nbytes, chunk_bytes, [&](int64_t off, int64_t n) { ... });
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/status.h"
#include "dist/communicator.h"
#include "dist/shm_sync.h"

namespace pagellm::dist {

// Times a call into stats (num_calls, total_s), on every return path.
class CallTimer {
 public:
  explicit CallTimer(CommStats& stats) : stats_(stats), start_(SteadySeconds()) { ++stats_.num_calls; }
  ~CallTimer() { stats_.total_s += SteadySeconds() - start_; }
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  CommStats& stats_;
  double start_;
};

// Calls fn(offset, size) for each chunk of a message, stopping at the first error.
template <typename Fn>
Status ForEachChunk(int64_t nbytes, int64_t chunk_bytes, Fn fn) {
  for (int64_t off = 0; off < nbytes; off += chunk_bytes) {
    PAGELLM_RETURN_IF_ERROR(fn(off, std::min(chunk_bytes, nbytes - off)));
  }
  return OkStatus();
}

}  // namespace pagellm::dist
