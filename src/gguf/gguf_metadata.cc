#include "gguf/gguf_metadata.h"

#include <map>

#include <fmt/format.h>

namespace pagellm {
namespace {

// Reads a non-negative integer field that must fit uint32 (how gguf-py stores these).
StatusOr<uint32_t> GetU32(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0 ||
      j[key].get<int64_t>() > UINT32_MAX) {
    return InvalidArgumentError(fmt::format("config.json: '{}' must be a non-negative integer", key));
  }
  return static_cast<uint32_t>(j[key].get<int64_t>());
}

uint32_t FileType(GgmlType outtype) {
  switch (outtype) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ4_K: return 15;  // Q4_K_M
    case GgmlType::kQ5_K: return 17;  // Q5_K_M
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kBF16: return 32;
  }
  return 0;
}

// rope_theta and rope scaling live at the top level (legacy) or in rope_parameters.
Status AddRope(const Json& config, const std::string& arch, GgufMetadata* kv) {
  Json rope = config.value("rope_parameters", Json::object());
  if (config.contains("rope_scaling") && config["rope_scaling"].is_object()) rope.update(config["rope_scaling"]);
  double theta = rope.contains("rope_theta") ? rope["rope_theta"].get<double>() : config.value("rope_theta", 10000.0);
  kv->emplace_back(arch + ".rope.freq_base", GgufValue::F32(static_cast<float>(theta)));
  std::string type = rope.value("rope_type", rope.value("type", std::string()));
  if ((type != "linear" && type != "yarn") || !rope.contains("factor")) return OkStatus();
  kv->emplace_back(arch + ".rope.scaling.type", GgufValue::String(type));
  kv->emplace_back(arch + ".rope.scaling.factor", GgufValue::F32(rope["factor"].get<float>()));
  if (type == "linear") return OkStatus();
  PAGELLM_ASSIGN_OR_RETURN(uint32_t orig, GetU32(rope, "original_max_position_embeddings"));
  kv->emplace_back(arch + ".rope.scaling.original_context_length", GgufValue::U32(orig));
  const std::pair<const char*, const char*> optional[] = {
      {"extrapolation_factor", "rope.scaling.yarn_ext_factor"},
      {"attention_factor", "rope.scaling.yarn_attn_factor"},
      {"beta_fast", "rope.scaling.yarn_beta_fast"},
      {"beta_slow", "rope.scaling.yarn_beta_slow"}};
  for (const auto& [hf_key, gguf_key] : optional) {
    if (rope.contains(hf_key) && rope[hf_key].is_number()) {
      kv->emplace_back(arch + "." + gguf_key, GgufValue::F32(rope[hf_key].get<float>()));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::string> GgufArchFromHfConfig(const Json& config) {
  std::string model_type = config.value("model_type", std::string());
  if (model_type == "qwen2" || model_type == "qwen3") return model_type;
  return UnimplementedError(fmt::format("config.json: model_type '{}' cannot be converted to GGUF", model_type));
}

StatusOr<GgufMetadata> BuildGgufModelMetadata(const Json& config, GgmlType outtype, std::string_view name) {
  if (!config.is_object()) return InvalidArgumentError("config.json: not an object");
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, GgufArchFromHfConfig(config));
  GgufMetadata kv;
  kv.emplace_back("general.architecture", GgufValue::String(arch));
  if (!name.empty()) kv.emplace_back("general.name", GgufValue::String(std::string(name)));
  const std::pair<const char*, const char*> required[] = {
      {"num_hidden_layers", "block_count"},   {"max_position_embeddings", "context_length"},
      {"hidden_size", "embedding_length"},    {"intermediate_size", "feed_forward_length"},
      {"num_attention_heads", "attention.head_count"}};
  for (const auto& [hf_key, gguf_key] : required) {
    PAGELLM_ASSIGN_OR_RETURN(uint32_t v, GetU32(config, hf_key));
    kv.emplace_back(arch + "." + gguf_key, GgufValue::U32(v));
  }
  uint32_t kv_heads = 0;
  if (config.contains("num_key_value_heads")) {
    PAGELLM_ASSIGN_OR_RETURN(kv_heads, GetU32(config, "num_key_value_heads"));
  } else {
    PAGELLM_ASSIGN_OR_RETURN(kv_heads, GetU32(config, "num_attention_heads"));
  }
  kv.emplace_back(arch + ".attention.head_count_kv", GgufValue::U32(kv_heads));
  PAGELLM_RETURN_IF_ERROR(AddRope(config, arch, &kv));
  float eps = config.value("rms_norm_eps", 1e-6f);
  kv.emplace_back(arch + ".attention.layer_norm_rms_epsilon", GgufValue::F32(eps));
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    PAGELLM_ASSIGN_OR_RETURN(uint32_t head_dim, GetU32(config, "head_dim"));
    kv.emplace_back(arch + ".attention.key_length", GgufValue::U32(head_dim));
    kv.emplace_back(arch + ".attention.value_length", GgufValue::U32(head_dim));
  }
  kv.emplace_back("general.file_type", GgufValue::U32(FileType(outtype)));
  kv.emplace_back("general.quantization_version", GgufValue::U32(2));
  return kv;
}

}  // namespace pagellm
