// ShmCommunicator across real processes: rank 0 is the test process, ranks 1.. are
// forked children that report through their exit code.
#include "dist/shm_communicator.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "dist/subgroup_communicator.h"
#include "tensor/half.h"

namespace pagellm::dist {
namespace {

using RankFn = std::function<bool(Communicator&)>;

ShmOptions Options(const std::string& id, int rank, int world) {
  return ShmOptions{.group_id = id, .rank = rank, .world_size = world, .chunk_bytes = 4096, .timeout_s = 5,
                    .init_timeout_s = 10};
}

// Runs fn on every rank; returns the exit codes of ranks 1.. (0 = fn returned true).
std::vector<int> RunRanks(int world, const RankFn& fn, bool* rank0_ok, ShmOptions base = {}) {
  const std::string id = ShmCommunicator::MakeGroupId();
  std::vector<pid_t> children;
  for (int r = 1; r < world; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      ShmOptions o = Options(id, r, world);
      if (base.timeout_s != ShmOptions{}.timeout_s) o.timeout_s = base.timeout_s;
      auto comm = ShmCommunicator::Create(o);
      _exit(comm.ok() && fn(**comm) ? 0 : 1);
    }
    children.push_back(pid);
  }
  ShmOptions o = Options(id, 0, world);
  if (base.timeout_s != ShmOptions{}.timeout_s) o.timeout_s = base.timeout_s;
  auto comm = ShmCommunicator::Create(o);
  *rank0_ok = comm.ok() && fn(**comm);
  std::vector<int> codes;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

void ExpectAllOk(int world, const RankFn& fn) {
  bool ok0 = false;
  std::vector<int> codes = RunRanks(world, fn, &ok0);
  EXPECT_TRUE(ok0);
  for (size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(codes[i], 0) << "rank " << i + 1;
}

float Value(int rank, int64_t i, int iter) { return std::sin(0.37f * static_cast<float>(i + 1) * (rank + 1) + iter); }

// Rank r contributes Value(r, i); every rank must hold the rank-ordered fp32 sum, bit for bit.
bool CheckAllReduceF32(Communicator& c, int64_t n, int iters) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int it = 0; it < iters; ++it) {
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = Value(c.rank(), i, it);
    if (!c.AllReduceSum(x.data(), n, DType::kF32).ok()) return false;
    for (int64_t i = 0; i < n; ++i) {
      float want = Value(0, i, it);
      for (int r = 1; r < c.world_size(); ++r) want += Value(r, i, it);
      if (std::memcmp(&want, &x[static_cast<size_t>(i)], 4) != 0) return false;
    }
  }
  return true;
}

TEST(ShmCommunicatorTest, AllReduceF32MatchesRankOrderedSumExactly) {
  for (int world : {2, 3}) {
    ExpectAllOk(world, [](Communicator& c) { return CheckAllReduceF32(c, 2048, 3); });
    // 10,000 floats span ten 4 KB chunks, and 500 rounds cycle both buffers many times.
    ExpectAllOk(world, [](Communicator& c) { return CheckAllReduceF32(c, 10000, 3); });
    ExpectAllOk(world, [](Communicator& c) { return CheckAllReduceF32(c, 37, 500); });
  }
}

TEST(ShmCommunicatorTest, AllReduceBf16SumsInF32AndRoundsOnce) {
  ExpectAllOk(2, [](Communicator& c) {
    const int64_t n = 5000;
    std::vector<uint16_t> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = F32ToBf16(Value(c.rank(), i, 0));
    if (!c.AllReduceSum(x.data(), n, DType::kBF16).ok()) return false;
    for (int64_t i = 0; i < n; ++i) {
      float want = Bf16ToF32(F32ToBf16(Value(0, i, 0))) + Bf16ToF32(F32ToBf16(Value(1, i, 0)));
      if (x[i] != F32ToBf16(want)) return false;
    }
    return true;
  });
}

// Pipeline x tensor parallel: world ranks {0, 1} and {2, 3} each all-reduce among
// themselves (rank-ordered, bit-exact within the group), gather and broadcast, while
// the world still runs its own collectives in between.
TEST(SubgroupCommunicatorTest, GroupsOfTheWorldReduceIndependently) {
  ExpectAllOk(4, [](Communicator& world) {
    const int g = world.rank() / 2;
    SubgroupCommunicator sub(world, {2 * g, 2 * g + 1});
    if (sub.rank() != world.rank() % 2 || sub.world_size() != 2) return false;
    const int64_t n = 3000;  // spans chunks of the 4 KB test transport
    std::vector<float> x(n);
    for (int it = 0; it < 3; ++it) {
      for (int64_t i = 0; i < n; ++i) x[i] = Value(world.rank(), i, it);
      if (!sub.AllReduceSum(x.data(), n, DType::kF32).ok()) return false;
      for (int64_t i = 0; i < n; ++i) {
        const float want = Value(2 * g, i, it) + Value(2 * g + 1, i, it);
        if (std::memcmp(&want, &x[i], 4) != 0) return false;
      }
      if (!world.Barrier().ok()) return false;
    }
    std::vector<uint16_t> b(n);
    for (int64_t i = 0; i < n; ++i) b[i] = F32ToBf16(Value(world.rank(), i, 9));
    if (!sub.AllReduceSum(b.data(), n, DType::kBF16).ok()) return false;
    for (int64_t i = 0; i < n; ++i) {
      const float want = Bf16ToF32(F32ToBf16(Value(2 * g, i, 9))) + Bf16ToF32(F32ToBf16(Value(2 * g + 1, i, 9)));
      if (b[i] != F32ToBf16(want)) return false;
    }
    int32_t mine = 100 * world.rank(), got[2] = {-1, -1};
    if (!sub.Gather(&mine, 4, sub.rank() == 1 ? got : nullptr, 1).ok()) return false;
    if (sub.rank() == 1 && (got[0] != 200 * g || got[1] != 200 * g + 100)) return false;
    int32_t token = sub.rank() == 0 ? 7 + g : -1;
    if (!sub.Broadcast(&token, 4, 0).ok() || token != 7 + g) return false;
    return sub.Barrier().ok();
  });
}

TEST(ShmCommunicatorTest, BroadcastGatherAndBarrierAcrossChunks) {
  ExpectAllOk(3, [](Communicator& c) {
    for (int root = 0; root < 3; ++root) {
      std::vector<int32_t> b(3000, -1);  // 12 KB: three chunks
      if (c.rank() == root) std::iota(b.begin(), b.end(), root * 100000);
      if (!c.Broadcast(b.data(), static_cast<int64_t>(b.size() * 4), root).ok()) return false;
      for (size_t i = 0; i < b.size(); ++i) {
        if (b[i] != root * 100000 + static_cast<int32_t>(i)) return false;
      }
      std::vector<int32_t> mine(1500, c.rank() * 7 + root), all(c.rank() == root ? 4500 : 0);
      if (!c.Gather(mine.data(), 6000, all.empty() ? nullptr : all.data(), root).ok()) return false;
      for (size_t i = 0; i < all.size(); ++i) {
        if (all[i] != static_cast<int32_t>(i / 1500) * 7 + root) return false;
      }
      if (!c.Barrier().ok()) return false;
    }
    return true;
  });
}

TEST(ShmCommunicatorTest, SendRecvPairsInOrderBothWays) {
  ExpectAllOk(2, [](Communicator& c) {
    const int peer = 1 - c.rank();
    for (int msg = 0; msg < 50; ++msg) {
      const size_t n = 100 + static_cast<size_t>(msg) * 97;  // up to ~19 KB: several chunks
      std::vector<int32_t> out(n), in(n);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(c.rank() * 1000000 + msg * 1000 + i);
      // Rank 0 sends first, rank 1 receives first: no deadlock whatever the sizes.
      Status s1 = c.rank() == 0 ? c.Send(out.data(), n * 4, peer) : c.Recv(in.data(), n * 4, peer);
      Status s2 = c.rank() == 0 ? c.Recv(in.data(), n * 4, peer) : c.Send(out.data(), n * 4, peer);
      if (!s1.ok() || !s2.ok()) return false;
      for (size_t i = 0; i < n; ++i) {
        if (in[i] != static_cast<int32_t>(peer * 1000000 + msg * 1000 + i)) return false;
      }
    }
    // Several messages in flight to one receiver that reads them later.
    std::vector<int32_t> v(10, c.rank());
    if (c.rank() == 0) {
      for (int k = 0; k < 2; ++k) {
        if (!c.Send(v.data(), 40, 1).ok()) return false;
      }
    } else {
      for (int k = 0; k < 2; ++k) {
        if (!c.Recv(v.data(), 40, 0).ok() || v[0] != 0) return false;
      }
    }
    return c.Barrier().ok();
  });
}

bool ShmHasGroupFiles(const std::string& id) {
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) found = found || std::string(e->d_name).find(id) != std::string::npos;
  closedir(d);
  return found;
}

