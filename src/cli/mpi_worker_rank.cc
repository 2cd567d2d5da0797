// RunIfMpiWorkerRank (cli/engine_flags.h): where a command under `mpirun` forks into
// rank 0 (the command itself) and the worker ranks (the tensor-parallel loop).
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/logging.h"
#include "engine/mpi_job.h"

namespace pagellm::cli {

bool RunIfMpiWorkerRank(const EngineConfig& config) {
  if (config.distributed_executor_backend != "mpi") return false;
  auto world = JoinMpiJob(config);
  if (!ReportStatus(world.status())) return true;
  if (world->rank == 0) return false;
  Status s = RunMpiWorker(config);
  if (!s.ok()) PLOG_ERROR("tensor parallel rank {}: {}", world->rank, s.message());
  SetExitCode(s.ok() ? 0 : 1);
  return true;
}

}  // namespace pagellm::cli
