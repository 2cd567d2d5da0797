#include "engine/dist_group.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "common/json.h"
#include "common/logging.h"
#include "dist/mpi_communicator.h"
#include "dist/shm_communicator.h"
#include "engine/mpi_job.h"

namespace pagellm {

// Only what a worker needs to load and shard the same model.
std::string EngineConfigToJson(const EngineConfig& c) {
  Json j = {{"model", c.model},
            {"load_format", c.load_format},
            {"dtype", c.dtype},
            {"quantization", c.quantization},
            {"seed", c.seed},
            {"max_num_batched_tokens", c.max_num_batched_tokens},
            {"tensor_parallel_size", c.tensor_parallel_size},
            {"pipeline_parallel_size", c.pipeline_parallel_size}};
  return j.dump();
}

StatusOr<EngineConfig> EngineConfigFromJson(const std::string& text) {
  PAGELLM_ASSIGN_OR_RETURN(Json j, ParseJson(text, "--engine-config"));
  EngineConfig c;
  try {
    c.model = j.at("model").get<std::string>();
    c.load_format = j.at("load_format").get<std::string>();
    c.dtype = j.at("dtype").get<std::string>();
    c.quantization = j.at("quantization").get<std::string>();
    c.seed = j.at("seed").get<uint64_t>();
    c.max_num_batched_tokens = j.at("max_num_batched_tokens").get<int32_t>();
    c.tensor_parallel_size = j.at("tensor_parallel_size").get<int32_t>();
    c.pipeline_parallel_size = j.at("pipeline_parallel_size").get<int32_t>();
  } catch (const Json::exception& e) {
    return InvalidArgumentError(fmt::format("--engine-config: {}", e.what()));
  }
  return c;
}

double DistTimeoutSeconds() {
  const char* env = std::getenv("PAGELLM_DIST_TIMEOUT_S");
  const double v = env != nullptr ? std::atof(env) : 0.0;
  return v > 0 ? v : 10.0;
}

StatusOr<std::unique_ptr<DistGroup>> DistGroup::Launch(const EngineConfig& config) {
  if (config.distributed_executor_backend == "mpi") {
    std::unique_ptr<DistGroup> group(new DistGroup());
    PAGELLM_RETURN_IF_ERROR(group->ConnectMpi(config));
    return group;
  }
  if (config.distributed_executor_backend != "mp") {
    return InvalidArgumentError(fmt::format("--distributed-executor-backend {}: use mp (worker processes on this "
                                            "host) or mpi (ranks started by mpirun)",
                                            config.distributed_executor_backend));
  }
  const int world = config.world_size();
  if (world > dist::kMaxShmRanks) {
    return InvalidArgumentError(fmt::format("--tensor-parallel-size {} x --pipeline-parallel-size {}: at most {} ranks "
                                            "on one host", config.tensor_parallel_size, config.pipeline_parallel_size,
                                            dist::kMaxShmRanks));
  }
  std::unique_ptr<DistGroup> group(new DistGroup());
  const std::string id = dist::ShmCommunicator::MakeGroupId();
  DistWorkerArgs args{.rank = 0, .world_size = world, .group_id = id, .engine_config_json = EngineConfigToJson(config)};
  for (int r = 1; r < world; ++r) {
    args.rank = r;
    PAGELLM_RETURN_IF_ERROR(group->Spawn(args));
  }
  dist::ShmOptions opt{.group_id = id, .rank = 0, .world_size = world, .timeout_s = DistTimeoutSeconds()};
  PAGELLM_ASSIGN_OR_RETURN(group->comm_, dist::ShmCommunicator::Create(opt));
  group->num_local_ranks_ = world;
  PLOG_INFO("parallel group: {} ranks (tensor parallel {} x pipeline parallel {}) on this host (mp), shared-memory "
            "group {}", world, config.tensor_parallel_size, config.pipeline_parallel_size, id);
  return group;
}

Status DistGroup::ConnectMpi(const EngineConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(dist::MpiWorld world, JoinMpiJob(config));
  if (world.rank != 0) return InternalError("tensor parallel: only MPI rank 0 runs the engine");
  // The workers joined first thing; 60 s covers a slow start on another host.
  PAGELLM_ASSIGN_OR_RETURN(comm_, dist::MpiCommunicator::Create({.timeout_s = DistTimeoutSeconds(),
                                                                 .init_timeout_s = 60}));
  PAGELLM_RETURN_IF_ERROR(SendEngineFlags(*comm_, config));
  num_local_ranks_ = world.local_size;
  // SIGTERM to this pid drains; mpirun's own SIGTERM kills the job after 1 s.
  PLOG_INFO("tensor parallel: {} ranks over Open MPI (mpi), {} on this host; rank 0 is pid {}", world.size,
            world.local_size, getpid());
  return OkStatus();
}

Status DistGroup::Spawn(const DistWorkerArgs& a) {
  const char* exe_env = std::getenv("PAGELLM_DIST_WORKER_EXE");  // tests: a binary with the command
  const std::string exe = exe_env != nullptr ? exe_env : "/proc/self/exe";
  std::vector<std::string> argv = {"pagellm",      kDistWorkerCommand, "--rank",          std::to_string(a.rank),
                                   "--world-size", std::to_string(a.world_size),       "--group-id", a.group_id,
                                   "--engine-config", a.engine_config_json};
  std::vector<char*> cargv;
  for (std::string& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return UnavailableError("fork failed: cannot start a tensor-parallel worker");
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec (the parent may have threads).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(70);
    execv(exe.c_str(), cargv.data());
    _exit(71);
  }
  workers_.push_back(pid);
  return OkStatus();
}

Status DistGroup::Health() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < workers_.size() && failure_.empty(); ++i) {
    if (workers_[i] <= 0) continue;
    int status = 0;
    if (waitpid(workers_[i], &status, WNOHANG) != workers_[i]) continue;
    failure_ = fmt::format("tensor parallel rank {} (pid {}) {}", i + 1, workers_[i],
                           WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                             : fmt::format("was killed by signal {}", WTERMSIG(status)));
    workers_[i] = -1;
  }
  return failure_.empty() ? OkStatus() : UnavailableError(failure_);
}

DistGroup::~DistGroup() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t& pid : workers_) {
    while (pid > 0) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        pid = -1;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
}

}  // namespace pagellm
