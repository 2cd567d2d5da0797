// Tensor parallelism as the runner sees it: on rank 0, TpCausalLm is the CausalLm the
// ModelRunner drives; it broadcasts every call (forward steps, state-slot and snapshot
// operations) to the other ranks, which replay it on their own shard in RunTpWorker.
//
//   // rank 0                                      // rank r > 0
//   TpCausalLm model(std::move(shard), comm);      PAGELLM_RETURN_IF_ERROR(RunTpWorker(*shard, kv, comm));
//   ModelRunner runner(model, kv, block_size);
//
// Both sides' shards take part in the same collectives inside Forward (all-reduces per
// layer, the logits gather to rank 0), so they must see the calls in the same order:
// every call on rank 0 is broadcast before it runs locally.
// The destructor sends kShutdown; RunTpWorker then returns OK.
#pragma once

#include <memory>

#include "dist/communicator.h"
#include "runner/model_runner.h"
#include "runner/tp_step_message.h"

namespace pagellm {

class TpCausalLm final : public CausalLm {
 public:
  // `comm` is borrowed (rank 0 of the group) and must outlive this object.
  TpCausalLm(std::unique_ptr<CausalLm> shard, dist::Communicator& comm);
  ~TpCausalLm() override;

  const ModelConfig& config() const override { return shard_->config(); }
  KvCacheSpec MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const override {
    return shard_->MakeKvCacheSpec(num_blocks, block_size, dtype);
  }
  int64_t state_bytes_per_slot() const override { return shard_->state_bytes_per_slot(); }
  Status AllocateStateSlots(int64_t num_slots, int64_t num_snapshots) override;
  void SaveStateSnapshot(int32_t slot_idx, int32_t snapshot_idx) override;
  void RestoreStateSnapshot(int32_t snapshot_idx, int32_t slot_idx) override;
  Status Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) override;

  CausalLm& shard() { return *shard_; }
  const CausalLm& shard() const { return *shard_; }
  // Sends kShutdown now (idempotent; the destructor calls it too).
  void Shutdown();

 private:
  Status Send(StepKind kind, int32_t a, int32_t b);
  // Snapshot ops return void in CausalLm; a failed broadcast is kept and returned by
  // the next Forward.
  Status pending_error_;
  std::unique_ptr<CausalLm> shard_;
  dist::Communicator& comm_;
  StepMessage message_;
  bool shut_down_ = false;
  int64_t num_steps_ = 0;
  double forward_s_ = 0;  // wall time of Forward calls (broadcast + shard forward)
};

// The loop of a rank > 0: receives each call from rank 0 and runs it on `shard`.
// Returns OK on kShutdown, the error when the group breaks (rank 0 gone or hung).
// Waits for the next step without a deadline (an idle server sends nothing), but
// notices rank 0 exiting.
Status RunTpWorker(CausalLm& shard, PagedKvCache& kv, dist::Communicator& comm);

}  // namespace pagellm
