// Communicator: the collectives a tensor/pipeline-parallel group needs, behind one
// interface so the shared-memory transport (shm_communicator.h), Open MPI and, later,
// NCCL/HCCL can stand in for each other.
//
//   std::unique_ptr<Communicator> comm = ...;            // rank r of world_size ranks
//   PAGELLM_RETURN_IF_ERROR(comm->AllReduceSum(x, n, DType::kF32));  // x: [n] in place
//   PAGELLM_RETURN_IF_ERROR(comm->Broadcast(header, sizeof(header), /*root=*/0));
//
// Semantics (as MPI/NCCL): every rank of the group calls the collectives in the same
// order with the same sizes; Send/Recv pair up per (src, dst) in call order. All calls
// block until this rank's part is done. A failed call (peer exited, timeout) leaves
// the communicator broken: every later call returns the same error, since the group's
// sequence can no longer be trusted (Open MPI 4.1 cannot continue without a rank either).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "tensor/dtype.h"

namespace pagellm::dist {

// Where a rank's collective time went; reset with Communicator::ResetStats().
struct CommStats {
  int64_t num_calls = 0;
  double total_s = 0;  // wall time inside collectives
  double wait_s = 0;   // of which waiting for a peer (imbalance, peer compute, scheduling)
  int64_t num_bytes = 0;  // payload bytes this rank contributed
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // data: [count] of kF32 or kBF16, summed over ranks in place. The sum is taken in
  // fp32 in rank order 0, 1, ..., N-1 on every rank, so all ranks get identical bits.
  virtual Status AllReduceSum(void* data, int64_t count, DType dtype) = 0;
  // Root's `nbytes` at `data` are copied to every other rank's `data`.
  virtual Status Broadcast(void* data, int64_t nbytes, int root) = 0;
  // recv (root only, others pass nullptr): [world_size][nbytes], rank r's `send` at r.
  virtual Status Gather(const void* send, int64_t nbytes, void* recv, int root) = 0;
  virtual Status Send(const void* data, int64_t nbytes, int dst) = 0;
  virtual Status Recv(void* data, int64_t nbytes, int src) = 0;
  virtual Status Barrier() = 0;

  // How long a call waits for a peer before failing (<= 0: forever, but a peer that
  // exits is still detected). Workers idle between steps use forever.
  virtual void set_timeout_s(double timeout_s) = 0;
  virtual double timeout_s() const = 0;

  virtual CommStats stats() const = 0;
  virtual void ResetStats() = 0;
};

}  // namespace pagellm::dist
