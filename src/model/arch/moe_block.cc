#include "model/arch/moe_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/arch/weight_checks.h"

namespace pagellm {

StatusOr<std::unique_ptr<MoeBlock>> MoeBlock::Create(const ModelConfig& c, const LayerWeights& w, Backend& backend,
                                                     int32_t max_num_tokens, const std::string& name_prefix) {
  if (!c.is_moe() || c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts) {
    return InvalidArgumentError("MoeBlock: config has no valid experts / experts-per-token");
  }
  std::unique_ptr<MoeBlock> block(
      new MoeBlock(backend, c.hidden_size, c.num_experts, c.num_experts_per_tok, c.norm_topk_prob));
  PAGELLM_RETURN_IF_ERROR(block->Prepare(c, w, name_prefix));
  block->Allocate(max_num_tokens, c.moe_intermediate_size, c.shared_expert_intermediate_size);
  return block;
}

Status MoeBlock::Prepare(const ModelConfig& c, const LayerWeights& w, const std::string& p) {
  const int64_t h = c.hidden_size, ie = c.moe_intermediate_size, e_count = c.num_experts;
  auto prepare = [&](const TensorView& t, std::vector<int64_t> shape,
                     const std::string& name) -> StatusOr<std::unique_ptr<LinearWeight>> {
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(t, shape, name));
    return backend_.PrepareLinear(t, TensorView{});
  };
  PAGELLM_ASSIGN_OR_RETURN(router_, prepare(w.moe_router, {e_count, h}, p + "mlp.gate"));
  experts_.resize(static_cast<size_t>(e_count));
  if (c.fused_experts) {
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.experts_gate_up, {e_count, 2 * ie, h}, p + "mlp.experts.gate_up_proj"));
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.experts_down, {e_count, h, ie}, p + "mlp.experts.down_proj"));
  } else if (static_cast<int64_t>(w.expert_gate_proj.size()) != e_count ||
             static_cast<int64_t>(w.expert_up_proj.size()) != e_count ||
             static_cast<int64_t>(w.expert_down_proj.size()) != e_count) {
    return InvalidArgumentError(fmt::format("{}mlp.experts: expected {} experts' gate/up/down weights", p, e_count));
  }
  for (int64_t e = 0; e < e_count; ++e) {
    Expert& x = experts_[static_cast<size_t>(e)];
    const std::string n = fmt::format("{}mlp.experts.{}.", p, e);
    const size_t i = static_cast<size_t>(e);
    // Fused 3-D tensors: gate = rows [0, I_e), up = rows [I_e, 2 I_e) of expert e.
    TensorView gate = c.fused_experts ? SliceRows(w.experts_gate_up, e, 0, ie) : w.expert_gate_proj[i];
    TensorView up = c.fused_experts ? SliceRows(w.experts_gate_up, e, ie, ie) : w.expert_up_proj[i];
    TensorView down = c.fused_experts ? SliceRows(w.experts_down, e, 0, h) : w.expert_down_proj[i];
    PAGELLM_ASSIGN_OR_RETURN(x.gate, prepare(gate, {ie, h}, n + "gate_proj"));
    PAGELLM_ASSIGN_OR_RETURN(x.up, prepare(up, {ie, h}, n + "up_proj"));
    PAGELLM_ASSIGN_OR_RETURN(x.down, prepare(down, {h, ie}, n + "down_proj"));
  }
  if (c.shared_expert_intermediate_size > 0) {
    const int64_t is = c.shared_expert_intermediate_size;
    PAGELLM_ASSIGN_OR_RETURN(shared_.gate, prepare(w.shared_gate_proj, {is, h}, p + "mlp.shared_expert.gate_proj"));
    PAGELLM_ASSIGN_OR_RETURN(shared_.up, prepare(w.shared_up_proj, {is, h}, p + "mlp.shared_expert.up_proj"));
    PAGELLM_ASSIGN_OR_RETURN(shared_.down, prepare(w.shared_down_proj, {h, is}, p + "mlp.shared_expert.down_proj"));
    PAGELLM_ASSIGN_OR_RETURN(shared_gate_, prepare(w.shared_expert_gate, {1, h}, p + "mlp.shared_expert_gate"));
  }
  return OkStatus();
}

void MoeBlock::Allocate(int32_t max_num_tokens, int64_t expert_inter, int64_t shared_inter) {
  expert_inter_ = expert_inter;
  shared_inter_ = shared_inter;
  const size_t t = static_cast<size_t>(max_num_tokens);
  const size_t inter = static_cast<size_t>(std::max(expert_inter, shared_inter));
  router_logits_.resize(t * num_experts_);
  topk_ids_.resize(t * top_k_);
  topk_weights_.resize(t * top_k_);
  rows_.reserve(t);
  row_weights_.reserve(t);
  gathered_.resize(t * hidden_);
  gate_.resize(t * inter);
  up_.resize(t * inter);
  expert_out_.resize(t * hidden_);
  shared_scale_.resize(t);
}

