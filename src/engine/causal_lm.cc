#include "engine/causal_lm.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "model/arch/qwen_model.h"
#include "model/hybrid/hybrid_model.h"
#include "dist/subgroup_communicator.h"
#include "model/shard_plan.h"
#include "runner/tp_causal_lm.h"

namespace pagellm {
namespace {

// What a shard's model borrows: its sliced weights and, with pipeline and tensor
// parallelism together, its stage's tensor-parallel group.
struct ShardResources {
  ModelWeights weights;
  std::unique_ptr<dist::Communicator> stage_group;
};

class QwenCausalLm final : public CausalLm {
 public:
  explicit QwenCausalLm(std::unique_ptr<QwenModel> model, std::shared_ptr<const ShardResources> shard = nullptr)
      : shard_(std::move(shard)), model_(std::move(model)) {}
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
  std::shared_ptr<const ShardResources> shard_;  // when sharded: what the model borrows (outlives it)
  std::unique_ptr<QwenModel> model_;
};

// Owns the state slots; the scheduler decides which sequence holds which slot.
class HybridCausalLm final : public CausalLm, public MtpHead {
 public:
  explicit HybridCausalLm(std::unique_ptr<HybridModel> model, std::shared_ptr<const ShardResources> shard = nullptr)
      : shard_(std::move(shard)), model_(std::move(model)) {}
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
    ++restores_.num_restores;
    restored_slots_.push_back(slot_idx);
  }
  Status Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) override {
    if (states_ == nullptr) return FailedPreconditionError("hybrid model: AllocateStateSlots was not called");
    CountRestoredTokens(input);
    return model_->Forward(input, kv, *states_, logits);
  }
  const StateRestoreCounts& restores() const { return restores_; }
  MtpHead* mtp_head() override { return model_->has_mtp() ? this : nullptr; }
  KvCacheSpec MakeMtpKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const override {
    return model_->MakeMtpKvCacheSpec(num_blocks, block_size, dtype);
  }
  std::span<const float> last_hidden() const override { return model_->last_hidden(); }
  Status ForwardMtp(const ForwardInput& input, const float* hidden_in, int32_t step, PagedKvCache& kv,
                    float* hidden_out, float* logits) override {
    return model_->ForwardMtp(input, hidden_in, step, kv, hidden_out, logits);
  }

 private:
  // A slot is contiguous (slot-major arena, hybrid_state_cache.h): one memcpy.
  void CopySlot(int64_t src, int64_t dst) {
    PAGELLM_CHECK(states_ != nullptr && src >= 0 && dst >= 0 && src < states_->num_slots() && dst < states_->num_slots());
    if (states_->spec().num_gdn_layers == 0) return;  // a pipeline stage of full-attention layers only
    std::memcpy(states_->Get(dst, 0).conv_state, states_->Get(src, 0).conv_state,
                static_cast<size_t>(states_->spec().bytes_per_slot()));
  }

  // A slot restored before this Forward resumes at the snapshot's depth: its sequence's
  // first new position is the number of tokens the snapshot stood for.
  void CountRestoredTokens(const ForwardInput& input) {
    for (int32_t slot : restored_slots_) {
      for (int32_t s = 0; s < input.num_seqs() && s < static_cast<int32_t>(input.state_slots.size()); ++s) {
        if (input.state_slots[static_cast<size_t>(s)] != slot) continue;
        restores_.num_restored_tokens += input.positions[static_cast<size_t>(input.query_start_loc[s])];
        break;
      }
    }
    restored_slots_.clear();
  }

  std::shared_ptr<const ShardResources> shard_;  // when sharded: what the model borrows (outlives it)
  std::unique_ptr<HybridModel> model_;
  std::unique_ptr<HybridStateCache> states_;
  int64_t num_slots_ = 0;
  StateRestoreCounts restores_;
  std::vector<int32_t> restored_slots_;  // restored since the last Forward
};

}  // namespace

StateRestoreCounts GetStateRestoreCounts(const CausalLm& model) {
  // Under tensor parallelism rank 0's shard performs the same restores as every rank.
  if (const auto* tp = dynamic_cast<const TpCausalLm*>(&model)) return GetStateRestoreCounts(tp->shard());
  const auto* hybrid = dynamic_cast<const HybridCausalLm*>(&model);
  return hybrid != nullptr ? hybrid->restores() : StateRestoreCounts{};
}

