// The process's Open MPI lifetime, for ranks started by `mpirun` (the `mpi` executor
// backend). MPI can be initialized and finalized once per process, so this is process
// state, kept apart from the communicators that use it.
//
//   PAGELLM_ASSIGN_OR_RETURN(MpiWorld world, InitMpi());   // every rank, first thing
//   if (world.rank > 0) ...                                // worker ranks
//   ...
//   FinishMpi(exit_code);                                  // once, as the process ends
//
// InitMpi refuses a process that mpirun did not start (an MPI singleton would quietly
// run alone). It blocks SIGINT/SIGTERM/SIGUSR2 while Open MPI starts its threads, so
// those threads never take a signal meant for the caller's handling (a process-directed
// SIGTERM delivered to a thread without a handler would kill the process).
// FinishMpi finalizes when every rank gets there and calls MPI_Abort otherwise: Open
// MPI 4.1's MPI_Finalize waits for every rank, and after a failure some rank may never
// arrive; the abort makes mpirun end the whole job with the exit code. So the ranks
// first meet at a barrier with a deadline.
#pragma once

#include "common/status.h"

namespace pagellm::dist {

struct MpiWorld {
  int rank = 0;
  int size = 1;
  int local_size = 1;  // ranks on this host (OMPI_COMM_WORLD_LOCAL_SIZE; 1 if unknown)
};

// True when the environment says mpirun (or its daemons) started this process.
bool LaunchedByMpirun();
// Initializes MPI (MPI_THREAD_SERIALIZED) on the first call; later calls return the
// same world. FailedPrecondition outside mpirun or when Open MPI cannot give the
// thread level; Unavailable when MPI_Init fails.
StatusOr<MpiWorld> InitMpi();
bool MpiInitialized();
// Marks the MPI job unusable (a collective failed or timed out): FinishMpi aborts.
void MarkMpiBroken();
// No-op unless InitMpi succeeded and FinishMpi has not run yet. No broken
// communicator and every rank arriving here in time (20 s after exit code 0, 2 s after
// an error, which every rank may have hit alike): MPI_Finalize, and the process exits
// with its code. Otherwise, with other ranks: MPI_Abort(code, or 1) (does not return).
void FinishMpi(int exit_code);

}  // namespace pagellm::dist
