// QwenModel: the dense Qwen2 / Qwen3 forward pass over a paged KV cache.
//
// One call runs one scheduler step: a flat, mixed batch of prefill chunks and decode
// rows (ForwardInput), writes their keys/values into the cache and returns logits for
// the rows the sampler needs. Math follows docs/qwen-architectures.md §2-3:
//   h = embed[ids]
//   per layer: h += o_proj(attn(rope(qk_norm?(q/k/v_proj(rmsnorm(h))))))
//              h += down(silu(gate(rmsnorm(h))) * up(rmsnorm(h)))
//   logits[logits_indices] = lm_head(rmsnorm(h[logits_indices]))
// Qwen2: q/k/v biases. Qwen3: per-head q_norm/k_norm before RoPE, optional biases.
// Qwen3-MoE: the same, with the MLP of MoE layers replaced by MoeBlock (moe_block.h).
// Hybrid models (Qwen3-Next / Qwen3.5) are HybridModel (model/hybrid/hybrid_model.h).
// Activations and the residual stream are fp32 (HF keeps bf16; see the report).
// All workspaces are allocated in Create, sized for `max_num_tokens` rows.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto model, QwenModel::Create(config, weights, *backend, 2048));
//   PAGELLM_ASSIGN_OR_RETURN(auto kv, PagedKvCache::Create(model->MakeKvCacheSpec(1024, 16)));
//   std::vector<float> logits(input.logits_indices.size() * config.vocab_size);
//   PAGELLM_RETURN_IF_ERROR(model->Forward(input, *kv, logits.data()));
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/arch/moe_block.h"
#include "model/arch/parallel_runtime.h"
#include "model/config.h"
#include "model/forward_input.h"
#include "model/shard_plan.h"
#include "model/weights.h"

namespace pagellm {

class QwenModel {
 public:
  // Validates every weight shape against `config` and prepares linear weights on
  // `backend` (which must outlive the model, as must `weights`' storage).
  // `linear_options` applies to every linear layer (e.g. W8A8 with --quantization int8;
  // weights already block-quantized, like GGUF Q8_0, ignore it).
  // With `tp.comm`, `config` and `weights` are this rank's shard (model/shard_plan.h):
  // attention and MLP outputs are all-reduced and the logits gathered to rank 0.
  // With `tp.pipeline`, the model runs only its stage's layers (stage_transfer.h).
  static StatusOr<std::unique_ptr<QwenModel>> Create(const ModelConfig& config, const ModelWeights& weights,
                                                     Backend& backend, int32_t max_num_tokens,
                                                     const LinearOptions& linear_options = {},
                                                     const TensorParallelism& tp = {});

  // logits: [input.logits_indices.size(), vocab_size], row i for token row
  // logits_indices[i]. Fails with InvalidArgument on inconsistent input (sizes,
  // positions vs seq_lens, ids/slots/blocks out of range, > max_num_tokens rows).
  // Tensor parallel: every rank calls Forward with the same input; ranks other than 0
  // pass logits = nullptr. Unavailable when a peer rank failed.
  Status Forward(const ForwardInput& input, PagedKvCache& kv, float* logits);

  // A cache layout matching this model (its stage's layers, kv heads, head_dim).
  KvCacheSpec MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype = DType::kBF16) const;

  const ModelConfig& config() const { return config_; }
  int32_t max_num_tokens() const { return max_num_tokens_; }
  // Largest position + 1 the RoPE table covers.
  int64_t max_positions() const { return rope_.max_positions; }

 private:
  struct Layer {
    std::vector<float> input_norm, post_norm, q_norm, k_norm;  // fp32 copies; q/k_norm [hd] or empty
    std::unique_ptr<LinearWeight> q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
    // q|k|v and gate|up stacked into one call each where the backend can (then the parts
    // above are null): a decode step wakes the threads once for them, not 3 and 2 times.
    std::unique_ptr<LinearWeight> qkv_proj, gate_up_proj;
    std::unique_ptr<MoeBlock> moe;  // MoE layers (then gate/up/down_proj are null)
  };
  // Row pointers into `workspace_`, each sized for max_num_tokens rows.
  struct Buffers {
    float* hidden;  // [T, H] residual stream
    float* normed;  // [T, H]
    float* q;       // [T, nh*hd]
    float* k;       // [T, nkv*hd]
    float* v;       // [T, nkv*hd]
    float* attn;    // [T, nh*hd]
    float* proj;    // [T, H] o_proj / down_proj output
    float* gate;    // [T, I]
    float* up;      // [T, I]
  };

  QwenModel(const ModelConfig& config, Backend& backend, int32_t max_num_tokens, const LinearOptions& linear_options)
      : config_(config), backend_(backend), max_num_tokens_(max_num_tokens), linear_options_(linear_options) {}
  Status PrepareWeights(const ModelWeights& weights);
  Status AllocateWorkspace();
  Status ValidateInput(const ForwardInput& input, const PagedKvCache& kv) const;
  Status RunAttention(const Layer& layer, int64_t layer_idx, const ForwardInput& input, PagedKvCache& kv);
  Status RunMlp(const Layer& layer, int64_t num_tokens);
  // Final norm and lm_head over the rows the sampler needs (the last stage).
  Status RunHead(const ForwardInput& input, float* logits);
  // Sums this rank's partial [T, H] output over the tensor-parallel group (no-op alone).
  Status AllReduce(float* partial, int64_t num_tokens);

  ModelConfig config_;
  Backend& backend_;
  int32_t max_num_tokens_;
  LinearOptions linear_options_;
  ParallelRuntime par_;  // tensor / pipeline parallel place (one rank: nothing sharded)
  TensorView embed_tokens_;  // [V, H]
  std::vector<Layer> layers_;  // par_.layers, in order
  std::vector<float> final_norm_;  // [H]
  std::unique_ptr<LinearWeight> lm_head_;
  RopeTable rope_;
  AlignedBuffer workspace_;
  Buffers buf_{};
};

}  // namespace pagellm
