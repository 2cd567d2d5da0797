// HybridModel: the Qwen3.5 (dense and MoE) and Qwen3-Next forward pass: Gated DeltaNet
// "linear_attention" layers interleaved with gated "full_attention" layers over the
// paged KV cache (docs/qwen-architectures.md §3.4-3.5, §4).
//
//   h = embed[ids]
//   per layer: h += mixer(norm_in(h))      mixer = gated attention (full layers) or GDN
//              h += ffn(norm_post(h))      ffn = SwiGLU MLP or MoeBlock
//   logits[logits_indices] = lm_head(norm(h[logits_indices]))
// Zero-centred norms (input/post/final, q/k) are folded to 1 + w at load. Gated
// attention: q_proj emits per head [q | gate]; q/k norms, partial NeoX RoPE over the
// first head_dim * partial_rotary_factor dims, paged GQA attention, attn *= sigmoid(gate),
// o_proj. GDN layers run GdnMixerForward once per sequence on that sequence's state
// slot (input.state_slots), so chunked prefill and decode continue the same state.
// Qwen3-Next's grouped in_proj_qkvz / in_proj_ba rows are permuted once at load into the
// flat Qwen3.5 layout. The KV cache holds only the full-attention layers.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto model, HybridModel::Create(config, weights, *backend, 2048));
//   PAGELLM_ASSIGN_OR_RETURN(auto kv, PagedKvCache::Create(model->MakeKvCacheSpec(1024, 16)));
//   PAGELLM_ASSIGN_OR_RETURN(auto states, HybridStateCache::Create(model->MakeStateSpec(8)));
//   PAGELLM_RETURN_IF_ERROR(model->Forward(input, *kv, *states, logits.data()));
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/arch/moe_block.h"
#include "model/arch/parallel_runtime.h"
#include "model/config.h"
#include "model/forward_input.h"
#include "model/hybrid/gdn_mixer.h"
#include "model/hybrid/hybrid_state_cache.h"
#include "model/shard_plan.h"
#include "model/weights.h"

namespace pagellm {

class HybridModel {
 public:
  // Validates every weight against `config` (which must be a hybrid config) and prepares
  // them on `backend`. `backend` and `weights`' storage must outlive the model.
  // `linear_options` applies to the linear layers QwenModel applies it to: gated
  // attention q/k/v/o, GDN in_proj_* / out_proj, the dense MLP and lm_head (e.g. W8A8
  // for --quantization int8). Conv1d, norms, A_log, dt_bias and embeddings stay float;
  // MoE blocks (router, experts, shared expert) stay float as in QwenModel, whose
  // MoeBlock takes no LinearOptions yet.
  // With `tp.comm`, `config` and `weights` are this rank's shard (model/shard_plan.h):
  // every mixer (attention, GDN) and every FFN ends in an all-reduce of its partial
  // sum, and the vocabulary-parallel lm_head's slices are gathered to rank 0. With
  // `tp.pipeline`, only the stage's layers run; its KV cache and GDN state hold those.
  static StatusOr<std::unique_ptr<HybridModel>> Create(const ModelConfig& config, const ModelWeights& weights,
                                                       Backend& backend, int32_t max_num_tokens,
                                                       const LinearOptions& linear_options = {},
                                                       const TensorParallelism& tp = {});

  // logits: [input.logits_indices.size(), vocab_size]. input.state_slots must name one
  // distinct slot of `states` per sequence. InvalidArgument on inconsistent input.
  Status Forward(const ForwardInput& input, PagedKvCache& kv, HybridStateCache& states, float* logits);

  // Paged cache for the full-attention layers only (num_layers = their count).
  KvCacheSpec MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype = DType::kBF16) const;
  // State arena for `num_slots` concurrent sequences.
  HybridStateSpec MakeStateSpec(int64_t num_slots) const;

