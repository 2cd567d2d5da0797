// ShmCommunicator: the Communicator for ranks on one host, over shared memory (the
// design vLLM's and SGLang's CPU backends use; written from the description, not their code).
//
//   ShmOptions opt{.group_id = ShmCommunicator::MakeGroupId(), .rank = r, .world_size = 2};
//   PAGELLM_ASSIGN_OR_RETURN(auto comm, ShmCommunicator::Create(opt));  // every rank, same id
//   PAGELLM_RETURN_IF_ERROR(comm->AllReduceSum(x, n, DType::kF32));
//
// Each rank creates one segment /dev/shm/pagellm-<group_id>-r<rank> and maps every
// peer's. The group id holds rank 0's pid and 64 random bits, so two servers on one host
// never share a segment (the SGLang hang of identical names). Once every rank has
// mapped every segment the names are unlinked: nothing is left in /dev/shm even when a
// rank is killed later.
// Collectives (one-shot, for the small decode messages this serves): each rank copies
// its chunk into its own segment (double-buffered) and bumps its sequence stamp; the
// readers wait for the stamps and read the peers' chunks directly, summing in rank
// order in fp32. A rank rewrites a buffer only after every peer published the next
// sequence, i.e. finished reading it: no acknowledgements, no per-call allocation.
// Send/Recv use a separate double-buffered channel per (src, dst) pair with an ack stamp.
// Messages larger than a chunk go chunk by chunk.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/shm_sync.h"

namespace pagellm::dist {

inline constexpr int kMaxShmRanks = 8;

struct ShmOptions {
  std::string group_id;          // same on every rank; ShmCommunicator::MakeGroupId()
  int rank = 0;
  int world_size = 1;
  int64_t chunk_bytes = 1 << 20;  // per buffer; 2 collective + 2 per peer buffers per rank
  double timeout_s = 10;          // per wait; <= 0: forever (dead peers still detected)
  double init_timeout_s = 60;     // for the peers' segments to appear
  double spin_s = 100e-6;         // busy-wait before sleeping on a futex
};

class ShmCommunicator final : public Communicator {
 public:
  // Blocks until every rank of the group has created its segment (init_timeout_s).
  static StatusOr<std::unique_ptr<ShmCommunicator>> Create(const ShmOptions& options);
  // "<pid>-<16 hex digits from /dev/urandom>".
  static std::string MakeGroupId();
  // "/pagellm-<group_id>-r<rank>" (a shm_open name).
  static std::string SegmentName(const std::string& group_id, int rank);
  ~ShmCommunicator() override;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
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
  // Process ids of the ranks (from their segments).
  int peer_pid(int rank) const;

 private:
  struct Segment;
  explicit ShmCommunicator(const ShmOptions& options);
  Status CreateOwnSegment();
  Status MapPeerSegments();
  // Starts collective step coll_seq_ + 1; with `payload`, copies it into this rank's
  // buffer first (after every peer finished the step before).
  Status BeginStep(const void* payload, size_t nbytes);
  Status WaitPeerStep(int peer);
  const std::byte* PeerCollBuffer(int peer) const;
  Status Wait(const Stamp& stamp, uint32_t target, int peer, const char* what);
  Status CheckUsable(int peer_rank_arg, bool any_rank_ok) const;
  Status Fail(Status status);

  ShmOptions options_;
  std::vector<Segment> segments_;  // [world_size]; own one included
  bool unlinked_ = false;
  uint32_t coll_seq_ = 0;
  std::vector<uint32_t> send_seq_, recv_seq_;  // [world_size] per peer
  Status failed_;
  CommStats stats_;
};

}  // namespace pagellm::dist
