// `pagellm bench`: the benchmarks, as `vllm bench` has them (throughput: offline
// engine; serve: an HTTP client against a running server).
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks: throughput (offline), serve (online, over HTTP)");
  bench->require_subcommand(1);
  RegisterBenchThroughputCommand(*bench);
  RegisterBenchServeCommand(*bench);
}

}  // namespace pagellm::cli
