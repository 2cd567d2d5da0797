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
    case GgmlType::kQ5_0: return 8;     // LLAMA_FTYPE_MOSTLY_Q5_0
    case GgmlType::kQ4_1: return 3;     // LLAMA_FTYPE_MOSTLY_Q4_1
    case GgmlType::kQ5_1: return 9;     // LLAMA_FTYPE_MOSTLY_Q5_1
    case GgmlType::kIQ4_NL: return 25;  // LLAMA_FTYPE_MOSTLY_IQ4_NL
    case GgmlType::kIQ4_XS: return 30;  // LLAMA_FTYPE_MOSTLY_IQ4_XS
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

void AddU32IfPresent(const Json& config, const char* hf_key, const std::string& gguf_key, GgufMetadata* kv) {
  if (config.contains(hf_key) && config[hf_key].is_number_integer()) {
    kv->emplace_back(gguf_key, GgufValue::U32(static_cast<uint32_t>(config[hf_key].get<int64_t>())));
  }
}

// Qwen3NextModel / _Qwen35MRopeMixin.set_gguf_parameters: expert sizes, GDN (ssm.*) sizes,
// full_attention_interval, the partial rotary dims and (qwen35*) the MRoPE sections. The
// nextn key comes where _QwenMtpMixin adds it: after Qwen2MoeModel's expert sizes, before
// Qwen3NextModel's ssm.* keys.
Status AddHybridKeys(const Json& config, const std::string& arch, int64_t nextn, GgufMetadata* kv) {
  AddU32IfPresent(config, "moe_intermediate_size", arch + ".expert_feed_forward_length", kv);
  AddU32IfPresent(config, "shared_expert_intermediate_size", arch + ".expert_shared_feed_forward_length", kv);
  if (nextn > 0) kv->emplace_back(arch + ".nextn_predict_layers", GgufValue::U32(static_cast<uint32_t>(nextn)));
  PAGELLM_ASSIGN_OR_RETURN(uint32_t kernel, GetU32(config, "linear_conv_kernel_dim"));
  PAGELLM_ASSIGN_OR_RETURN(uint32_t dk, GetU32(config, "linear_key_head_dim"));
  PAGELLM_ASSIGN_OR_RETURN(uint32_t dv, GetU32(config, "linear_value_head_dim"));
  PAGELLM_ASSIGN_OR_RETURN(uint32_t nk, GetU32(config, "linear_num_key_heads"));
  PAGELLM_ASSIGN_OR_RETURN(uint32_t nv, GetU32(config, "linear_num_value_heads"));
  if (dk != dv) {
    return UnimplementedError(fmt::format("config.json: linear_key_head_dim {} != linear_value_head_dim {} "
                                          "(llama.cpp's {} reads both from ssm.state_size)", dk, dv, arch));
  }
  kv->emplace_back(arch + ".ssm.conv_kernel", GgufValue::U32(kernel));
  kv->emplace_back(arch + ".ssm.state_size", GgufValue::U32(dk));
  kv->emplace_back(arch + ".ssm.group_count", GgufValue::U32(nk));
  kv->emplace_back(arch + ".ssm.time_step_rank", GgufValue::U32(nv));
  kv->emplace_back(arch + ".ssm.inner_size", GgufValue::U32(dv * nv));
  const int64_t interval = config.value("full_attention_interval", int64_t{4});
  if (interval <= 0) return InvalidArgumentError("config.json: full_attention_interval must be positive");
  // llama.cpp derives the layer types from the interval: refuse layer_types it cannot express.
  if (config.contains("layer_types") && config["layer_types"].is_array()) {
    const Json& types = config["layer_types"];
    for (size_t l = 0; l < types.size(); ++l) {
      const bool full = (static_cast<int64_t>(l) + 1) % interval == 0;
      if ((types[l] == "full_attention") != full) {
        return UnimplementedError(fmt::format(
            "config.json: layer_types[{}] is {} but full_attention_interval {} implies otherwise", l,
            types[l].dump(), interval));
      }
    }
  }
  kv->emplace_back(arch + ".full_attention_interval", GgufValue::U32(static_cast<uint32_t>(interval)));
  Json rope = config.value("rope_parameters", Json::object());
  if (!rope.is_object()) rope = Json::object();
  const double partial = rope.value("partial_rotary_factor", config.value("partial_rotary_factor", 0.25));
  PAGELLM_ASSIGN_OR_RETURN(uint32_t head_dim, GetU32(config, "head_dim"));
  kv->emplace_back(arch + ".rope.dimension_count", GgufValue::U32(static_cast<uint32_t>(head_dim * partial)));
  if (arch != "qwen3next" && !rope.contains("mrope_section")) {
    kv->emplace_back(arch + ".rope.dimension_sections", GgufValue::I32Array({11, 11, 10, 0}));
  }
  return OkStatus();
}

// TextModel.set_gguf_parameters' MRoPE sections (padded to 4) and expert counts.
Status AddSectionsAndExperts(const Json& config, const std::string& arch, GgufMetadata* kv) {
  Json rope = config.value("rope_parameters", Json::object());
  if (rope.is_object() && rope.contains("mrope_section") && rope["mrope_section"].is_array()) {
    std::vector<int32_t> sections;
    for (const Json& v : rope["mrope_section"]) sections.push_back(v.get<int32_t>());
    while (sections.size() < 4) sections.push_back(0);
    sections.resize(4);
    kv->emplace_back(arch + ".rope.dimension_sections", GgufValue::I32Array(sections));
  }
  return OkStatus();
}

}  // namespace

