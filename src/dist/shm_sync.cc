#include "dist/shm_sync.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <immintrin.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

namespace pagellm::dist {
namespace {

// Shared (not FUTEX_PRIVATE): the word lives in a mapping other processes share.
void FutexWait(const std::atomic<uint32_t>* word, uint32_t expected, double timeout_s) {
  timespec ts{static_cast<time_t>(timeout_s), static_cast<long>((timeout_s - static_cast<time_t>(timeout_s)) * 1e9)};
  syscall(SYS_futex, reinterpret_cast<const uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

void Publish(Stamp& stamp, uint32_t seq) {
  stamp.seq.store(seq, std::memory_order_seq_cst);
  if (stamp.waiters.load(std::memory_order_seq_cst) > 0) FutexWakeAll(&stamp.seq);
}

bool ProcessAlive(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A child that exited stays a zombie until its parent reaps it: kill() still succeeds.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return errno != ENOENT;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // "pid (comm) S ...": the state follows the last ')' (comm may contain one).
  const char* close = nullptr;
  for (const char* p = buf; *p != '\0'; ++p) {
    if (*p == ')') close = p;
  }
  if (close == nullptr || close[1] == '\0' || close[2] == '\0') return true;
  return close[2] != 'Z' && close[2] != 'X';
}

Status WaitFor(const Stamp& stamp, uint32_t target, const WaitContext& ctx, double* waited_s) {
  if (SeqReached(stamp.seq.load(std::memory_order_acquire), target)) {
    if (waited_s != nullptr) *waited_s = 0;
    return OkStatus();
  }
  const double start = SteadySeconds();
  auto done = [&] {
    if (waited_s != nullptr) *waited_s = SteadySeconds() - start;
    return OkStatus();
  };
  for (int i = 0;; ++i) {
    for (int j = 0; j < 64; ++j) {
      if (SeqReached(stamp.seq.load(std::memory_order_acquire), target)) return done();
      _mm_pause();
    }
    if ((i & 15) == 15 && SteadySeconds() - start > ctx.spin_s) break;
  }
  auto& waiters = const_cast<Stamp&>(stamp).waiters;
  double next_alive_check = SteadySeconds() + 0.05;
  for (;;) {
    waiters.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = stamp.seq.load(std::memory_order_seq_cst);
    if (!SeqReached(seen, target)) FutexWait(&stamp.seq, seen, 0.01);
    waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (SeqReached(stamp.seq.load(std::memory_order_acquire), target)) return done();
    const double now = SteadySeconds();
    if (ctx.timeout_s > 0 && now - start > ctx.timeout_s) {
      return UnavailableError(fmt::format("distributed: rank {} did not reach {} #{} within {:.1f} s (hung?)",
                                          ctx.peer_rank, ctx.what, target, ctx.timeout_s));
    }
    if (ctx.peer_pid > 0 && now >= next_alive_check) {
      next_alive_check = now + 0.05;
      if (!ProcessAlive(ctx.peer_pid)) {
        return UnavailableError(fmt::format("distributed: rank {} (pid {}) exited while this rank waited for its {} #{}",
                                            ctx.peer_rank, ctx.peer_pid, ctx.what, target));
      }
    }
  }
}

}  // namespace pagellm::dist
