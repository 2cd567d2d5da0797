// `pagellm dist-worker`: a tensor-parallel rank > 0, started by rank 0 (engine/dist_group.h),
// never by hand. Hidden from --help. Exits 0 when rank 0 stops the group, 1 when the
// group breaks (rank 0 gone or hung), so rank 0's logs name the failing rank.
#include <memory>

#include "cli/commands.h"
#include "common/logging.h"
#include "engine/dist_group.h"

namespace pagellm::cli {

void RegisterDistWorkerCommand(CLI::App& app) {
  auto args = std::make_shared<DistWorkerArgs>();
  CLI::App* cmd = app.add_subcommand(kDistWorkerCommand, "tensor-parallel worker rank (started by pagellm itself)");
  cmd->group("");  // hidden
  cmd->add_option("--rank", args->rank)->required();
  cmd->add_option("--world-size", args->world_size)->required();
  cmd->add_option("--group-id", args->group_id)->required();
  cmd->add_option("--engine-config", args->engine_config_json)->required();
  cmd->callback([args] {
    Status s = RunDistWorker(*args);
    if (!s.ok()) PLOG_ERROR("tensor parallel rank {}: {}", args->rank, s.message());
    SetExitCode(s.ok() ? 0 : 1);
  });
}

}  // namespace pagellm::cli
