#include "runner/tp_causal_lm.h"

#include "common/logging.h"
#include "dist/shm_sync.h"

namespace pagellm {

namespace {

// "rank 0: 120 forward steps, 3.10 s; collectives 0.21 s (6.8 %), of which waiting 0.15 s;
// compute 2.89 s; 41.2 KB sent per step"
void LogStepSplit(int rank, int64_t num_steps, double forward_s, const dist::CommStats& c) {
  if (num_steps == 0) return;
  PLOG_INFO("tensor parallel rank {}: {} forward steps, {:.3f} s; collectives {:.3f} s ({:.1f} %), of which waiting "
            "for peers {:.3f} s; compute {:.3f} s; {:.1f} KB sent per step", rank, num_steps, forward_s, c.total_s,
            forward_s > 0 ? 100.0 * c.total_s / forward_s : 0.0, c.wait_s, forward_s - c.total_s,
            static_cast<double>(c.num_bytes) / 1024.0 / static_cast<double>(num_steps));
}

}  // namespace

TpCausalLm::TpCausalLm(std::unique_ptr<CausalLm> shard, dist::Communicator& comm)
    : shard_(std::move(shard)), comm_(comm) {}

TpCausalLm::~TpCausalLm() { Shutdown(); }

void TpCausalLm::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  LogStepSplit(0, num_steps_, forward_s_, comm_.stats());
  Status s = Send(StepKind::kShutdown, 0, 0);
  if (!s.ok()) PLOG_WARN("tensor parallel: could not stop the workers: {}", s.message());
}

Status TpCausalLm::Send(StepKind kind, int32_t a, int32_t b) {
  message_.header = StepHeader{};
  message_.header.kind = static_cast<int32_t>(kind);
  message_.header.a = a;
  message_.header.b = b;
  return comm_.Broadcast(&message_.header, sizeof(message_.header), 0);
}

Status TpCausalLm::AllocateStateSlots(int64_t num_slots, int64_t num_snapshots) {
  PAGELLM_RETURN_IF_ERROR(
      Send(StepKind::kAllocateStates, static_cast<int32_t>(num_slots), static_cast<int32_t>(num_snapshots)));
  PAGELLM_RETURN_IF_ERROR(shard_->AllocateStateSlots(num_slots, num_snapshots));
  // A worker that could not allocate exits: the barrier says so now, not at the first step.
  return comm_.Barrier();
}

void TpCausalLm::SaveStateSnapshot(int32_t slot_idx, int32_t snapshot_idx) {
  Status s = Send(StepKind::kSaveSnapshot, slot_idx, snapshot_idx);
  if (!s.ok() && pending_error_.ok()) pending_error_ = s;
  shard_->SaveStateSnapshot(slot_idx, snapshot_idx);
}

void TpCausalLm::RestoreStateSnapshot(int32_t snapshot_idx, int32_t slot_idx) {
  Status s = Send(StepKind::kRestoreSnapshot, snapshot_idx, slot_idx);
  if (!s.ok() && pending_error_.ok()) pending_error_ = s;
  shard_->RestoreStateSnapshot(snapshot_idx, slot_idx);
}

Status TpCausalLm::Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) {
  PAGELLM_RETURN_IF_ERROR(pending_error_);
  if (num_steps_ == 0) comm_.ResetStats();  // set-up traffic is not a step's
  const double start = SteadySeconds();
  message_.EncodeForward(input);
  PAGELLM_RETURN_IF_ERROR(comm_.Broadcast(&message_.header, sizeof(message_.header), 0));
  PAGELLM_RETURN_IF_ERROR(comm_.Broadcast(message_.body.data(), message_.header.body_bytes, 0));
  Status s = shard_->Forward(input, kv, logits);
  forward_s_ += SteadySeconds() - start;
  ++num_steps_;
  return s;
}

namespace {

// One call from rank 0. Model errors on bad input (which rank 0 hits too, before any
// collective) are logged and the loop goes on; a broken group ends it.
Status RunOne(const StepMessage& msg, CausalLm& shard, PagedKvCache& kv, dist::Communicator& comm, bool* stop) {
  switch (static_cast<StepKind>(msg.header.kind)) {
    case StepKind::kForward: {
      Status s = shard.Forward(msg.DecodeForward(), kv, nullptr);
      if (s.code() == StatusCode::kUnavailable) return s;
      if (!s.ok()) PLOG_WARN("tensor parallel rank {}: step failed: {}", comm.rank(), s.message());
      return OkStatus();
    }
    case StepKind::kSaveSnapshot: shard.SaveStateSnapshot(msg.header.a, msg.header.b); return OkStatus();
    case StepKind::kRestoreSnapshot: shard.RestoreStateSnapshot(msg.header.a, msg.header.b); return OkStatus();
    case StepKind::kAllocateStates: {
      Status s = shard.AllocateStateSlots(msg.header.a, msg.header.b);
      if (!s.ok()) return s;
      return comm.Barrier();
    }
    case StepKind::kShutdown: *stop = true; return OkStatus();
  }
  return InternalError("tensor parallel: unknown step kind from rank 0");
}

}  // namespace

Status RunTpWorker(CausalLm& shard, PagedKvCache& kv, dist::Communicator& comm) {
  StepMessage msg;
  const double step_timeout = comm.timeout_s();
  int64_t num_steps = 0;
  double forward_s = 0;
  dist::CommStats idle;  // waits for rank 0's next step: not part of a step
  for (bool stop = false; !stop;) {
    comm.set_timeout_s(0);  // idle between steps: wait as long as rank 0 lives
    const dist::CommStats before = comm.stats();
    PAGELLM_RETURN_IF_ERROR(comm.Broadcast(&msg.header, sizeof(msg.header), 0));
    const dist::CommStats after = comm.stats();
    idle.total_s += after.total_s - before.total_s;
    idle.wait_s += after.wait_s - before.wait_s;
    comm.set_timeout_s(step_timeout);
    const double start = SteadySeconds();
    const bool forward = msg.header.kind == static_cast<int32_t>(StepKind::kForward);
    if (forward) {
      if (num_steps == 0) {  // set-up traffic is not a step's
        comm.ResetStats();
        idle = {};
      }
      msg.PrepareBody();
      PAGELLM_RETURN_IF_ERROR(comm.Broadcast(msg.body.data(), msg.header.body_bytes, 0));
    }
    PAGELLM_RETURN_IF_ERROR(RunOne(msg, shard, kv, comm, &stop));
    if (forward) {
      forward_s += SteadySeconds() - start;
      ++num_steps;
    }
  }
  dist::CommStats in_steps = comm.stats();
  in_steps.total_s -= idle.total_s;
  in_steps.wait_s -= idle.wait_s;
  LogStepSplit(comm.rank(), num_steps, forward_s, in_steps);
  return OkStatus();
}

}  // namespace pagellm
