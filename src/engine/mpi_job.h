// --distributed-executor-backend mpi: this process's part in an `mpirun` job. Every rank
// runs the same command line (`mpirun -np N pagellm serve ...`); MPI rank 0 runs the
// command itself (HTTP, scheduler, sampling; its DistGroup connects the MPI
// communicator), ranks > 0 run the tensor-parallel worker loop instead.
//
//   PAGELLM_ASSIGN_OR_RETURN(dist::MpiWorld world, JoinMpiJob(config));  // first thing
//   if (world.rank > 0) return RunMpiWorker(config);                      // never returns to the command
//   ...                                                                   // rank 0: the command as usual
//   LeaveMpiJob(exit_code);                                               // main(), at the very end
//
// Each rank loads and shards the model from its own flags. Before loading, rank 0
// broadcasts the flags a shard depends on (EngineConfigToJson) and every worker
// compares them with its own, so a rank started with other flags fails at once on
// every rank instead of computing garbage. The model path may differ (hosts may mount
// the model elsewhere).
#pragma once

#include "common/status.h"
#include "dist/communicator.h"
#include "dist/mpi_runtime.h"
#include "engine/engine_config.h"

namespace pagellm {

// Initializes MPI (once) and checks the job: started by mpirun, world size equal to
// --tensor-parallel-size. FailedPrecondition / InvalidArgument naming the flag otherwise.
StatusOr<dist::MpiWorld> JoinMpiJob(const EngineConfig& config);

// A rank > 0, to its end: OK when rank 0 stopped the group. SIGINT/SIGTERM are ignored
// here (blocked): rank 0 decides when the group stops, and a worker that died of
// mpirun's forwarded SIGTERM would abort the whole job while rank 0 drains.
Status RunMpiWorker(const EngineConfig& config);

// Rank 0: sends its shard-relevant flags; fails when a worker reported a mismatch.
Status SendEngineFlags(dist::Communicator& comm, const EngineConfig& config);
// A worker: receives rank 0's flags, compares them with its own, reports to rank 0.
Status CheckEngineFlags(dist::Communicator& comm, const EngineConfig& config);

// The process's last word to MPI (dist::FinishMpi): finalize on 0, abort the job on an
// error. A no-op when this process never joined a job.
void LeaveMpiJob(int exit_code);

}  // namespace pagellm
