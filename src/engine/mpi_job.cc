#include "engine/mpi_job.h"

#include <pthread.h>
#include <signal.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/json.h"
#include "common/logging.h"
#include "dist/mpi_communicator.h"
#include "engine/dist_group.h"

namespace pagellm {

StatusOr<dist::MpiWorld> JoinMpiJob(const EngineConfig& config) {
  auto world = dist::InitMpi();
  if (!world.ok()) return world.status().WithPrefix("--distributed-executor-backend mpi");
  if (world->size != config.world_size()) {
    return InvalidArgumentError(fmt::format(
        "--distributed-executor-backend mpi: mpirun started {} ranks but --tensor-parallel-size {} x "
        "--pipeline-parallel-size {} is {}; they must be equal (mpirun -np {} ...)", world->size,
        config.tensor_parallel_size, config.pipeline_parallel_size, config.world_size(), config.world_size()));
  }
  return world;
}

Status SendEngineFlags(dist::Communicator& comm, const EngineConfig& config) {
  std::string json = EngineConfigToJson(config);
  int64_t nbytes = static_cast<int64_t>(json.size());
  PAGELLM_RETURN_IF_ERROR(comm.Broadcast(&nbytes, sizeof(nbytes), 0));
  PAGELLM_RETURN_IF_ERROR(comm.Broadcast(json.data(), nbytes, 0));
  std::vector<uint8_t> agree(static_cast<size_t>(comm.world_size()));
  uint8_t mine = 1;
  PAGELLM_RETURN_IF_ERROR(comm.Gather(&mine, 1, agree.data(), 0));
  std::string differing;
  for (int r = 1; r < comm.world_size(); ++r) {
    if (agree[static_cast<size_t>(r)] == 0) differing += fmt::format("{}{}", differing.empty() ? "" : ", ", r);
  }
  if (differing.empty()) return OkStatus();
  return FailedPreconditionError(fmt::format(
      "MPI rank(s) {} were started with other engine flags than rank 0 (their log names them); every rank of the job "
      "must get the same command line", differing));
}

Status CheckEngineFlags(dist::Communicator& comm, const EngineConfig& config) {
  int64_t nbytes = 0;
  PAGELLM_RETURN_IF_ERROR(comm.Broadcast(&nbytes, sizeof(nbytes), 0));
  if (nbytes < 0 || nbytes > (1 << 20)) return InternalError("MPI rank 0 sent a malformed engine configuration");
  std::string json(static_cast<size_t>(nbytes), '\0');
  PAGELLM_RETURN_IF_ERROR(comm.Broadcast(json.data(), nbytes, 0));
  PAGELLM_ASSIGN_OR_RETURN(Json theirs, ParseJson(json, "rank 0's engine flags"));
  PAGELLM_ASSIGN_OR_RETURN(Json mine, ParseJson(EngineConfigToJson(config), "engine flags"));
  std::string diff;
  for (const auto& [key, value] : mine.items()) {
    if (key == "model" || (theirs.contains(key) && theirs[key] == value)) continue;
    diff += fmt::format("{}{}: {} here, {} on rank 0", diff.empty() ? "" : "; ", key, value.dump(),
                        theirs.contains(key) ? theirs[key].dump() : "unset");
  }
  uint8_t agree = diff.empty() ? 1 : 0;
  PAGELLM_RETURN_IF_ERROR(comm.Gather(&agree, 1, nullptr, 0));
  if (diff.empty()) return OkStatus();
  return FailedPreconditionError(fmt::format("engine flags differ from rank 0's ({})", diff));
}

Status RunMpiWorker(const EngineConfig& config) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // No deadline while rank 0 loads its model and plans memory: a dead rank 0 ends the
  // job through mpirun, and RunWorkerRank sets the step timeout once steps begin.
  PAGELLM_ASSIGN_OR_RETURN(auto comm,
                           dist::MpiCommunicator::Create({.timeout_s = 0, .init_timeout_s = 0}));
  PAGELLM_RETURN_IF_ERROR(CheckEngineFlags(*comm, config));
  return RunWorkerRank(config, *comm, DistTimeoutSeconds());
}

void LeaveMpiJob(int exit_code) { dist::FinishMpi(exit_code); }

}  // namespace pagellm
