#include "model/config.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/mapped_file.h"

namespace pagellm {
namespace {

// Typed accessors: absent or null keys yield nullopt; a key of the wrong type is an
// error naming it, so a typo'd config fails loudly instead of silently defaulting.
StatusOr<std::optional<int64_t>> GetInt(const Json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return std::optional<int64_t>();
  if (!it->is_number_integer()) {
    return InvalidArgumentError(fmt::format("config key '{}' must be an integer, got {}", key, it->dump()));
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

StatusOr<std::optional<double>> GetDouble(const Json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) {
    return InvalidArgumentError(fmt::format("config key '{}' must be a number, got {}", key, it->dump()));
  }
  return std::optional<double>(it->get<double>());
}

StatusOr<std::optional<bool>> GetBool(const Json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) {
    return InvalidArgumentError(fmt::format("config key '{}' must be a boolean, got {}", key, it->dump()));
  }
  return std::optional<bool>(it->get<bool>());
}

StatusOr<int64_t> RequirePositive(const Json& json, const char* key) {
  PAGELLM_ASSIGN_OR_RETURN(std::optional<int64_t> value, GetInt(json, key));
  if (!value) return InvalidArgumentError(fmt::format("config is missing required key '{}'", key));
  if (*value <= 0) return InvalidArgumentError(fmt::format("config key '{}' must be positive, got {}", key, *value));
  return *value;
}

// eos_token_id may be an int or a list of ints.
StatusOr<std::vector<int64_t>> GetIdList(const Json& json, const char* key) {
  std::vector<int64_t> ids;
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return ids;
  if (it->is_number_integer()) {
    ids.push_back(it->get<int64_t>());
    return ids;
  }
  if (!it->is_array()) {
    return InvalidArgumentError(fmt::format("config key '{}' must be an integer or a list, got {}", key, it->dump()));
  }
  for (const Json& id : *it) {
    if (!id.is_number_integer()) {
      return InvalidArgumentError(fmt::format("config key '{}' must list integers, got {}", key, it->dump()));
    }
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

StatusOr<RopeScalingType> ParseRopeType(const std::string& name) {
  if (name == "default" || name.empty()) return RopeScalingType::kNone;
  if (name == "linear") return RopeScalingType::kLinear;
  if (name == "dynamic") return RopeScalingType::kDynamic;
  if (name == "yarn") return RopeScalingType::kYarn;
  return InvalidArgumentError(fmt::format(
      "config key 'rope_scaling.rope_type' has unsupported value '{}' (expected default, linear, dynamic or yarn)",
      name));
}

// Legacy `rope_scaling` ({"type"|"rope_type": ..., "factor": ...}) or the newer
// `rope_parameters` (same fields plus rope_theta / partial_rotary_factor).
Status ParseRopeScaling(const Json& scaling, RopeScaling& out) {
  if (scaling.is_null()) return OkStatus();
  if (!scaling.is_object()) {
    return InvalidArgumentError(fmt::format("config key 'rope_scaling' must be an object, got {}", scaling.dump()));
  }
  std::string type_name;
  for (const char* key : {"rope_type", "type"}) {
    auto it = scaling.find(key);
    if (it != scaling.end() && it->is_string()) {
      type_name = it->get<std::string>();
      break;
    }
  }
  PAGELLM_ASSIGN_OR_RETURN(out.type, ParseRopeType(type_name));
  if (out.type == RopeScalingType::kNone) return OkStatus();
  PAGELLM_ASSIGN_OR_RETURN(std::optional<double> factor, GetDouble(scaling, "factor"));
  if (!factor || *factor < 1.0) {
    return InvalidArgumentError(fmt::format(
        "config key 'rope_scaling.factor' must be a number >= 1 for rope type '{}', got {}", type_name,
        scaling.contains("factor") ? scaling["factor"].dump() : "nothing"));
  }
  out.factor = *factor;
  PAGELLM_ASSIGN_OR_RETURN(auto orig, GetInt(scaling, "original_max_position_embeddings"));
  if (orig && *orig <= 0) {
    return InvalidArgumentError("config key 'rope_scaling.original_max_position_embeddings' must be positive");
  }
  out.original_max_position_embeddings = orig.value_or(0);
  PAGELLM_ASSIGN_OR_RETURN(auto beta_fast, GetDouble(scaling, "beta_fast"));
  PAGELLM_ASSIGN_OR_RETURN(auto beta_slow, GetDouble(scaling, "beta_slow"));
  PAGELLM_ASSIGN_OR_RETURN(out.attention_factor, GetDouble(scaling, "attention_factor"));
  out.beta_fast = beta_fast.value_or(32.0);
  out.beta_slow = beta_slow.value_or(1.0);
  if (out.type == RopeScalingType::kYarn && out.beta_fast <= out.beta_slow) {
    return InvalidArgumentError("config keys 'rope_scaling.beta_fast' must be greater than 'beta_slow'");
  }
  return OkStatus();
}

Status ParseSizes(const Json& json, ModelConfig& c) {
  PAGELLM_ASSIGN_OR_RETURN(c.vocab_size, RequirePositive(json, "vocab_size"));
  PAGELLM_ASSIGN_OR_RETURN(c.hidden_size, RequirePositive(json, "hidden_size"));
  if (c.is_moe() && json.find("intermediate_size") == json.end()) {
    c.intermediate_size = 0;  // Qwen3.5-MoE: no dense MLP (checked against mlp_only_layers later)
  } else {
    PAGELLM_ASSIGN_OR_RETURN(c.intermediate_size, RequirePositive(json, "intermediate_size"));
  }
  PAGELLM_ASSIGN_OR_RETURN(c.num_hidden_layers, RequirePositive(json, "num_hidden_layers"));
  PAGELLM_ASSIGN_OR_RETURN(c.num_attention_heads, RequirePositive(json, "num_attention_heads"));
  PAGELLM_ASSIGN_OR_RETURN(std::optional<int64_t> nkv, GetInt(json, "num_key_value_heads"));
  c.num_key_value_heads = nkv.value_or(c.num_attention_heads);  // HF default: MHA
  if (c.num_key_value_heads <= 0) {
    return InvalidArgumentError(fmt::format("config key 'num_key_value_heads' must be positive, got {}",
                                            c.num_key_value_heads));
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return InvalidArgumentError(fmt::format(
        "config key 'num_attention_heads' ({}) must be a multiple of 'num_key_value_heads' ({})",
        c.num_attention_heads, c.num_key_value_heads));
  }
  PAGELLM_ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, GetInt(json, "head_dim"));
  if (head_dim) {
    c.head_dim = *head_dim;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return InvalidArgumentError(fmt::format(
          "config has no 'head_dim' and 'hidden_size' ({}) is not a multiple of 'num_attention_heads' ({})",
          c.hidden_size, c.num_attention_heads));
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) {
    return InvalidArgumentError(fmt::format("config key 'head_dim' must be positive and even, got {}", c.head_dim));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto max_pos, GetInt(json, "max_position_embeddings"));
  c.max_position_embeddings = max_pos.value_or(c.max_position_embeddings);
  // Positions, max_model_len and token counts are int32 in the engine.
  if (c.max_position_embeddings <= 0 || c.max_position_embeddings > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError(fmt::format("config key 'max_position_embeddings' must be in [1, {}], got {}",
                                            std::numeric_limits<int32_t>::max(), c.max_position_embeddings));
  }
  return OkStatus();
}

Status ParseRope(const Json& json, ModelConfig& c) {
  const Json* params = nullptr;
  if (auto it = json.find("rope_parameters"); it != json.end() && it->is_object()) params = &*it;
  PAGELLM_ASSIGN_OR_RETURN(std::optional<double> theta, GetDouble(json, "rope_theta"));
  if (!theta && params) {
    PAGELLM_ASSIGN_OR_RETURN(theta, GetDouble(*params, "rope_theta"));
  }
  c.rope_theta = theta.value_or(10000.0);
  if (!(c.rope_theta > 1.0)) {
    return InvalidArgumentError(fmt::format("config key 'rope_theta' must be > 1, got {}", c.rope_theta));
  }
  PAGELLM_ASSIGN_OR_RETURN(std::optional<double> partial, GetDouble(json, "partial_rotary_factor"));
  if (!partial && params) {
    PAGELLM_ASSIGN_OR_RETURN(partial, GetDouble(*params, "partial_rotary_factor"));
  }
  c.partial_rotary_factor = partial.value_or(1.0);
  if (!(c.partial_rotary_factor > 0.0 && c.partial_rotary_factor <= 1.0) || c.rotary_dim() % 2 != 0 ||
      c.rotary_dim() == 0) {
    return InvalidArgumentError(fmt::format(
        "config key 'partial_rotary_factor' ({}) must be in (0, 1] and give an even rotary dim (head_dim {})",
        c.partial_rotary_factor, c.head_dim));
  }
  auto legacy = json.find("rope_scaling");
  if (legacy != json.end() && !legacy->is_null()) {
    PAGELLM_RETURN_IF_ERROR(ParseRopeScaling(*legacy, c.rope_scaling));
  } else if (params) {
    PAGELLM_RETURN_IF_ERROR(ParseRopeScaling(*params, c.rope_scaling));
  }
  if (c.rope_scaling.type != RopeScalingType::kNone && c.rope_scaling.original_max_position_embeddings == 0 &&
      c.rope_scaling.type != RopeScalingType::kLinear) {
    c.rope_scaling.original_max_position_embeddings = c.max_position_embeddings;
  }
  return OkStatus();
}

StatusOr<DType> ParseTorchDtype(const Json& json) {
  for (const char* key : {"torch_dtype", "dtype"}) {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) continue;
    if (!it->is_string()) return InvalidArgumentError(fmt::format("config key '{}' must be a string", key));
    std::string name = it->get<std::string>();
    if (name.rfind("torch.", 0) == 0) name = name.substr(6);
    auto dtype = DTypeFromUserName(name);
    if (!dtype.ok()) return dtype.status().WithPrefix(fmt::format("config key '{}'", key));
    return *dtype;
  }
  return DType::kBF16;
}

Status ParseFlagsAndIds(const Json& json, ModelConfig& c) {
  PAGELLM_ASSIGN_OR_RETURN(auto eps, GetDouble(json, "rms_norm_eps"));
  c.rms_norm_eps = eps.value_or(1e-6);
  if (!(c.rms_norm_eps > 0.0 && c.rms_norm_eps < 1.0)) {
    return InvalidArgumentError(fmt::format("config key 'rms_norm_eps' must be in (0, 1), got {}", c.rms_norm_eps));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto tie, GetBool(json, "tie_word_embeddings"));
  c.tie_word_embeddings = tie.value_or(false);
  PAGELLM_ASSIGN_OR_RETURN(auto attention_bias, GetBool(json, "attention_bias"));
  if (c.arch == ModelArch::kQwen2) {  // Qwen2 ignores attention_bias: q/k/v biased, o never.
    c.qkv_bias = true;
    c.o_bias = false;
    c.qk_norm = false;
  } else {
    c.qkv_bias = c.o_bias = attention_bias.value_or(false);
    c.qk_norm = true;  // Qwen3, Qwen3-MoE, and the gated attention of Next / 3.5
  }
  PAGELLM_ASSIGN_OR_RETURN(auto sliding, GetBool(json, "use_sliding_window"));
  c.use_sliding_window = sliding.value_or(false);
  if (c.use_sliding_window) {
    return UnimplementedError("config key 'use_sliding_window' is true; sliding-window attention is not supported");
  }
  if (auto act = json.find("hidden_act"); act != json.end() && act->is_string() && *act != "silu") {
    return UnimplementedError(fmt::format("config key 'hidden_act' is '{}'; only silu is supported",
                                          act->get<std::string>()));
  }
  PAGELLM_ASSIGN_OR_RETURN(c.torch_dtype, ParseTorchDtype(json));
  PAGELLM_ASSIGN_OR_RETURN(auto bos, GetInt(json, "bos_token_id"));
  c.bos_token_id = bos;
  PAGELLM_ASSIGN_OR_RETURN(c.pad_token_id, GetInt(json, "pad_token_id"));
  PAGELLM_ASSIGN_OR_RETURN(c.eos_token_ids, GetIdList(json, "eos_token_id"));
  for (int64_t id : c.eos_token_ids) {
    if (id < 0 || id >= c.vocab_size) {
      return InvalidArgumentError(fmt::format("config key 'eos_token_id' has id {} outside the vocabulary [0, {})",
                                              id, c.vocab_size));
    }
  }
  return OkStatus();
}

StatusOr<ModelArch> ArchFromModelType(const std::string& type) {
  if (type == "qwen2") return ModelArch::kQwen2;
  if (type == "qwen3") return ModelArch::kQwen3;
  if (type == "qwen3_moe") return ModelArch::kQwen3Moe;
  if (type == "qwen3_next") return ModelArch::kQwen3Next;
  if (type == "qwen3_5" || type == "qwen3_5_text") return ModelArch::kQwen3_5;
  if (type == "qwen3_5_moe" || type == "qwen3_5_moe_text") return ModelArch::kQwen3_5Moe;
  return UnimplementedError(fmt::format(
      "model type '{}' is not supported yet (supported: qwen2, qwen3, qwen3_moe, qwen3_next, qwen3_5, qwen3_5_moe)",
      type));
}

// text_config merged over the top level (Qwen3.5). The top-level tie_word_embeddings
// wins: HF's ForConditionalGeneration ties lm_head by the outer config.
Json MergeTextConfig(const Json& json) {
  auto text = json.find("text_config");
  if (text == json.end() || !text->is_object()) return json;
  Json merged = json;
  for (auto it = text->begin(); it != text->end(); ++it) {
    if (it.key() == "model_type") continue;
    if (it.key() == "tie_word_embeddings" && json.contains("tie_word_embeddings")) continue;
    merged[it.key()] = it.value();
  }
  merged.erase("text_config");
  return merged;
}

StatusOr<std::vector<int64_t>> GetIntArray(const Json& json, const char* key) {
  std::vector<int64_t> out;
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return out;
  if (!it->is_array()) return InvalidArgumentError(fmt::format("config key '{}' must be a list", key));
  for (const Json& v : *it) {
    if (!v.is_number_integer()) return InvalidArgumentError(fmt::format("config key '{}' must list integers", key));
    out.push_back(v.get<int64_t>());
  }
  return out;
}

Status ParseMoe(const Json& json, ModelConfig& c) {
  if (c.arch != ModelArch::kQwen3Moe && c.arch != ModelArch::kQwen3Next && c.arch != ModelArch::kQwen3_5Moe) {
    return OkStatus();
  }
  PAGELLM_ASSIGN_OR_RETURN(c.num_experts, RequirePositive(json, "num_experts"));
  PAGELLM_ASSIGN_OR_RETURN(c.num_experts_per_tok, RequirePositive(json, "num_experts_per_tok"));
  PAGELLM_ASSIGN_OR_RETURN(c.moe_intermediate_size, RequirePositive(json, "moe_intermediate_size"));
  if (c.num_experts_per_tok > c.num_experts) {
    return InvalidArgumentError(fmt::format("config key 'num_experts_per_tok' ({}) exceeds 'num_experts' ({})",
                                            c.num_experts_per_tok, c.num_experts));
  }
  if (c.arch != ModelArch::kQwen3Moe) {
    PAGELLM_ASSIGN_OR_RETURN(c.shared_expert_intermediate_size,
                             RequirePositive(json, "shared_expert_intermediate_size"));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto norm_topk, GetBool(json, "norm_topk_prob"));
  // Qwen3.5-MoE's router always renormalises (the key is absent).
  c.norm_topk_prob = c.arch == ModelArch::kQwen3_5Moe ? true : norm_topk.value_or(true);
  PAGELLM_ASSIGN_OR_RETURN(auto step, GetInt(json, "decoder_sparse_step"));
  c.decoder_sparse_step = step.value_or(1);
  if (c.decoder_sparse_step <= 0) return InvalidArgumentError("config key 'decoder_sparse_step' must be positive");
  PAGELLM_ASSIGN_OR_RETURN(c.mlp_only_layers, GetIntArray(json, "mlp_only_layers"));
  c.fused_experts = c.arch == ModelArch::kQwen3_5Moe;
  return OkStatus();
}

Status ParseLayerTypes(const Json& json, ModelConfig& c) {
  auto it = json.find("layer_types");
  if (it != json.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != c.num_hidden_layers) {
      return InvalidArgumentError(fmt::format("config key 'layer_types' must list {} layer types",
                                              c.num_hidden_layers));
    }
    for (const Json& t : *it) {
      if (t == "full_attention") {
        c.layer_types.push_back(LayerType::kFullAttention);
      } else if (t == "linear_attention") {
        c.layer_types.push_back(LayerType::kLinearAttention);
      } else {
        return InvalidArgumentError(fmt::format("config key 'layer_types' has unsupported entry {}", t.dump()));
      }
    }
    return OkStatus();
  }
  PAGELLM_ASSIGN_OR_RETURN(auto interval, GetInt(json, "full_attention_interval"));
  const int64_t n = interval.value_or(4);
  if (n <= 0) return InvalidArgumentError("config key 'full_attention_interval' must be positive");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    c.layer_types.push_back((l + 1) % n == 0 ? LayerType::kFullAttention : LayerType::kLinearAttention);
  }
  return OkStatus();
}

