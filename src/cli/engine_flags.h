// The engine flags shared by `generate`, `logits`, `bench throughput` and `serve`,
// spelled as vLLM spells them (`--max-model-len`, `--kv-cache-memory`, ...).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine_config.h"

namespace pagellm::cli {

// Adds the flags to `cmd`, writing into `config`. The model is a separate argument
// (positional for serve, --model elsewhere), added by the caller.
void AddEngineFlags(CLI::App* cmd, EngineConfig* config);

// --distributed-executor-backend mpi (mpi_worker_rank.cc): every rank of the mpirun job
// runs the same command; call this first in the command's callback, with the engine
// config complete (seed applied). Returns false when the command should go on (no mpi,
// or MPI rank 0). Returns true when this process is done: an MPI rank > 0 that ran the
// tensor-parallel worker to its end, or a failed join (not under mpirun, world size !=
// --tensor-parallel-size), reported. Either way the exit code is set.
bool RunIfMpiWorkerRank(const EngineConfig& config);

}  // namespace pagellm::cli