Json MergedHfTextConfig(const Json& config) {
  if (!config.is_object() || !config.contains("text_config") || !config["text_config"].is_object()) return config;
  Json merged = config;
  for (auto it = config["text_config"].begin(); it != config["text_config"].end(); ++it) {
    if (it.key() == "model_type") continue;
    if (it.key() == "tie_word_embeddings" && config.contains("tie_word_embeddings")) continue;
    merged[it.key()] = it.value();
  }
  merged.erase("text_config");
  return merged;
}

StatusOr<std::string> GgufArchFromHfConfig(const Json& config) {
  std::string model_type = config.value("model_type", std::string());
  if (model_type == "qwen2" || model_type == "qwen3") return model_type;
  if (model_type == "qwen3_moe") return std::string("qwen3moe");
  if (model_type == "qwen3_next") return std::string("qwen3next");
  if (model_type == "qwen3_5" || model_type == "qwen3_5_text") return std::string("qwen35");
  if (model_type == "qwen3_5_moe" || model_type == "qwen3_5_moe_text") return std::string("qwen35moe");
  return UnimplementedError(fmt::format("config.json: model_type '{}' cannot be converted to GGUF", model_type));
}

StatusOr<GgufMetadata> BuildGgufModelMetadata(const Json& original_config, GgmlType outtype, std::string_view name,
                                              int64_t nextn_predict_layers) {
  if (!original_config.is_object()) return InvalidArgumentError("config.json: not an object");
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, GgufArchFromHfConfig(original_config));
  const bool hybrid = arch == "qwen3next" || arch == "qwen35" || arch == "qwen35moe";
  if (nextn_predict_layers < 0 || nextn_predict_layers > UINT32_MAX || (nextn_predict_layers > 0 && !hybrid)) {
    return InvalidArgumentError(fmt::format("{} multi-token-prediction layers cannot be written for architecture {}",
                                            nextn_predict_layers, arch));
  }
  const bool experts = hybrid || arch == "qwen3moe";
  const Json config = MergedHfTextConfig(original_config);
  GgufMetadata kv;
  kv.emplace_back("general.architecture", GgufValue::String(arch));
  if (!name.empty()) kv.emplace_back("general.name", GgufValue::String(std::string(name)));
  const std::pair<const char*, const char*> required[] = {
      {"num_hidden_layers", "block_count"},   {"max_position_embeddings", "context_length"},
      {"hidden_size", "embedding_length"},    {"intermediate_size", "feed_forward_length"},
      {"num_attention_heads", "attention.head_count"}};
  for (const auto& [hf_key, gguf_key] : required) {
    // Qwen3.5-MoE has no dense FFN: the converter writes feed_forward_length only if present.
    if (hybrid && !config.contains(hf_key) && std::string_view(hf_key) == "intermediate_size") continue;
    PAGELLM_ASSIGN_OR_RETURN(uint32_t v, GetU32(config, hf_key));
    // The MTP blocks follow the decoder layers (TextModel writes _QwenMtpMixin's block_count).
    if (std::string_view(gguf_key) == "block_count") v += static_cast<uint32_t>(nextn_predict_layers);
    kv.emplace_back(arch + "." + gguf_key, GgufValue::U32(v));
  }
  uint32_t kv_heads = 0;
  if (config.contains("num_key_value_heads")) {
    PAGELLM_ASSIGN_OR_RETURN(kv_heads, GetU32(config, "num_key_value_heads"));
  } else {
    PAGELLM_ASSIGN_OR_RETURN(kv_heads, GetU32(config, "num_attention_heads"));
  }
  kv.emplace_back(arch + ".attention.head_count_kv", GgufValue::U32(kv_heads));
  if (hybrid) PAGELLM_RETURN_IF_ERROR(AddSectionsAndExperts(config, arch, &kv));
  PAGELLM_RETURN_IF_ERROR(AddRope(config, arch, &kv));
  float eps = config.value("rms_norm_eps", 1e-6f);
  kv.emplace_back(arch + ".attention.layer_norm_rms_epsilon", GgufValue::F32(eps));
  if (experts) {
    AddU32IfPresent(config, "num_experts", arch + ".expert_count", &kv);
    AddU32IfPresent(config, "num_experts_per_tok", arch + ".expert_used_count", &kv);
  }
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    PAGELLM_ASSIGN_OR_RETURN(uint32_t head_dim, GetU32(config, "head_dim"));
    kv.emplace_back(arch + ".attention.key_length", GgufValue::U32(head_dim));
    kv.emplace_back(arch + ".attention.value_length", GgufValue::U32(head_dim));
  }
  kv.emplace_back("general.file_type", GgufValue::U32(FileType(outtype)));
  if (arch == "qwen3moe") {
    // llama.cpp's qwen3moe graph always renormalises the top-k routing weights.
    const Json norm_topk = config.value("norm_topk_prob", Json(true));
    if (norm_topk.is_boolean() && !norm_topk.get<bool>()) {
      return UnimplementedError("config.json: norm_topk_prob false cannot be written as qwen3moe "
                                "(llama.cpp renormalises the routing weights)");
    }
    // Qwen2MoeModel.set_gguf_parameters (Qwen3MoeModel's parent): the expert FFN width.
    AddU32IfPresent(config, "moe_intermediate_size", arch + ".expert_feed_forward_length", &kv);
  }
  if (hybrid) PAGELLM_RETURN_IF_ERROR(AddHybridKeys(config, arch, nextn_predict_layers, &kv));
  kv.emplace_back("general.quantization_version", GgufValue::U32(2));
  return kv;
}

}  // namespace pagellm
