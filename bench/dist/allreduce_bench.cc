// All-reduce latency between ranks on one host (not a test; run by hand:
// bench/dist/run.sh). Prints, per message size, the median and p90 time of one fp32
// sum-all-reduce on rank 0, and a same-size memcpy as the peer in the same run.
//   allreduce_bench [--ranks 2] [--iters 20000] [--sizes 8192,65536] [--bf16]
//       shared-memory communicator between forked ranks (a one-shot all-reduce moves
//       the message ~3 times)
//   mpirun -np 2 allreduce_bench --comm mpi [--iters ...] [--sizes ...] [--bf16]
//       the Open MPI communicator, both ways (all-gather + local rank-ordered sum;
//       reduce-scatter + all-gather), and, for comparison, MPI_Allreduce itself (whose
//       summation order is unspecified)
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "dist/mpi_communicator.h"
#include "dist/mpi_runtime.h"
#include "dist/shm_communicator.h"

namespace {

using pagellm::DType;
using pagellm::dist::Communicator;
using pagellm::SteadySeconds;

struct Args {
  std::string comm = "shm";
  int ranks = 2;
  int iters = 20000;
  std::vector<long> sizes = {8192, 65536};
  bool bf16 = false;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--ranks" && i + 1 < argc) a.ranks = std::atoi(argv[++i]);
    else if (k == "--comm" && i + 1 < argc) a.comm = argv[++i];
    else if (k == "--iters" && i + 1 < argc) a.iters = std::atoi(argv[++i]);
    else if (k == "--bf16") a.bf16 = true;
    else if (k == "--sizes" && i + 1 < argc) {
      a.sizes.clear();
      for (char* t = std::strtok(argv[++i], ","); t != nullptr; t = std::strtok(nullptr, ",")) a.sizes.push_back(std::atol(t));
    }
  }
  return a;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// Times `reduce` (one all-reduce of `x`, in place) on every rank; rank 0 prints.
bool Measure(const Args& a, const char* name, int rank, int ranks, const std::function<bool(float*, long)>& reduce) {
  const long elem = a.bf16 ? 2 : 4;
  for (long bytes : a.sizes) {
    const long n = bytes / elem;
    std::vector<float> x(static_cast<size_t>(n), 1.0f), copy(x.size());
    std::vector<double> times, copies;
    for (int it = 0; it < a.iters + 200; ++it) {
      const double t0 = SteadySeconds();
      if (!reduce(x.data(), n)) return false;
      const double t1 = SteadySeconds();
      std::memcpy(copy.data(), x.data(), static_cast<size_t>(bytes));
      const double t2 = SteadySeconds();
      if (it >= 200) {
        times.push_back(t1 - t0);
        copies.push_back(t2 - t1);
      }
      std::fill(x.begin(), x.end(), 1.0f);
    }
    if (rank == 0) {
      std::printf("%-14s all-reduce %s %6ld B x %d ranks: median %7.2f us  p90 %7.2f us  (memcpy %5.2f us)\n", name,
                  a.bf16 ? "bf16" : "fp32", bytes, ranks, Percentile(times, 0.5) * 1e6, Percentile(times, 0.9) * 1e6,
                  Percentile(copies, 0.5) * 1e6);
    }
  }
  return true;
}

bool MeasureComm(const Args& a, const char* name, Communicator& comm) {
  const DType dtype = a.bf16 ? DType::kBF16 : DType::kF32;
  return Measure(a, name, comm.rank(), comm.world_size(),
                 [&](float* x, long n) { return comm.AllReduceSum(x, n, dtype).ok(); }) &&
         comm.Barrier().ok();
}

int RunShmRank(const Args& a, const std::string& id, int rank) {
  using pagellm::dist::ShmCommunicator;
  auto comm = ShmCommunicator::Create({.group_id = id, .rank = rank, .world_size = a.ranks});
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    return 1;
  }
  return MeasureComm(a, "shm", **comm) ? 0 : 1;
}

int RunShm(const Args& a) {
  const std::string id = pagellm::dist::ShmCommunicator::MakeGroupId();
  std::vector<pid_t> children;
  for (int r = 1; r < a.ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(RunShmRank(a, id, r));
    children.push_back(pid);
  }
  int rc = RunShmRank(a, id, 0);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}

int RunMpi(const Args& a) {
  auto world = pagellm::dist::InitMpi();
  if (!world.ok()) {
    std::fprintf(stderr, "%s\n", world.status().ToString().c_str());
    return 1;
  }
  auto comm = pagellm::dist::MpiCommunicator::Create({.reduce_scatter_min_bytes = int64_t{1} << 62});
  auto rs = pagellm::dist::MpiCommunicator::Create({.reduce_scatter_min_bytes = 0});
  auto deflt = pagellm::dist::MpiCommunicator::Create({});
  bool ok = comm.ok() && rs.ok() && deflt.ok() && MeasureComm(a, "mpi allgather", **comm) &&
            MeasureComm(a, "mpi red-scat", **rs) && MeasureComm(a, "mpi (default)", **deflt);
  if (!a.bf16) {  // MPI has no bf16 sum
    ok = ok && Measure(a, "MPI_Allreduce", world->rank, world->size, [](float* x, long n) {
      return MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
    });
  }
  if (comm.ok()) comm->reset();  // before MPI_Finalize
  if (rs.ok()) rs->reset();
  if (deflt.ok()) deflt->reset();
  pagellm::dist::FinishMpi(ok ? 0 : 1);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  if (a.comm == "mpi") return RunMpi(a);
  if (a.comm != "shm") {
    std::fprintf(stderr, "--comm must be shm or mpi\n");
    return 2;
  }
  return RunShm(a);
}
