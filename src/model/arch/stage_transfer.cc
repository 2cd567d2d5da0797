#include "model/arch/stage_transfer.h"

#include <fmt/format.h>

#include "dist/communicator.h"

namespace pagellm {

namespace {
constexpr int64_t kF32 = sizeof(float);
}

StatusOr<LayerRange> CheckStageLayers(const PipelineStage& stage, int64_t num_layers) {
  const LayerRange r{.first = stage.first_layer, .end = stage.end_layer < 0 ? num_layers : stage.end_layer};
  if (r.first < 0 || r.end > num_layers || r.first >= r.end) {
    return InvalidArgumentError(fmt::format("pipeline stage layers [{}, {}) are not a non-empty part of [0, {})",
                                            r.first, r.end, num_layers));
  }
  return r;
}

Status StageTransfer::ReceiveHidden(float* hidden, int64_t count) {
  return stage_.world->Recv(hidden, count * kF32, stage_.prev_rank);
}

Status StageTransfer::SendHidden(const float* hidden, int64_t count, float* logits, int64_t logits_count) {
  PAGELLM_RETURN_IF_ERROR(stage_.world->Send(hidden, count * kF32, stage_.next_rank));
  // Both sides know the step's row count, so a step that samples nothing sends nothing.
  if (stage_.logits_peer < 0 || logits_count == 0) return OkStatus();
  return stage_.world->Recv(logits, logits_count * kF32, stage_.logits_peer);
}

float* StageTransfer::LogitsBuffer(float* logits, int64_t logits_count) {
  if (stage_.world == nullptr || stage_.logits_peer < 0) return logits;
  if (static_cast<int64_t>(logits_.size()) < logits_count) logits_.resize(static_cast<size_t>(logits_count));
  return logits_.data();
}

Status StageTransfer::SendLogits(int64_t logits_count) {
  if (stage_.world == nullptr || stage_.logits_peer < 0 || logits_count == 0) return OkStatus();
  return stage_.world->Send(logits_.data(), logits_count * kF32, stage_.logits_peer);
}

}  // namespace pagellm
