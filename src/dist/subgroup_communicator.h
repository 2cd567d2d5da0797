// SubgroupCommunicator: the collectives of some ranks of a larger group, built on that
// group's point-to-point Send/Recv. With pipeline and tensor parallelism together each
// pipeline stage's tensor-parallel ranks all-reduce among themselves while the world
// group carries the step broadcast and the stage-to-stage activations.
//
//   // world ranks {2, 3} form stage 1's tensor-parallel group
//   SubgroupCommunicator tp(world, {2, 3});        // on world ranks 2 and 3 only
//   PAGELLM_RETURN_IF_ERROR(tp.AllReduceSum(x, n, DType::kF32));
//
// All-reduce: members send their part to the group's first member, which sums in member
// order in fp32 (the same rule as the world transport, so every member gets identical
// bits) and sends the sum back. Two hops instead of one-shot reads: fine for the few
// ranks of one stage; the world transport stays the fast path when TP spans the world.
// Timeouts, failure and stats are the underlying communicator's.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/communicator.h"

namespace pagellm::dist {

class SubgroupCommunicator final : public Communicator {
 public:
  // `members`: world ranks in group order, this rank among them; `world` is borrowed.
  SubgroupCommunicator(Communicator& world, std::vector<int> members);

  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(members_.size()); }
  Status AllReduceSum(void* data, int64_t count, DType dtype) override;
  Status Broadcast(void* data, int64_t nbytes, int root) override;
  Status Gather(const void* send, int64_t nbytes, void* recv, int root) override;
  Status Send(const void* data, int64_t nbytes, int dst) override;
  Status Recv(void* data, int64_t nbytes, int src) override;
  Status Barrier() override;
  void set_timeout_s(double timeout_s) override { world_.set_timeout_s(timeout_s); }
  double timeout_s() const override { return world_.timeout_s(); }
  CommStats stats() const override { return world_.stats(); }
  void ResetStats() override { world_.ResetStats(); }

 private:
  Communicator& world_;
  std::vector<int> members_;
  int rank_ = -1;
  std::vector<std::byte> parts_;  // first member: the others' parts, grown once
  std::vector<const float*> f32_srcs_;      // [members]: own data, then parts_
  std::vector<const uint16_t*> bf16_srcs_;
};

}  // namespace pagellm::dist
