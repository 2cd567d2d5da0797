// MoeBlock: the sparse MoE feed-forward of Qwen3-MoE, Qwen3-Next and Qwen3.5-MoE
// (docs/qwen-architectures.md §2.5).
//
//   p = softmax_fp32(x W_router^T)                 // [T, E]
//   (w, e) = topk(p, k);  if norm_topk_prob: w /= sum(w)   (fp32)
//   y = sum_i w_i * down_e(silu(gate_e(x)) * up_e(x))
//   y += sigmoid(x . w_sg) * shared_mlp(x)         // Next / 3.5-MoE only
//
// NOTE: compute is grouped by expert, not by token: the rows routed to expert e are
// gathered into one [n_e, H] matrix and run through one Linear per projection, so a
// batched decode step reads each selected expert's weights once, and the weighted
// outputs are scattered back. Stacked 3-D expert tensors (Qwen3.5-MoE) are sliced into
// per-expert views and prepared like any other linear weight.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto moe, MoeBlock::Create(config, layer_weights, backend, 2048, "layers.0."));
//   moe->Forward(normed, num_tokens, out);   // normed, out [T, H]
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"

namespace pagellm {

class MoeBlock {
 public:
  // Checks every expert/router/shared tensor of `w` against `config` (names in errors
  // start with `name_prefix`) and prepares them on `backend`.
  static StatusOr<std::unique_ptr<MoeBlock>> Create(const ModelConfig& config, const LayerWeights& w,
                                                    Backend& backend, int32_t max_num_tokens,
                                                    const std::string& name_prefix);

  // out [T, H] = MoE(x [T, H]); 0 < T <= max_num_tokens. out must not alias x.
  void Forward(const float* x, int64_t num_tokens, float* out);

  // Routing of the last Forward call: [T, k] expert ids and fp32 weights (for tests).
  const std::vector<int32_t>& last_expert_ids() const { return topk_ids_; }
  const std::vector<float>& last_expert_weights() const { return topk_weights_; }

 private:
  struct Expert {
    std::unique_ptr<LinearWeight> gate, up, down;
  };
  MoeBlock(Backend& backend, int64_t hidden, int64_t num_experts, int64_t top_k, bool norm_topk_prob)
      : backend_(backend), hidden_(hidden), num_experts_(num_experts), top_k_(top_k),
        norm_topk_prob_(norm_topk_prob) {}
  Status Prepare(const ModelConfig& c, const LayerWeights& w, const std::string& prefix);
  void Allocate(int32_t max_num_tokens, int64_t expert_inter, int64_t shared_inter);
  void Route(const float* x, int64_t num_tokens);
  void RunExperts(const float* x, int64_t num_tokens, float* out);
  void RunShared(const float* x, int64_t num_tokens, float* out);

  Backend& backend_;
  int64_t hidden_, num_experts_, top_k_;
  bool norm_topk_prob_;
  int64_t expert_inter_ = 0, shared_inter_ = 0;
  std::unique_ptr<LinearWeight> router_;  // [E, H]
  std::vector<Expert> experts_;
  Expert shared_;                               // empty when no shared expert
  std::unique_ptr<LinearWeight> shared_gate_;  // [1, H]
  std::vector<float> router_logits_;     // [T, E]
  std::vector<int32_t> topk_ids_;        // [T, k]
  std::vector<float> topk_weights_;      // [T, k]
  std::vector<int32_t> rows_;            // token rows routed to the current expert
  std::vector<float> row_weights_;       // their routing weights
  std::vector<float> gathered_, gate_, up_, expert_out_;  // [T, H], [T, I], [T, I], [T, H]
  std::vector<float> shared_scale_;      // [T]
};

}  // namespace pagellm