Status ParseHybrid(const Json& json, ModelConfig& c) {
  if (c.arch != ModelArch::kQwen3Next && c.arch != ModelArch::kQwen3_5 && c.arch != ModelArch::kQwen3_5Moe) {
    return OkStatus();
  }
  c.zero_centered_norms = true;
  c.gated_attention = true;
  c.grouped_gdn_projections = c.arch == ModelArch::kQwen3Next;
  if (c.arch != ModelArch::kQwen3Next) c.weight_prefix = "model.language_model.";
  PAGELLM_RETURN_IF_ERROR(ParseLayerTypes(json, c));
  PAGELLM_ASSIGN_OR_RETURN(auto kernel, GetInt(json, "linear_conv_kernel_dim"));
  c.linear_conv_kernel_dim = kernel.value_or(4);
  PAGELLM_ASSIGN_OR_RETURN(c.linear_key_head_dim, RequirePositive(json, "linear_key_head_dim"));
  PAGELLM_ASSIGN_OR_RETURN(c.linear_value_head_dim, RequirePositive(json, "linear_value_head_dim"));
  PAGELLM_ASSIGN_OR_RETURN(c.linear_num_key_heads, RequirePositive(json, "linear_num_key_heads"));
  PAGELLM_ASSIGN_OR_RETURN(c.linear_num_value_heads, RequirePositive(json, "linear_num_value_heads"));
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0) {
    return InvalidArgumentError(fmt::format(
        "config key 'linear_num_value_heads' ({}) must be a multiple of 'linear_num_key_heads' ({})",
        c.linear_num_value_heads, c.linear_num_key_heads));
  }
  if (c.linear_conv_kernel_dim < 1 || c.linear_conv_kernel_dim > 8) {
    return InvalidArgumentError("config key 'linear_conv_kernel_dim' must be in [1, 8]");
  }
  if (auto params = json.find("rope_parameters"); params != json.end() && params->is_object()) {
    PAGELLM_ASSIGN_OR_RETURN(c.mrope_section, GetIntArray(*params, "mrope_section"));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto mtp, GetInt(json, "mtp_num_hidden_layers"));
  if (!mtp.has_value()) {
    PAGELLM_ASSIGN_OR_RETURN(mtp, GetInt(json, "num_nextn_predict_layers"));
  }
  c.mtp_num_hidden_layers = mtp.value_or(c.arch == ModelArch::kQwen3Next ? 1 : 0);
  if (c.mtp_num_hidden_layers < 0 || c.mtp_num_hidden_layers > 8) {
    return InvalidArgumentError("config key 'mtp_num_hidden_layers' must be in [0, 8]");
  }
  return OkStatus();
}

