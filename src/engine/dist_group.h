// DistGroup: the tensor-parallel group as rank 0 owns it. With the "mp" backend it
// starts ranks 1..N-1 as child processes (`pagellm dist-worker ...`, the same binary),
// connects the shared-memory communicator and watches the children. With "mpi",
// mpirun has started the ranks (engine/mpi_job.h): it connects the MPI communicator and
// checks that every rank got the same engine flags; Open MPI's runtime watches the
// ranks (a dead one ends the job, this process included).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto group, DistGroup::Launch(config));  // rank 0
//   group->comm().AllReduceSum(...);
//   if (!group->Health().ok()) ...   // a worker exited: the group is unusable
//
// Workers die with rank 0 (PR_SET_PDEATHSIG) and notice it while waiting; rank 0
// notices a dead worker within ~50 ms in any collective (and via Health() when idle),
// a hung one at the communicator's timeout (--dist-timeout, PAGELLM_DIST_TIMEOUT_S).
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "dist/communicator.h"
#include "engine/engine_config.h"

namespace pagellm {

// The hidden subcommand the workers run (src/cli registers it).
inline constexpr const char* kDistWorkerCommand = "dist-worker";

// What a worker needs to rebuild rank 0's model: passed on its command line.
struct DistWorkerArgs {
  int rank = 0;
  int world_size = 1;
  std::string group_id;
  std::string engine_config_json;  // EngineConfigToJson
};

std::string EngineConfigToJson(const EngineConfig& config);
StatusOr<EngineConfig> EngineConfigFromJson(const std::string& text);

// Seconds a collective waits for a peer before the group is declared hung.
double DistTimeoutSeconds();

class DistGroup {
 public:
  static StatusOr<std::unique_ptr<DistGroup>> Launch(const EngineConfig& config);
  // Stops the workers: they get kShutdown from the model first (TpCausalLm); then
  // this waits up to 2 s for them and kills what is left.
  ~DistGroup();

  dist::Communicator& comm() { return *comm_; }
  // Ranks sharing this host's memory (the memory plan's divisor): all of them with mp.
  int num_local_ranks() const { return num_local_ranks_; }
  // OK until a worker has exited (reaped here, so it never lingers as a zombie); then
  // Unavailable("tensor parallel rank 1 (pid 123) was killed by signal 9"). Thread-safe.
  Status Health();

 private:
  DistGroup() = default;
  Status Spawn(const DistWorkerArgs& args);
  Status ConnectMpi(const EngineConfig& config);

  std::unique_ptr<dist::Communicator> comm_;
  int num_local_ranks_ = 1;
  std::mutex mu_;               // guards workers_ and failure_ (Health runs on any thread)
  std::vector<pid_t> workers_;  // [world_size - 1]: rank r at r - 1; -1 once reaped
  std::string failure_;
};

// Runs an "mp" worker rank to the end: connects, then RunWorkerRank.
Status RunDistWorker(const DistWorkerArgs& args);
// The life of a rank > 0 on a connected communicator (either backend): loads and shards
// the model, receives the memory plan, then serves steps until rank 0 says stop (OK)
// or the group breaks. Steps wait step_timeout_s for a peer; idle waits have no limit.
Status RunWorkerRank(const EngineConfig& config, dist::Communicator& comm, double step_timeout_s);

}  // namespace pagellm
