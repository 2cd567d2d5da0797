// MpiCommunicator across real processes: CTest runs this binary under
// `mpirun -np 3` (src/dist/CMakeLists.txt); every rank runs every test in the same
// order and checks its own part, and the job fails when any rank fails.
#include "dist/mpi_communicator.h"

#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "dist/mpi_runtime.h"
#include "common/steady_clock.h"
#include "tensor/half.h"

namespace pagellm::dist {
namespace {

std::unique_ptr<MpiCommunicator> MakeComm(double timeout_s = 20, int64_t reduce_scatter_min_bytes = int64_t{1} << 62) {
  // Small pieces, so a few KB already cross several MPI calls.
  auto comm = MpiCommunicator::Create(MpiOptions{.timeout_s = timeout_s, .init_timeout_s = 20, .chunk_bytes = 4096,
                                                 .reduce_scatter_min_bytes = reduce_scatter_min_bytes});
  EXPECT_TRUE(comm.ok()) << comm.status().ToString();
  return comm.ok() ? std::move(*comm) : nullptr;
}

float Value(int rank, int64_t i, int iter) { return std::sin(0.37f * static_cast<float>(i + 1) * (rank + 1) + iter); }

// Rank r contributes Value(r, i); every rank must hold the rank-ordered fp32 sum, bit for bit.
void ExpectAllReduceF32(Communicator& c, int64_t n, int iters) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int it = 0; it < iters; ++it) {
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = Value(c.rank(), i, it);
    ASSERT_TRUE(c.AllReduceSum(x.data(), n, DType::kF32).ok());
    int64_t num_wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      float want = Value(0, i, it);
      for (int r = 1; r < c.world_size(); ++r) want += Value(r, i, it);
      num_wrong += std::memcmp(&want, &x[static_cast<size_t>(i)], 4) != 0;
    }
    ASSERT_EQ(num_wrong, 0) << "n " << n << " iter " << it;
  }
}

TEST(MpiCommunicatorTest, AllReduceF32MatchesRankOrderedSumExactly) {
  auto c = MakeComm();
  ASSERT_NE(c, nullptr);
  ASSERT_GE(c->world_size(), 2);
  ExpectAllReduceF32(*c, 2048, 3);   // 8 KB: two pieces
  ExpectAllReduceF32(*c, 10000, 3);  // ten pieces, the last one short
  ExpectAllReduceF32(*c, 37, 300);
}

TEST(MpiCommunicatorTest, ReduceScatterGivesTheSameBits) {
  auto c = MakeComm(20, /*reduce_scatter_min_bytes=*/0);
  ASSERT_NE(c, nullptr);
  ExpectAllReduceF32(*c, 2048, 3);
  ExpectAllReduceF32(*c, 10000, 3);  // uneven segments: 1024 floats a piece over 3 ranks
  ExpectAllReduceF32(*c, 37, 50);
  ExpectAllReduceF32(*c, 2, 5);      // fewer elements than ranks: all-gather
}

void ExpectAllReduceBf16(Communicator* c) {
  ASSERT_NE(c, nullptr);
  const int64_t n = 5000;
  std::vector<uint16_t> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = F32ToBf16(Value(c->rank(), i, 0));
  ASSERT_TRUE(c->AllReduceSum(x.data(), n, DType::kBF16).ok());
  int64_t num_wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = Bf16ToF32(F32ToBf16(Value(0, i, 0)));
    for (int r = 1; r < c->world_size(); ++r) want += Bf16ToF32(F32ToBf16(Value(r, i, 0)));
    num_wrong += x[i] != F32ToBf16(want);
  }
  EXPECT_EQ(num_wrong, 0);
  EXPECT_EQ(c->AllReduceSum(x.data(), n, DType::kF16).code(), StatusCode::kInvalidArgument);
}

TEST(MpiCommunicatorTest, AllReduceBf16SumsInF32AndRoundsOnce) {
  ExpectAllReduceBf16(MakeComm().get());
  ExpectAllReduceBf16(MakeComm(20, /*reduce_scatter_min_bytes=*/0).get());
}

TEST(MpiCommunicatorTest, BroadcastGatherAndBarrierAcrossPieces) {
  auto c = MakeComm();
  ASSERT_NE(c, nullptr);
  const int world = c->world_size();
  for (int root = 0; root < world; ++root) {
    for (size_t n : {size_t{7}, size_t{3000}}) {  // one piece; 12 KB = three pieces
      std::vector<int32_t> b(n, -1);
      if (c->rank() == root) std::iota(b.begin(), b.end(), root * 100000);
      ASSERT_TRUE(c->Broadcast(b.data(), static_cast<int64_t>(n * 4), root).ok());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], root * 100000 + static_cast<int32_t>(i));
      std::vector<int32_t> mine(n, c->rank() * 7 + root), all(c->rank() == root ? n * world : 0);
      ASSERT_TRUE(c->Gather(mine.data(), static_cast<int64_t>(n * 4), all.empty() ? nullptr : all.data(), root).ok());
      for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int32_t>(i / n) * 7 + root) << i;
      ASSERT_TRUE(c->Barrier().ok());
    }
  }
  std::vector<int32_t> none;
  EXPECT_EQ(c->Broadcast(none.data(), 0, world).code(), StatusCode::kInvalidArgument);
}

