#include "engine/causal_lm.h"

#include <cstring>

#include <fmt/format.h>

#include "model/arch/qwen_model.h"
#include "model/hybrid/hybrid_model.h"

namespace pagellm {
namespace {

class QwenCausalLm final : public CausalLm {
 public:
  explicit QwenCausalLm(std::unique_ptr<QwenModel> model) : model_(std::move(model)) {}
  const ModelConfig& config() const override { return model_->config(); }
  KvCacheSpec MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const override {
    return model_->MakeKvCacheSpec(num_blocks, block_size, dtype);
  }
  int64_t state_bytes_per_slot() const override { return 0; }
  Status AllocateStateSlots(int64_t, int64_t) override { return OkStatus(); }
  void SaveStateSnapshot(int32_t, int32_t) override { PAGELLM_CHECK(false); }  // stateless: never scheduled
  void RestoreStateSnapshot(int32_t, int32_t) override { PAGELLM_CHECK(false); }
  Status Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) override {
    return model_->Forward(input, kv, logits);
  }

 private:
  std::unique_ptr<QwenModel> model_;
};

// Owns the state slots; the scheduler decides which sequence holds which slot.
class HybridCausalLm final : public CausalLm {
 public:
  explicit HybridCausalLm(std::unique_ptr<HybridModel> model) : model_(std::move(model)) {}
  const ModelConfig& config() const override { return model_->config(); }
  KvCacheSpec MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const override {
    return model_->MakeKvCacheSpec(num_blocks, block_size, dtype);
  }
  int64_t state_bytes_per_slot() const override { return model_->MakeStateSpec(1).bytes_per_slot(); }
  // Snapshots live in the same arena, as slots [num_slots, num_slots + num_snapshots).
  Status AllocateStateSlots(int64_t num_slots, int64_t num_snapshots) override {
    if (states_ != nullptr) return FailedPreconditionError("hybrid model: state slots are already allocated");
    PAGELLM_ASSIGN_OR_RETURN(states_, HybridStateCache::Create(model_->MakeStateSpec(num_slots + num_snapshots)));
    num_slots_ = num_slots;
    return OkStatus();
  }
  void SaveStateSnapshot(int32_t slot_idx, int32_t snapshot_idx) override {
    CopySlot(slot_idx, num_slots_ + snapshot_idx);
  }
  void RestoreStateSnapshot(int32_t snapshot_idx, int32_t slot_idx) override {
    CopySlot(num_slots_ + snapshot_idx, slot_idx);
  }
  Status Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) override {
    if (states_ == nullptr) return FailedPreconditionError("hybrid model: AllocateStateSlots was not called");
    return model_->Forward(input, kv, *states_, logits);
  }

 private:
  // A slot is contiguous (slot-major arena, hybrid_state_cache.h): one memcpy.
  void CopySlot(int64_t src, int64_t dst) {
    PAGELLM_CHECK(states_ != nullptr && src >= 0 && dst >= 0 && src < states_->num_slots() && dst < states_->num_slots());
    std::memcpy(states_->Get(dst, 0).conv_state, states_->Get(src, 0).conv_state,
                static_cast<size_t>(states_->spec().bytes_per_slot()));
  }

  std::unique_ptr<HybridModel> model_;
  std::unique_ptr<HybridStateCache> states_;
  int64_t num_slots_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<CausalLm>> CreateCausalLm(const ModelConfig& config, const ModelWeights& weights,
                                                   Backend& backend, int32_t max_num_tokens,
                                                   const LinearOptions& linear_options) {
  if (config.is_hybrid()) {
    if (linear_options.quantization != LinearQuantization::kNone) {
      return InvalidArgumentError(
          fmt::format("--quantization is not supported yet for the hybrid model type {}", config.model_type));
    }
    PAGELLM_ASSIGN_OR_RETURN(auto model, HybridModel::Create(config, weights, backend, max_num_tokens));
    return std::unique_ptr<CausalLm>(new HybridCausalLm(std::move(model)));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto model, QwenModel::Create(config, weights, backend, max_num_tokens, linear_options));
  return std::unique_ptr<CausalLm>(new QwenCausalLm(std::move(model)));
}

}  // namespace pagellm