// Dense MLP layers of an MoE model need intermediate_size.
Status CheckMoeLayers(const ModelConfig& c) {
  if (!c.is_moe()) return OkStatus();
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (!c.IsMoeLayer(l) && c.intermediate_size <= 0) {
      return InvalidArgumentError(fmt::format(
          "layer {} has a dense MLP (mlp_only_layers / decoder_sparse_step) but 'intermediate_size' is missing", l));
    }
  }
  for (int64_t l : c.mlp_only_layers) {
    if (l < 0 || l >= c.num_hidden_layers) {
      return InvalidArgumentError(fmt::format("config key 'mlp_only_layers' lists layer {} of {}", l,
                                              c.num_hidden_layers));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<ModelConfig> ParseModelConfig(const Json& json) {
  if (!json.is_object()) return InvalidArgumentError("config.json must hold a JSON object");
  auto type_it = json.find("model_type");
  if (type_it == json.end() || !type_it->is_string()) {
    return InvalidArgumentError("config is missing required key 'model_type'");
  }
  ModelConfig c;
  c.model_type = type_it->get<std::string>();
  PAGELLM_ASSIGN_OR_RETURN(c.arch, ArchFromModelType(c.model_type));
  // Qwen3.5 multimodal wrapper: the text keys live in text_config.
  const Json merged = MergeTextConfig(json);
  PAGELLM_RETURN_IF_ERROR(ParseMoe(merged, c));
  PAGELLM_RETURN_IF_ERROR(ParseSizes(merged, c));
  PAGELLM_RETURN_IF_ERROR(ParseRope(merged, c));
  PAGELLM_RETURN_IF_ERROR(ParseFlagsAndIds(merged, c));
  PAGELLM_RETURN_IF_ERROR(ParseHybrid(merged, c));
  PAGELLM_RETURN_IF_ERROR(CheckMoeLayers(c));
  return c;
}

bool ModelConfig::IsMoeLayer(int64_t l) const {
  if (!is_moe()) return false;
  for (int64_t x : mlp_only_layers) {
    if (x == l) return false;
  }
  return (l + 1) % decoder_sparse_step == 0;
}

bool ModelConfig::IsFullAttentionLayer(int64_t l) const {
  return layer_types.empty() || layer_types[static_cast<size_t>(l)] == LayerType::kFullAttention;
}

int64_t ModelConfig::num_full_attention_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_hidden_layers; ++l) n += IsFullAttentionLayer(l) ? 1 : 0;
  return n;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  std::string path = dir + "/config.json";
  PAGELLM_ASSIGN_OR_RETURN(Json json, ReadJsonFile(path));
  auto config = ParseModelConfig(json);
  if (!config.ok()) return config.status().WithPrefix(path);
  return config;
}

std::string ModelConfigSummary(const ModelConfig& c) {
  std::string s = fmt::format("{} L={} H={} nh={} nkv={} hd={} I={} V={} {} {}", c.model_type, c.num_hidden_layers,
                              c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                              c.intermediate_size, c.vocab_size, c.tie_word_embeddings ? "tied" : "untied",
                              DTypeName(c.torch_dtype));
  if (c.is_moe()) {
    s += fmt::format(" E={} k={} I_e={}", c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size);
    if (c.shared_expert_intermediate_size > 0) s += fmt::format(" I_s={}", c.shared_expert_intermediate_size);
  }
  if (c.is_hybrid()) {
    s += fmt::format(" gdn={}/{} nk/nv={}/{} dk/dv={}/{}", c.num_hidden_layers - c.num_full_attention_layers(),
                     c.num_hidden_layers, c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim,
                     c.linear_value_head_dim);
  }
  return s;
}

}  // namespace pagellm
