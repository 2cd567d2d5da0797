// Cross-process signalling for the shared-memory communicator: a Stamp is a sequence
// number one process publishes and others wait for (spin first, then futex sleep).
//
//   // publisher                         // waiter
//   Publish(stamp, seq);                 PAGELLM_RETURN_IF_ERROR(WaitFor(stamp, seq, wait));
//
// Spinning keeps the small-message latency at a few microseconds when both ranks are
// on cores; the futex sleep keeps an idle worker from burning a core between steps.
// Sleepers register in `waiters` so Publish issues the wake syscall only when someone
// sleeps (a seq_cst store/load pair on both sides: either the waiter sees the new
// sequence or the publisher sees the waiter).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/steady_clock.h"

namespace pagellm::dist {

struct alignas(64) Stamp {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};
};
static_assert(sizeof(Stamp) == 64);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// True when `seq` has reached `target` (wrap-around safe).
inline bool SeqReached(uint32_t seq, uint32_t target) { return static_cast<int32_t>(seq - target) >= 0; }

void Publish(Stamp& stamp, uint32_t seq);

struct WaitContext {
  double spin_s = 100e-6;  // spin this long before sleeping
  double timeout_s = 10;   // <= 0: no deadline
  int peer_pid = 0;        // checked while sleeping; 0: not checked
  int peer_rank = -1;      // for the error message
  const char* what = "";   // which wait, for the error message
};

// Waits until stamp.seq reaches `target`. Unavailable when the peer process has exited
// or the deadline passed. `waited_s` (optional) receives the time spent.
Status WaitFor(const Stamp& stamp, uint32_t target, const WaitContext& ctx, double* waited_s = nullptr);

// False when `pid` no longer runs (gone, or a zombie not yet reaped).
bool ProcessAlive(int pid);

}  // namespace pagellm::dist