StatusOr<std::unique_ptr<CausalLm>> CreateCausalLm(const ModelConfig& config, const ModelWeights& weights,
                                                   Backend& backend, int32_t max_num_tokens,
                                                   const LinearOptions& linear_options) {
  if (config.is_hybrid()) {
    PAGELLM_ASSIGN_OR_RETURN(auto model, HybridModel::Create(config, weights, backend, max_num_tokens, linear_options));
    return std::unique_ptr<CausalLm>(new HybridCausalLm(std::move(model)));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto model, QwenModel::Create(config, weights, backend, max_num_tokens, linear_options));
  return std::unique_ptr<CausalLm>(new QwenCausalLm(std::move(model)));
}

StatusOr<std::unique_ptr<CausalLm>> CreateShardedCausalLm(const ModelConfig& config, const ModelWeights& weights,
                                                          Backend& backend, int32_t max_num_tokens,
                                                          const LinearOptions& linear_options,
                                                          dist::Communicator& world, ParallelLayout layout,
                                                          int64_t* shard_bytes) {
  const int tp_size = layout.tensor_parallel_size, pp_size = layout.pipeline_parallel_size;
  if (tp_size < 1 || pp_size < 1 || tp_size * pp_size != world.world_size()) {
    return InvalidArgumentError(fmt::format("tensor parallel {} x pipeline parallel {} does not make the group's {} "
                                            "ranks", tp_size, pp_size, world.world_size()));
  }
  const int stage = world.rank() / tp_size, tp_rank = world.rank() % tp_size;
  PAGELLM_ASSIGN_OR_RETURN(ShardedModel shard,
                           ShardModel(config, weights, ShardSpec{.rank = tp_rank, .size = tp_size, .stage = stage,
                                                                 .num_stages = pp_size}));
  *shard_bytes = shard.weight_bytes;
  // The model keeps views into the shard's weights and borrows its stage's group: the
  // adapter owns both.
  auto owned = std::make_shared<ShardResources>();
  owned->weights = std::move(shard.weights);
  dist::Communicator* tp_comm = nullptr;
  if (pp_size == 1) {
    tp_comm = &world;
  } else if (tp_size > 1) {
    std::vector<int> members;
    for (int r = 0; r < tp_size; ++r) members.push_back(stage * tp_size + r);
    owned->stage_group = std::make_unique<dist::SubgroupCommunicator>(world, std::move(members));
    tp_comm = owned->stage_group.get();
  }
  TensorParallelism tp{.comm = tp_comm, .lm_head_rows = shard.lm_head_rows};
  if (pp_size > 1) {
    const bool last = stage == pp_size - 1;
    tp.pipeline = PipelineStage{.world = &world, .first_layer = shard.layers.first, .end_layer = shard.layers.end,
                                .prev_rank = stage == 0 ? -1 : world.rank() - tp_size,
                                .next_rank = last ? -1 : world.rank() + tp_size,
                                .logits_peer = world.rank() == 0          ? (pp_size - 1) * tp_size
                                               : last && tp_rank == 0 ? 0
                                                                      : -1};
  }
  if (config.is_hybrid()) {
    PAGELLM_ASSIGN_OR_RETURN(auto model, HybridModel::Create(shard.config, owned->weights, backend, max_num_tokens,
                                                             linear_options, tp));
    return std::unique_ptr<CausalLm>(new HybridCausalLm(std::move(model), std::move(owned)));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto model,
                           QwenModel::Create(shard.config, owned->weights, backend, max_num_tokens, linear_options, tp));
  return std::unique_ptr<CausalLm>(new QwenCausalLm(std::move(model), std::move(owned)));
}

Status SendDistPlan(dist::Communicator& comm, DistPlan plan) { return comm.Broadcast(&plan, sizeof(plan), 0); }

StatusOr<DistPlan> ReceiveDistPlan(dist::Communicator& comm) {
  DistPlan plan;
  PAGELLM_RETURN_IF_ERROR(comm.Broadcast(&plan, sizeof(plan), 0));
  return plan;
}

}  // namespace pagellm