// fp32 softmax over the E router logits, top-k (ties: lower expert id first), optional
// renormalisation of the k weights.
void MoeBlock::Route(const float* x, int64_t num_tokens) {
  backend_.Linear(*router_, x, num_tokens, router_logits_.data());
  std::vector<int32_t> order(static_cast<size_t>(num_experts_));
  for (int64_t t = 0; t < num_tokens; ++t) {
    float* p = router_logits_.data() + t * num_experts_;
    const float max = *std::max_element(p, p + num_experts_);
    float sum = 0.0f;
    for (int64_t e = 0; e < num_experts_; ++e) sum += (p[e] = std::exp(p[e] - max));
    for (int64_t e = 0; e < num_experts_; ++e) p[e] /= sum;
    for (int64_t e = 0; e < num_experts_; ++e) order[static_cast<size_t>(e)] = static_cast<int32_t>(e);
    std::partial_sort(order.begin(), order.begin() + top_k_, order.end(),
                      [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float topk_sum = 0.0f;
    for (int64_t i = 0; i < top_k_; ++i) topk_sum += p[order[static_cast<size_t>(i)]];
    for (int64_t i = 0; i < top_k_; ++i) {
      const int32_t e = order[static_cast<size_t>(i)];
      topk_ids_[static_cast<size_t>(t * top_k_ + i)] = e;
      topk_weights_[static_cast<size_t>(t * top_k_ + i)] = norm_topk_prob_ ? p[e] / topk_sum : p[e];
    }
  }
}

// Per expert: gather its rows, one Linear per projection over all of them, scatter-add.
void MoeBlock::RunExperts(const float* x, int64_t num_tokens, float* out) {
  std::memset(out, 0, static_cast<size_t>(num_tokens * hidden_) * sizeof(float));
  const size_t row_bytes = static_cast<size_t>(hidden_) * sizeof(float);
  for (int64_t e = 0; e < num_experts_; ++e) {
    rows_.clear();
    row_weights_.clear();
    for (int64_t r = 0; r < num_tokens * top_k_; ++r) {
      if (topk_ids_[static_cast<size_t>(r)] != e) continue;
      rows_.push_back(static_cast<int32_t>(r / top_k_));
      row_weights_.push_back(topk_weights_[static_cast<size_t>(r)]);
    }
    const int64_t n = static_cast<int64_t>(rows_.size());
    if (n == 0) continue;
    for (int64_t i = 0; i < n; ++i) std::memcpy(gathered_.data() + i * hidden_, x + rows_[i] * hidden_, row_bytes);
    const Expert& ex = experts_[static_cast<size_t>(e)];
    backend_.Linear(*ex.gate, gathered_.data(), n, gate_.data());  // [n, I_e]
    backend_.Linear(*ex.up, gathered_.data(), n, up_.data());      // [n, I_e]
    backend_.SiluMul(gate_.data(), up_.data(), n * expert_inter_, gate_.data());
    backend_.Linear(*ex.down, gate_.data(), n, expert_out_.data());  // [n, H]
    for (int64_t i = 0; i < n; ++i) {
      float* dst = out + rows_[i] * hidden_;
      const float* src = expert_out_.data() + i * hidden_;
      const float w = row_weights_[static_cast<size_t>(i)];
      for (int64_t j = 0; j < hidden_; ++j) dst[j] += w * src[j];
    }
  }
}

void MoeBlock::RunShared(const float* x, int64_t num_tokens, float* out) {
  backend_.Linear(*shared_.gate, x, num_tokens, gate_.data());  // [T, I_s]
  backend_.Linear(*shared_.up, x, num_tokens, up_.data());
  backend_.SiluMul(gate_.data(), up_.data(), num_tokens * shared_inter_, gate_.data());
  backend_.Linear(*shared_.down, gate_.data(), num_tokens, expert_out_.data());  // [T, H]
  backend_.Linear(*shared_gate_, x, num_tokens, shared_scale_.data());            // [T, 1]
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float s = 1.0f / (1.0f + std::exp(-shared_scale_[static_cast<size_t>(t)]));
    float* dst = out + t * hidden_;
    const float* src = expert_out_.data() + t * hidden_;
    for (int64_t j = 0; j < hidden_; ++j) dst[j] += s * src[j];
  }
}

void MoeBlock::Forward(const float* x, int64_t num_tokens, float* out) {
  PAGELLM_CHECK(num_tokens > 0 && num_tokens <= static_cast<int64_t>(shared_scale_.size()));
  Route(x, num_tokens);
  RunExperts(x, num_tokens, out);
  if (shared_.gate) RunShared(x, num_tokens, out);
}

}  // namespace pagellm
