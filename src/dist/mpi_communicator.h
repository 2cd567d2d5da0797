// MpiCommunicator: the Communicator over Open MPI, for ranks that `mpirun` started on
// one host or several (TCP between hosts, Open MPI's shared memory within one).
//
//   PAGELLM_ASSIGN_OR_RETURN(MpiWorld world, InitMpi());          // dist/mpi_runtime.h
//   PAGELLM_ASSIGN_OR_RETURN(auto comm, MpiCommunicator::Create({.timeout_s = 10}));
//   PAGELLM_RETURN_IF_ERROR(comm->AllReduceSum(x, n, DType::kF32));  // all ranks of the job
//
// The group is all of MPI_COMM_WORLD, on a communicator of its own (MPI_Comm_idup), so
// its traffic never matches anybody else's.
// Every call is nonblocking MPI (MPI_Iallgather, MPI_Ibcast, MPI_Igather, MPI_Isend/
// MPI_Irecv, MPI_Ibarrier) polled with MPI_Test against timeout_s: spin for spin_s, then
// sleep a tenth of the time waited so far (5 us to 2 ms), so a wait costs at most ~10 %
// extra latency and an idle worker polls a few hundred times a second instead of
// burning a core as MPI's blocking calls do.
// AllReduceSum is an all-gather followed by a local fp32 sum in rank order 0..N-1
// (dist/reduce_sum.h): MPI_Allreduce leaves the order to the implementation, which
// need not give every rank the same bits. Large pieces may go as a reduce-scatter of
// our own (MpiOptions::reduce_scatter_min_bytes), with the same bits.
// Failure (an MPI error or a timeout) returns Unavailable, as the shared-memory
// transport does, and leaves the communicator broken: every later call returns the same
// error, MarkMpiBroken() makes FinishMpi abort the job, and the failed call's request
// stays posted, so its buffers must stay alive until the process ends (it makes no MPI
// call after that but MPI_Abort). A rank that dies is not seen here: mpirun aborts the
// whole job (Open MPI 4.1 has no fault tolerance), which ends this process too.
// Buffers (the all-gather scratch) grow to the largest message and are reused: no
// allocation per call once warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dist/communicator.h"

namespace pagellm::dist {

struct MpiOptions {
  double timeout_s = 10;          // per call; <= 0: forever
  double init_timeout_s = 0;      // for every rank to create its communicator; <= 0: forever
  double spin_s = 100e-6;         // busy-poll this long before sleeping
  int64_t chunk_bytes = 4 << 20;  // largest piece one MPI call moves (counts are int)
  // All-reduce pieces of at least this many bytes go as a reduce-scatter (all-to-all of
  // segments; each rank sums its own segment in rank order) plus an all-gather of the
  // sums: two rounds of (N-1)/N of the piece instead of one round of all of it per
  // peer. Same bits either way (the same adds in the same order). Measured between 2
  // ranks on one host (Open MPI's shared memory): 8 KB 5.7 vs 7.0 us, 32 KB 12.9 vs 11.6,
  // 64 KB 23.5 vs 18.0 (all-gather vs reduce-scatter; bench/dist/run.sh).
  int64_t reduce_scatter_min_bytes = 32 << 10;
};

class MpiCommunicator final : public Communicator {
 public:
  // Collective over MPI_COMM_WORLD: every rank calls it once. Needs InitMpi() first.
  static StatusOr<std::unique_ptr<MpiCommunicator>> Create(const MpiOptions& options);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Status AllReduceSum(void* data, int64_t count, DType dtype) override;
  Status Broadcast(void* data, int64_t nbytes, int root) override;
  Status Gather(const void* send, int64_t nbytes, void* recv, int root) override;
  Status Send(const void* data, int64_t nbytes, int dst) override;
  Status Recv(void* data, int64_t nbytes, int src) override;
  Status Barrier() override;
  void set_timeout_s(double timeout_s) override { options_.timeout_s = timeout_s; }
  double timeout_s() const override { return options_.timeout_s; }
  CommStats stats() const override { return stats_; }
  void ResetStats() override { stats_ = {}; }

 private:
  struct Handle;  // the MPI_Comm (keeps mpi.h out of this header)
  explicit MpiCommunicator(const MpiOptions& options);
  // Polls the request in flight (Handle::request, posted for `what`) until done, the
  // deadline, or an MPI error.
  Status Complete(const char* what, int64_t nbytes);
  Status Check(int mpi_error, const char* what);
  // One all-reduce piece of `nbytes` at `piece`, summed in place; the two algorithms.
  Status AllGatherSum(std::byte* piece, int64_t nbytes, DType dtype);
  Status ReduceScatterSum(std::byte* piece, int64_t nbytes, DType dtype);
  void SumInRankOrder(const std::byte* first, int64_t stride, int64_t nbytes, DType dtype, std::byte* out);
  Status CheckUsable(int rank_arg, bool any_rank_ok) const;
  Status Fail(Status status);
  std::byte* Scratch(size_t nbytes);

  MpiOptions options_;
  std::unique_ptr<Handle> handle_;
  int rank_ = 0;
  int world_size_ = 1;
  int64_t num_collectives_ = 0;  // for error messages: which call failed
  std::vector<std::byte> scratch_;  // [world_size][chunk]: all-gather and gather landing area
  Status failed_;
  CommStats stats_;
};

}  // namespace pagellm::dist