TEST(ShmCommunicatorTest, GroupIdsAreUniqueAndSegmentsUnlinkedAfterStart) {
  EXPECT_NE(ShmCommunicator::MakeGroupId(), ShmCommunicator::MakeGroupId());
  const std::string id = ShmCommunicator::MakeGroupId();
  auto solo = ShmCommunicator::Create(Options(id, 0, 1));
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();
  EXPECT_FALSE(ShmHasGroupFiles(id));
  // Two groups on the host at once: each sums only its own ranks.
  ExpectAllOk(2, [](Communicator& c) {
    bool ok0 = false;
    if (c.rank() == 1) return CheckAllReduceF32(c, 100, 20);
    std::vector<int> inner = RunRanks(2, [](Communicator& d) { return CheckAllReduceF32(d, 100, 20); }, &ok0);
    return ok0 && inner[0] == 0 && CheckAllReduceF32(c, 100, 20);
  });
}

TEST(ShmCommunicatorTest, DeadPeerFailsWithinASecondAndStaysFailed) {
  bool ok0 = false;
  std::vector<int> codes = RunRanks(2, [](Communicator& c) {
    if (c.rank() == 1) _exit(3);  // dies before the collective
    float x = 1;
    const double start = SteadySeconds();
    Status s = c.AllReduceSum(&x, 1, DType::kF32);
    const double took = SteadySeconds() - start;
    bool ok = s.code() == StatusCode::kUnavailable && took < 1.0 && s.message().find("exited") != std::string::npos;
    return ok && c.Barrier().code() == StatusCode::kUnavailable;  // broken for good
  }, &ok0);
  EXPECT_TRUE(ok0);
  EXPECT_EQ(codes[0], 3);
}

TEST(ShmCommunicatorTest, HungPeerTimesOut) {
  bool ok0 = false;
  ShmOptions fast;
  fast.timeout_s = 0.3;
  std::vector<int> codes = RunRanks(2, [](Communicator& c) {
    if (c.rank() == 1) {
      sleep(1);  // never joins in time, then leaves
      return true;
    }
    float x = 1;
    Status s = c.AllReduceSum(&x, 1, DType::kF32);
    return s.code() == StatusCode::kUnavailable && s.message().find("within") != std::string::npos;
  }, &ok0, fast);
  EXPECT_TRUE(ok0);
}

TEST(ShmCommunicatorTest, RejectsBadOptions) {
  EXPECT_FALSE(ShmCommunicator::Create(Options("x", 2, 2)).ok());
  EXPECT_FALSE(ShmCommunicator::Create(Options("x", 0, 9)).ok());
  EXPECT_FALSE(ShmCommunicator::Create(Options("a/b", 0, 1)).ok());
}

}  // namespace
}  // namespace pagellm::dist
