// pagellm: the command line. Each subcommand lives in its own *_command.cc file and
// registers itself here; main only parses, dispatches and maps errors to exit codes.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/logging.h"
#include "engine/mpi_job.h"

namespace {

// libgomp's default waits spin for ~300,000 iterations (PASSIVE: none). Both ends are
// wrong for a decode step, which is ~200 short parallel regions (one per GEMV) with a few
// microseconds of serial work between them:
//   * long spins: when another process takes a core, a spinning thread waits for a
//     descheduled peer and a step takes 10-30x longer (measured: 25 vs 820 tokens/s on a
//     loaded 2-core machine; spin count 100,000: decode 2.5 tokens/s with one core taken);
//   * no spin (PASSIVE): every region pays a futex wake-up: Qwen3-0.6B bf16 decode 15.3
//     tokens/s vs 17.7 with a short spin on an idle 2-core machine (~6% of the time in
//     futex wake/sleep).
// A bounded spin of 1,000 iterations (a few microseconds, then sleep) keeps the idle speed
// and the one-core-taken speed of PASSIVE (decode 8.9 vs 9.0 tokens/s, 16 sequences 51 vs
// 54). Threads are pinned to cores (OMP_PROC_BIND=close, OMP_PLACES=cores, within the
// process's CPU affinity mask) when the process uses one thread per core it may run on,
// i.e. when it owns its cores; run several instances under taskset/numactl with disjoint
// masks. libgomp reads its environment before main() runs, so set it and re-exec once.
// The user's own OMP_* / GOMP_SPINCOUNT settings win.
bool IsSet(const char* name) { return std::getenv(name) != nullptr; }

void ConfigureOpenMp(char** argv) {
  if (IsSet("PAGELLM_OMP_CONFIGURED")) return;  // after the re-exec
  setenv("PAGELLM_OMP_CONFIGURED", "1", 1);
  bool changed = false;
  if (!IsSet("OMP_WAIT_POLICY") && !IsSet("GOMP_SPINCOUNT")) {
    setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
    setenv("GOMP_SPINCOUNT", "1000", 1);
    changed = true;
  }
  cpu_set_t mask;
  const int affinity_cpus = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : 0;
  const char* threads = std::getenv("OMP_NUM_THREADS");
  const bool one_per_cpu = threads == nullptr || std::atoi(threads) == affinity_cpus;
  if (!IsSet("OMP_PROC_BIND") && !IsSet("OMP_PLACES") && !IsSet("GOMP_CPU_AFFINITY") && one_per_cpu &&
      affinity_cpus > 1) {
    setenv("OMP_PROC_BIND", "close", 1);
    setenv("OMP_PLACES", "cores", 1);
    changed = true;
  }
  if (changed) execv("/proc/self/exe", argv);  // returns only on failure: carry on with the defaults
}

}  // namespace

int main(int argc, char** argv) {
  ConfigureOpenMp(argv);
  CLI::App app{"pagellm: a serving engine for Qwen-family language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pagellm ") + PAGELLM_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warning or error")->capture_default_str();
  app.parse_complete_callback([&] { pagellm::SetLogLevel(log_level); });

  pagellm::cli::RegisterAllCommands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Under mpirun (--distributed-executor-backend mpi): finalize, or abort the job on error.
  pagellm::LeaveMpiJob(pagellm::cli::ExitCode());
  return pagellm::cli::ExitCode();
}
