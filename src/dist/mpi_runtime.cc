#include "dist/mpi_runtime.h"

#include <mpi.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace pagellm::dist {
namespace {

std::mutex g_mu;  // guards the fields below
bool g_initialized = false;
bool g_finished = false;
MpiWorld g_world;
std::atomic<bool> g_broken{false};

// How long the ranks wait for each other at the end before giving up on MPI_Finalize:
// after a success the others are about to arrive (rank 0 stopped them); after an error
// they arrive only when they failed the same way (a bad flag every rank sees).
constexpr double kFinishBarrierS = 20;
constexpr double kFinishBarrierAfterErrorS = 2;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// True when every rank reached this barrier within timeout_s. MPI_Finalize waits for
// every rank with no deadline (and, in Open MPI 4.1, outlives mpirun when a rank has
// died: measured 2 s past mpirun's exit), so it is called only after this succeeds.
bool AllRanksArrive(double timeout_s) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(MPI_COMM_WORLD, &request) != MPI_SUCCESS) return false;
  const double start = Now();
  for (;;) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done != 0) return true;
    const double waited = Now() - start;
    if (waited > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::clamp(waited / 10, 5e-6, 2e-3)));
  }
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

}  // namespace

bool LaunchedByMpirun() {
  // Open MPI's launcher sets OMPI_COMM_WORLD_SIZE for every rank; PMIx-based launchers
  // (prterun, srun --mpi=pmix) set PMIX_RANK.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

StatusOr<MpiWorld> InitMpi() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_initialized) return g_world;
  if (g_finished) return FailedPreconditionError("Open MPI was already finalized in this process");
  if (!LaunchedByMpirun()) {
    return FailedPreconditionError("this process was not started by mpirun (run it as `mpirun -np N pagellm ...`)");
  }
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int provided = 0;
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != MPI_SUCCESS) return UnavailableError(fmt::format("MPI_Init_thread failed (error {})", rc));
  g_initialized = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
  g_world.local_size = std::max(EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1), 1);
  if (provided < MPI_THREAD_SERIALIZED) {
    // The engine calls MPI from its step thread, not the thread that initialized it.
    return FailedPreconditionError(
        fmt::format("Open MPI provides thread level {} here; MPI_THREAD_SERIALIZED ({}) is needed", provided,
                    MPI_THREAD_SERIALIZED));
  }
  return g_world;
}

bool MpiInitialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_initialized && !g_finished;
}

void MarkMpiBroken() { g_broken.store(true); }

void FinishMpi(int exit_code) {
  std::unique_lock<std::mutex> lock(g_mu);
  if (!g_initialized || g_finished) return;
  g_finished = true;
  const int size = g_world.size;
  lock.unlock();
  if (size == 1 ||
      (!g_broken.load() && AllRanksArrive(exit_code == 0 ? kFinishBarrierS : kFinishBarrierAfterErrorS))) {
    MPI_Finalize();  // mpirun then reports any non-zero exit code
    return;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code != 0 ? exit_code : 1);
}

}  // namespace pagellm::dist
