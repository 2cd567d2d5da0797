#include "model/config.h"

#include <cmath>

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
  PAGELLM_ASSIGN_OR_RETURN(c.intermediate_size, RequirePositive(json, "intermediate_size"));
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
  if (c.max_position_embeddings <= 0) {
    return InvalidArgumentError("config key 'max_position_embeddings' must be positive");
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
    c.qk_norm = true;
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

}  // namespace

StatusOr<ModelConfig> ParseModelConfig(const Json& json) {
  if (!json.is_object()) return InvalidArgumentError("config.json must hold a JSON object");
  auto type_it = json.find("model_type");
  if (type_it == json.end() || !type_it->is_string()) {
    return InvalidArgumentError("config is missing required key 'model_type'");
  }
  ModelConfig c;
  c.model_type = type_it->get<std::string>();
  if (c.model_type == "qwen2") {
    c.arch = ModelArch::kQwen2;
  } else if (c.model_type == "qwen3") {
    c.arch = ModelArch::kQwen3;
  } else {
    return UnimplementedError(fmt::format("model type '{}' is not supported yet (supported: qwen2, qwen3)",
                                          c.model_type));
  }
  PAGELLM_RETURN_IF_ERROR(ParseSizes(json, c));
  PAGELLM_RETURN_IF_ERROR(ParseRope(json, c));
  PAGELLM_RETURN_IF_ERROR(ParseFlagsAndIds(json, c));
  return c;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  std::string path = dir + "/config.json";
  PAGELLM_ASSIGN_OR_RETURN(Json json, ReadJsonFile(path));
  auto config = ParseModelConfig(json);
  if (!config.ok()) return config.status().WithPrefix(path);
  return config;
}

std::string ModelConfigSummary(const ModelConfig& c) {
  return fmt::format("{} L={} H={} nh={} nkv={} hd={} I={} V={} {} {}", c.model_type, c.num_hidden_layers,
                     c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.intermediate_size,
                     c.vocab_size, c.tie_word_embeddings ? "tied" : "untied", DTypeName(c.torch_dtype));
}

}  // namespace pagellm