TEST(MpiCommunicatorTest, SendRecvPairsInOrderBothWays) {
  auto c = MakeComm();
  ASSERT_NE(c, nullptr);
  if (c->rank() < 2) {
    const int peer = 1 - c->rank();
    for (int msg = 0; msg < 50; ++msg) {
      const size_t n = 100 + static_cast<size_t>(msg) * 97;  // up to ~19 KB: several pieces
      std::vector<int32_t> out(n), in(n);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(c->rank() * 1000000 + msg * 1000 + i);
      const int64_t bytes = static_cast<int64_t>(n * 4);
      Status s1 = c->rank() == 0 ? c->Send(out.data(), bytes, peer) : c->Recv(in.data(), bytes, peer);
      Status s2 = c->rank() == 0 ? c->Recv(in.data(), bytes, peer) : c->Send(out.data(), bytes, peer);
      ASSERT_TRUE(s1.ok() && s2.ok()) << s1.ToString() << s2.ToString();
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(in[i], static_cast<int32_t>(peer * 1000000 + msg * 1000 + i));
    }
    std::vector<int32_t> v(10, c->rank());
    for (int k = 0; k < 3 && c->rank() == 0; ++k) {  // several small messages queued before the receiver reads them
      ASSERT_TRUE(c->Send(v.data(), 40, 1).ok());
    }
    for (int k = 0; k < 3 && c->rank() == 1; ++k) {
      ASSERT_TRUE(c->Recv(v.data(), 40, 0).ok());
      ASSERT_EQ(v[0], 0);
    }
    EXPECT_EQ(c->Send(v.data(), 40, c->rank()).code(), StatusCode::kInvalidArgument);
  }
  ASSERT_TRUE(c->Barrier().ok());
}

TEST(MpiCommunicatorTest, StatsCountCallsBytesAndTime) {
  auto c = MakeComm();
  ASSERT_NE(c, nullptr);
  std::vector<float> x(2048, 1.0f);  // 8 KB: two 4 KB pieces
  ASSERT_TRUE(c->AllReduceSum(x.data(), 2048, DType::kF32).ok());
  ASSERT_TRUE(c->Broadcast(x.data(), 100, 0).ok());
  const CommStats s = c->stats();
  EXPECT_EQ(s.num_calls, 2);
  EXPECT_EQ(s.num_bytes, 8192 + (c->rank() == 0 ? 100 : 0));
  EXPECT_GT(s.total_s, 0);
  EXPECT_LE(s.wait_s, s.total_s);
  EXPECT_EQ(x[0], static_cast<float>(c->world_size()));
  c->ResetStats();
  EXPECT_EQ(c->stats().num_calls, 0);
}

TEST(MpiCommunicatorTest, RejectsBadOptions) {
  EXPECT_EQ(MpiCommunicator::Create(MpiOptions{.chunk_bytes = 100}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MpiCommunicator::Create(MpiOptions{.chunk_bytes = int64_t{2} << 30}).status().code(),
            StatusCode::kInvalidArgument);
}

// Last: it leaves rank 0's communicator broken (and the job marked broken).
TEST(MpiCommunicatorTest, HungPeerTimesOutAndStaysBroken) {
  auto c = MakeComm(/*timeout_s=*/0.3);
  ASSERT_NE(c, nullptr);
  // Static: rank 0's timed-out all-gather stays posted and lands here when the others
  // join late.
  static float x[4] = {1, 2, 3, 4};
  if (c->rank() != 0) {
    sleep(1);  // "hung" past rank 0's deadline, then joins
    c->set_timeout_s(20);
    EXPECT_TRUE(c->AllReduceSum(x, 4, DType::kF32).ok());
    return;
  }
  const double start = SteadySeconds();
  Status s = c->AllReduceSum(x, 4, DType::kF32);
  const double took = SteadySeconds() - start;
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("within 0.3 s"), std::string::npos) << s.message();
  EXPECT_LT(took, 0.9);
  EXPECT_EQ(c->Barrier().message(), s.message());  // broken for good
  EXPECT_EQ(c->Broadcast(x, 4, 0).code(), StatusCode::kUnavailable);
  (void)c.release();  // its request is still posted: never free the communicator under it
}

}  // namespace
}  // namespace pagellm::dist

// gtest on every rank; only rank 0 prints. The job's exit code: 1 if any rank failed.
int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto world = pagellm::dist::InitMpi();
  if (!world.ok()) {
    std::fprintf(stderr, "%s\n", world.status().ToString().c_str());
    return 2;
  }
  if (world->rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (world->rank == 0 && any_failed != 0 && failed == 0) std::fprintf(stderr, "a rank other than 0 failed\n");
  // Directly, not FinishMpi: the hung-peer test marked the job broken on purpose.
  MPI_Finalize();
  return any_failed;
}
