// ModelConfig: every config.json key that changes the math of a Qwen model.
//
//   PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig("/models/qwen3-0.6b"));
//
// See docs/qwen-architectures.md §1 for what each key does. Qwen3.5 nests its text
// keys in `text_config`; the parser merges them over the top level.
//
// Architectures: qwen2, qwen3 (dense), qwen3_moe (every layer MoE unless listed in
// mlp_only_layers), qwen3_next / qwen3_5 / qwen3_5_moe (hybrid: Gated DeltaNet
// "linear_attention" layers plus gated "full_attention" layers, zero-centred norms).
//   if (config.is_hybrid() && !config.IsFullAttentionLayer(l)) ... GDN layer ...
//   if (config.IsMoeLayer(l)) ... router + experts ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "tensor/dtype.h"

namespace pagellm {

enum class ModelArch { kQwen2, kQwen3, kQwen3Moe, kQwen3Next, kQwen3_5, kQwen3_5Moe };

// Mixer of one decoder layer (Qwen3-Next / Qwen3.5 `layer_types`).
enum class LayerType { kFullAttention, kLinearAttention };

enum class RopeScalingType { kNone, kLinear, kDynamic, kYarn };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // 0: use max_position_embeddings
  double beta_fast = 32.0;                       // yarn
  double beta_slow = 1.0;                        // yarn
  std::optional<double> attention_factor;        // yarn; default 0.1*ln(factor)+1
};

struct ModelConfig {
  std::string model_type;  // "qwen2", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_5", "qwen3_5_moe"
  ModelArch arch = ModelArch::kQwen3;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense SwiGLU width; 0 when every layer is MoE (qwen3_5_moe)
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // Qwen2: hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 32768;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // Qwen2: always true; Qwen3: attention_bias
  bool o_bias = false;    // Qwen3 with attention_bias only
  bool qk_norm = false;   // Qwen3: per-head RMSNorm on q and k before RoPE
  DType torch_dtype = DType::kBF16;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // from config.json (generation_config overrides)
  std::optional<int64_t> pad_token_id;
  // Parsed for completeness; pagellm implements plain causal attention and refuses
  // use_sliding_window=true (no released Qwen2/3 model sets it).
  bool use_sliding_window = false;

  // --- MoE (qwen3_moe, qwen3_next, qwen3_5_moe); num_experts == 0 for dense models ---
  int64_t num_experts = 0;                      // E
  int64_t num_experts_per_tok = 0;              // k
  int64_t moe_intermediate_size = 0;            // I_e, per-expert SwiGLU width
  int64_t shared_expert_intermediate_size = 0;  // I_s; 0: no shared expert (qwen3_moe)
  bool norm_topk_prob = true;                   // renormalise the k routing weights
  int64_t decoder_sparse_step = 1;              // layer l is MoE iff (l+1) % step == 0 ...
  std::vector<int64_t> mlp_only_layers;         // ... and l is not listed here
  bool fused_experts = false;  // qwen3_5_moe: mlp.experts.gate_up_proj [E, 2*I_e, H] / down_proj [E, H, I_e]

  // --- Hybrid (qwen3_next, qwen3_5, qwen3_5_moe); layer_types empty for the others ---
  std::vector<LayerType> layer_types;  // [num_hidden_layers]
  int64_t linear_conv_kernel_dim = 0;  // K
  int64_t linear_key_head_dim = 0;     // dk
  int64_t linear_value_head_dim = 0;   // dv
  int64_t linear_num_key_heads = 0;    // nk
  int64_t linear_num_value_heads = 0;  // nv
  bool zero_centered_norms = false;  // layer/final/q/k norms are y = x*r*(1 + w) (Next, 3.5)
  bool gated_attention = false;      // q_proj emits [q | gate] per head (Next, 3.5)
  bool grouped_gdn_projections = false;  // Qwen3-Next in_proj_qkvz / in_proj_ba (else 3.5 split)
  std::vector<int64_t> mrope_section;    // Qwen3.5 [11, 11, 10]; text-only = plain partial RoPE
  // Prefix of the decoder tensors: "model." or Qwen3.5's "model.language_model.".
  std::string weight_prefix = "model.";
  // Multi-token-prediction layers shipped as mtp.* (Qwen3.5 mtp_num_hidden_layers;
  // num_nextn_predict_layers; Qwen3-Next checkpoints say neither and ship one, as vLLM
  // assumes). Loaded only for --speculative-config '{"method": "mtp"}'.
  int64_t mtp_num_hidden_layers = 0;

  int64_t rotary_dim() const { return static_cast<int64_t>(head_dim * partial_rotary_factor); }
  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }

  bool is_moe() const { return num_experts > 0; }
  bool is_hybrid() const { return !layer_types.empty(); }
  bool IsMoeLayer(int64_t layer_idx) const;
  bool IsFullAttentionLayer(int64_t layer_idx) const;
  int64_t num_full_attention_layers() const;
  // GDN sizes: key_dim = nk*dk, value_dim = nv*dv, conv_dim = 2*key_dim + value_dim.
  int64_t linear_key_dim() const { return linear_num_key_heads * linear_key_head_dim; }
  int64_t linear_value_dim() const { return linear_num_value_heads * linear_value_head_dim; }
  int64_t linear_conv_dim() const { return 2 * linear_key_dim() + linear_value_dim(); }
};

// Parses a config.json object. Unsupported model types fail with
// "model type 'X' is not supported yet"; inconsistent sizes fail naming the key.
StatusOr<ModelConfig> ParseModelConfig(const Json& json);

// Reads `dir`/config.json.
StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

// "qwen3 L=28 H=1024 nh=16 nkv=8 hd=128 I=3072 V=151936 tied bf16" for log lines.
std::string ModelConfigSummary(const ModelConfig& config);

}  // namespace pagellm
