// All-reduce latency of the shared-memory communicator between forked ranks on one host
// (not a test; run by hand: bench/dist/run.sh). Prints, per message size, the median and
// p90 time of one fp32 sum-all-reduce on rank 0, and a same-size memcpy as the peer in
// the same run (a one-shot all-reduce moves the message ~3 times).
//   allreduce_bench [--ranks 2] [--iters 20000] [--sizes 8192,65536] [--bf16]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dist/shm_communicator.h"

namespace {

using pagellm::DType;
using pagellm::dist::MonotonicSeconds;
using pagellm::dist::ShmCommunicator;
using pagellm::dist::ShmOptions;

struct Args {
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

// Every rank runs this; rank 0 prints.
int Run(const Args& a, const std::string& id, int rank) {
  auto comm = ShmCommunicator::Create(ShmOptions{.group_id = id, .rank = rank, .world_size = a.ranks});
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    return 1;
  }
  const DType dtype = a.bf16 ? DType::kBF16 : DType::kF32;
  const long elem = a.bf16 ? 2 : 4;
  for (long bytes : a.sizes) {
    const long n = bytes / elem;
    std::vector<float> x(static_cast<size_t>(n), 1.0f), copy(x.size());
    std::vector<double> times, copies;
    for (int it = 0; it < a.iters + 200; ++it) {
      const double t0 = MonotonicSeconds();
      if (!(*comm)->AllReduceSum(x.data(), n, dtype).ok()) return 1;
      const double t1 = MonotonicSeconds();
      std::memcpy(copy.data(), x.data(), static_cast<size_t>(bytes));
      const double t2 = MonotonicSeconds();
      if (it >= 200) {
        times.push_back(t1 - t0);
        copies.push_back(t2 - t1);
      }
      std::fill(x.begin(), x.end(), 1.0f);
    }
    if (rank == 0) {
      std::printf("all-reduce %s %6ld B x %d ranks: median %6.2f us  p90 %6.2f us  (memcpy %5.2f us)\n",
                  a.bf16 ? "bf16" : "fp32", bytes, a.ranks, Percentile(times, 0.5) * 1e6, Percentile(times, 0.9) * 1e6,
                  Percentile(copies, 0.5) * 1e6);
    }
  }
  return (*comm)->Barrier().ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  const std::string id = ShmCommunicator::MakeGroupId();
  std::vector<pid_t> children;
  for (int r = 1; r < a.ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(Run(a, id, r));
    children.push_back(pid);
  }
  int rc = Run(a, id, 0);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}
