// ModelConfig: every config.json key that changes the math of a Qwen model.
//
//   PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig("/models/qwen3-0.6b"));
//
// See docs/qwen-architectures.md §1 for what each key does. Qwen3.5 nests its text
// keys in `text_config`; the parser merges them over the top level.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "tensor/dtype.h"

namespace pagellm {

enum class ModelArch { kQwen2, kQwen3 };

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
  std::string model_type;  // "qwen2", "qwen3"
  ModelArch arch = ModelArch::kQwen3;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
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

  int64_t rotary_dim() const { return static_cast<int64_t>(head_dim * partial_rotary_factor); }
  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
};

// Parses a config.json object. Unsupported model types fail with
// "model type 'X' is not supported yet"; inconsistent sizes fail naming the key.
StatusOr<ModelConfig> ParseModelConfig(const Json& json);

// Reads `dir`/config.json.
StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

// "qwen3 L=28 H=1024 nh=16 nkv=8 hd=128 I=3072 V=151936 tied bf16" for log lines.
std::string ModelConfigSummary(const ModelConfig& config);

}  // namespace pagellm