  // --- Multi-token prediction (weights.mtp loaded; unsharded models only) ---
  // One MTP row i takes the token at position i + 1 and the target's final-normed hidden
  // state at position i, and predicts the token at i + 2 (vLLM's Qwen3NextMTP):
  //   h = fc([norm_e(embed(x)); norm_h(hidden_in)]); h = layer(h); out = norm(h)
  //   logits[logits_indices] = lm_head(out[logits_indices])   (the model's lm_head)
  // `input` addresses the MTP's own paged KV cache (MakeMtpKvCacheSpec); `step` picks the
  // layer (step % num_mtp_layers, as vLLM). hidden_out: [num_tokens, H], normed, the
  // hidden_in of the next draft step.
  bool has_mtp() const { return !mtp_layers_.empty(); }
  KvCacheSpec MakeMtpKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype = DType::kBF16) const;
  Status ForwardMtp(const ForwardInput& input, const float* hidden_in, int32_t step, PagedKvCache& kv,
                    float* hidden_out, float* logits);
  // With an MTP head, every Forward keeps the final-normed hidden state of each of its
  // tokens ([num_tokens, H]) until the next Forward: the MTP's hidden_in.
  std::span<const float> last_hidden() const {
    return {captured_.data(), static_cast<size_t>(captured_rows_ * config_.hidden_size)};
  }

  const ModelConfig& config() const { return config_; }
  int32_t max_num_tokens() const { return max_num_tokens_; }
  int64_t max_positions() const { return rope_.max_positions; }

 private:
  struct Layer {
    bool full_attention = false;
    int64_t cache_idx = -1;                               // KV layer (full) or GDN layer index
    std::vector<float> input_norm, post_norm;             // [H], 1 + w folded
    std::vector<float> q_norm, k_norm;                    // [hd], 1 + w folded
    std::unique_ptr<LinearWeight> q_proj, k_proj, v_proj, o_proj;  // gated attention; q_proj [2*nh*hd, H]
    std::unique_ptr<LinearWeight> in_qkv, in_z, in_b, in_a, out_proj;  // GDN
    std::vector<float> conv_weight, a_log, dt_bias, gdn_norm;         // [conv_dim, K], [nv], [nv], [dv]
    std::unique_ptr<LinearWeight> gate_proj, up_proj, down_proj;      // dense MLP
    std::unique_ptr<LinearWeight> gate_up_proj;  // gate|up in one call where the backend stacks them (then both null)
    std::unique_ptr<MoeBlock> moe;
  };

  HybridModel(const ModelConfig& config, Backend& backend, int32_t max_num_tokens,
              const LinearOptions& linear_options);
  Status PrepareWeights(const ModelWeights& weights);
  Status PrepareAttention(const LayerWeights& w, const std::string& prefix, Layer& layer);
  Status PrepareGdn(const LayerWeights& w, const std::string& prefix, Layer& layer);
  Status PrepareFfn(const LayerWeights& w, bool moe, const std::string& prefix, Layer& layer);
  Status PrepareMtp(const MtpWeights& w);
  void AllocateWorkspace();
  Status ValidateInput(const ForwardInput& input, const PagedKvCache& kv, const HybridStateCache& states) const;
  void RunAttention(const Layer& layer, const ForwardInput& input, PagedKvCache& kv);
  void RunGdn(const Layer& layer, const ForwardInput& input, HybridStateCache& states);
  Status RunFfn(const Layer& layer, int64_t num_tokens);
  // Sums proj_'s [T, H] partial sums over the tensor-parallel group (no-op without one).
  Status AllReduce(int64_t num_tokens);
  // Final norm and lm_head over the rows the sampler needs (the last stage).
  Status RunHead(const ForwardInput& input, float* logits);

  ModelConfig config_;
  Backend& backend_;
  int32_t max_num_tokens_;
  LinearOptions linear_options_;
  GdnDims gdn_dims_;
  TensorView embed_tokens_;
  std::vector<Layer> layers_;
  std::vector<float> final_norm_;
  std::unique_ptr<LinearWeight> lm_head_;
  ParallelRuntime par_;  // tensor / pipeline parallel place (one rank: nothing sharded)
  int64_t num_full_ = 0, num_gdn_ = 0;  // of par_.layers: KV-cache and GDN-state layers
  RopeTable rope_;
  // Row-permuted copies of Qwen3-Next's fused GDN projections (owned here).
  std::vector<std::shared_ptr<void>> owned_weights_;
  // fp32 activations, each sized for max_num_tokens rows.
  std::vector<float> hidden_, normed_, qg_, q_, gate_, k_, v_, attn_, proj_, mlp_gate_, mlp_up_;
  std::vector<float> mixed_, z_, b_, a_, gdn_y_;
  std::unique_ptr<GdnMixerWorkspace> gdn_ws_;
  // MTP head: its decoder layers (full attention, cache_idx into the MTP KV cache), fc,
  // folded norms; the [T, 2H] fc input and the captured hidden states of the last Forward.
  std::vector<Layer> mtp_layers_;
  std::unique_ptr<LinearWeight> mtp_fc_;
  std::vector<float> mtp_norm_embedding_, mtp_norm_hidden_, mtp_norm_;
  std::vector<float> mtp_concat_, captured_;
  int64_t captured_rows_ = 0;
};

}  // namespace pagellm
