#include "model/gguf_config.h"

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

namespace pagellm {
namespace {

// Copies integer key `gguf_key` into json[hf_key]; absent keys are skipped unless required.
Status CopyInt(const GgufFile& gguf, const std::string& gguf_key, const char* hf_key, bool required, Json& json) {
  if (gguf.Find(gguf_key) == nullptr) {
    if (!required) return OkStatus();
    return InvalidArgumentError(fmt::format("{}: GGUF metadata is missing required key '{}'", gguf.what(), gguf_key));
  }
  PAGELLM_ASSIGN_OR_RETURN(int64_t v, gguf.GetInt(gguf_key));
  json[hf_key] = v;
  return OkStatus();
}

Status CopyDouble(const GgufFile& gguf, const std::string& gguf_key, const char* hf_key, Json& json) {
  if (gguf.Find(gguf_key) == nullptr) return OkStatus();
  PAGELLM_ASSIGN_OR_RETURN(double v, gguf.GetDouble(gguf_key));
  json[hf_key] = v;
  return OkStatus();
}

// {arch}.rope.scaling.* (and the legacy {arch}.rope.scale_linear) -> config.json rope_scaling.
Status AddRopeScaling(const GgufFile& gguf, const std::string& arch, Json& json) {
  std::string type = "none";
  double factor = 0.0;
  if (gguf.Find(arch + ".rope.scaling.type") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(type, gguf.GetString(arch + ".rope.scaling.type"));
  }
  if (gguf.Find(arch + ".rope.scaling.factor") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(factor, gguf.GetDouble(arch + ".rope.scaling.factor"));
  } else if (gguf.Find(arch + ".rope.scale_linear") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(factor, gguf.GetDouble(arch + ".rope.scale_linear"));
    type = "linear";
  }
  if (type == "none" || factor == 0.0 || factor == 1.0) return OkStatus();
  if (type != "linear" && type != "yarn") {
    return UnimplementedError(fmt::format("{}: rope scaling type '{}' is not supported (linear, yarn)", gguf.what(), type));
  }
  Json scaling = {{"rope_type", type}, {"factor", factor}};
  PAGELLM_RETURN_IF_ERROR(
      CopyInt(gguf, arch + ".rope.scaling.original_context_length", "original_max_position_embeddings", false, scaling));
  PAGELLM_RETURN_IF_ERROR(CopyDouble(gguf, arch + ".rope.scaling.yarn_beta_fast", "beta_fast", scaling));
  PAGELLM_RETURN_IF_ERROR(CopyDouble(gguf, arch + ".rope.scaling.yarn_beta_slow", "beta_slow", scaling));
  PAGELLM_RETURN_IF_ERROR(CopyDouble(gguf, arch + ".rope.scaling.yarn_attn_factor", "attention_factor", scaling));
  json["rope_scaling"] = scaling;
  return OkStatus();
}

// torch_dtype for `--dtype auto`: the float type of the embedding; quantized files -> bf16.
std::string AutoDtypeName(const GgufTensorInfo& embd) {
  switch (embd.type) {
    case GgmlType::kF32: return "float32";
    case GgmlType::kF16: return "float16";
    default: return "bfloat16";
  }
}

Status AddTensorFacts(const GgufFile& gguf, const std::string& arch, Json& json) {
  const GgufTensorInfo* embd = gguf.FindTensor("token_embd.weight");
  if (embd == nullptr || embd->ne.size() != 2) {
    return InvalidArgumentError(fmt::format("{}: no 2-D tensor 'token_embd.weight'", gguf.what()));
  }
  json["vocab_size"] = embd->ne[1];
  json["torch_dtype"] = AutoDtypeName(*embd);
  json["tie_word_embeddings"] = gguf.FindTensor("output.weight") == nullptr;
  if (arch == "qwen3") json["attention_bias"] = gguf.FindTensor("blk.0.attn_q.bias") != nullptr;
  // head_dim for partial rotary: rope.dimension_count counts the rotated dims.
  if (gguf.Find(arch + ".rope.dimension_count") != nullptr && json.contains("head_dim")) {
    PAGELLM_ASSIGN_OR_RETURN(int64_t rot, gguf.GetInt(arch + ".rope.dimension_count"));
    int64_t head_dim = json["head_dim"].get<int64_t>();
    if (rot != head_dim) json["partial_rotary_factor"] = static_cast<double>(rot) / static_cast<double>(head_dim);
  }
  return OkStatus();
}

// The layer types llama.cpp derives: attention.recurrent_layers if present, else
// full_attention_interval (default 4).
Status AddLayerTypes(const GgufFile& gguf, const std::string& arch, int64_t num_layers, Json& json) {
  Json types = Json::array();
  if (gguf.Find(arch + ".attention.recurrent_layers") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(std::vector<int64_t> recurrent, gguf.GetIntArray(arch + ".attention.recurrent_layers"));
    if (static_cast<int64_t>(recurrent.size()) < num_layers) {
      return InvalidArgumentError(fmt::format("{}: attention.recurrent_layers lists {} of {} layers", gguf.what(),
                                              recurrent.size(), num_layers));
    }
    for (int64_t l = 0; l < num_layers; ++l) types.push_back(recurrent[l] ? "linear_attention" : "full_attention");
  } else {
    int64_t interval = 4;
    if (gguf.Find(arch + ".full_attention_interval") != nullptr) {
      PAGELLM_ASSIGN_OR_RETURN(interval, gguf.GetInt(arch + ".full_attention_interval"));
    }
    if (interval <= 0) return InvalidArgumentError(fmt::format("{}: full_attention_interval must be positive", gguf.what()));
    for (int64_t l = 0; l < num_layers; ++l) types.push_back((l + 1) % interval == 0 ? "full_attention" : "linear_attention");
  }
  json["layer_types"] = types;
  return OkStatus();
}

// qwen3next / qwen35 / qwen35moe keys (gguf/gguf_metadata.h lists them) -> config.json keys.
// block_count includes the nextn_predict_layers multi-token-prediction blocks: they are the
// config's mtp_num_hidden_layers, 0 when the key is absent (a Qwen3-Next config.json without
// the key implies one, but a file converted --no-mtp has none).
Status AddHybridConfig(const GgufFile& gguf, const std::string& arch, Json& json) {
  json["model_type"] = arch == "qwen3next" ? "qwen3_next" : arch == "qwen35" ? "qwen3_5_text" : "qwen3_5_moe_text";
  int64_t nextn = 0;
  if (gguf.Find(arch + ".nextn_predict_layers") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(nextn, gguf.GetInt(arch + ".nextn_predict_layers"));
    const int64_t blocks = json["num_hidden_layers"].get<int64_t>();
    if (nextn < 0 || nextn >= blocks) {
      return InvalidArgumentError(fmt::format("{}: nextn_predict_layers {} does not fit block_count {}", gguf.what(),
                                              nextn, blocks));
    }
    json["num_hidden_layers"] = blocks - nextn;
  }
  json["mtp_num_hidden_layers"] = nextn;
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".ssm.conv_kernel", "linear_conv_kernel_dim", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".ssm.state_size", "linear_key_head_dim", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".ssm.group_count", "linear_num_key_heads", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".ssm.time_step_rank", "linear_num_value_heads", true, json));
  PAGELLM_ASSIGN_OR_RETURN(int64_t inner, gguf.GetInt(arch + ".ssm.inner_size"));
  const int64_t nv = json["linear_num_value_heads"].get<int64_t>();
  if (nv <= 0 || inner % nv != 0) {
    return InvalidArgumentError(fmt::format("{}: ssm.inner_size {} is not a multiple of ssm.time_step_rank {}",
                                            gguf.what(), inner, nv));
  }
  json["linear_value_head_dim"] = inner / nv;
  PAGELLM_RETURN_IF_ERROR(AddLayerTypes(gguf, arch, json["num_hidden_layers"].get<int64_t>(), json));
  if (arch == "qwen3next" || arch == "qwen35moe") {
    PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".expert_count", "num_experts", true, json));
    PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".expert_used_count", "num_experts_per_tok", true, json));
    PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".expert_feed_forward_length", "moe_intermediate_size", true, json));
    PAGELLM_RETURN_IF_ERROR(
        CopyInt(gguf, arch + ".expert_shared_feed_forward_length", "shared_expert_intermediate_size", true, json));
    json["norm_topk_prob"] = true;  // llama.cpp's qwen3next / qwen35moe graphs renormalise
  }
  if (gguf.Find(arch + ".rope.dimension_sections") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(std::vector<int64_t> sections, gguf.GetIntArray(arch + ".rope.dimension_sections"));
    if (sections.size() > 3) sections.resize(3);
    json["rope_parameters"] = {{"mrope_section", sections}};
  }
  return OkStatus();
}

// llama.cpp's qwen3moe graph: softmax routing over expert_count, the top expert_used_count
// weights renormalised (build_moe_ffn's norm_w), every layer MoE.
Status AddQwen3MoeConfig(const GgufFile& gguf, const std::string& arch, Json& json) {
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".expert_count", "num_experts", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".expert_used_count", "num_experts_per_tok", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".expert_feed_forward_length", "moe_intermediate_size", true, json));
  json["norm_topk_prob"] = true;
  json["decoder_sparse_step"] = 1;
  json["mlp_only_layers"] = Json::array();
  return OkStatus();
}

}  // namespace

StatusOr<Json> HfConfigJsonFromGguf(const GgufFile& gguf) {
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, gguf.GetString("general.architecture"));
  const bool hybrid = arch == "qwen3next" || arch == "qwen35" || arch == "qwen35moe";
  if (arch != "qwen2" && arch != "qwen3" && arch != "qwen3moe" && !hybrid) {
    return UnimplementedError(fmt::format(
        "{}: GGUF architecture '{}' is not supported (qwen2, qwen3, qwen3moe, qwen3next, qwen35, qwen35moe)",
        gguf.what(), arch));
  }
  Json json = {{"model_type", arch == "qwen3moe" ? std::string("qwen3_moe") : arch}};
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".block_count", "num_hidden_layers", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".embedding_length", "hidden_size", true, json));
  PAGELLM_RETURN_IF_ERROR(
      CopyInt(gguf, arch + ".feed_forward_length", "intermediate_size", arch != "qwen35moe" && arch != "qwen3moe",
              json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".attention.head_count", "num_attention_heads", true, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".attention.head_count_kv", "num_key_value_heads", false, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".context_length", "max_position_embeddings", false, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, arch + ".attention.key_length", "head_dim", false, json));
  if (json.contains("head_dim") && gguf.Find(arch + ".attention.value_length") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(int64_t value_length, gguf.GetInt(arch + ".attention.value_length"));
    if (value_length != json["head_dim"].get<int64_t>()) {
      return UnimplementedError(fmt::format("{}: attention.value_length {} != key_length {} is not supported",
                                            gguf.what(), value_length, json["head_dim"].dump()));
    }
  }
  PAGELLM_RETURN_IF_ERROR(CopyDouble(gguf, arch + ".rope.freq_base", "rope_theta", json));
  PAGELLM_RETURN_IF_ERROR(CopyDouble(gguf, arch + ".attention.layer_norm_rms_epsilon", "rms_norm_eps", json));
  PAGELLM_RETURN_IF_ERROR(AddRopeScaling(gguf, arch, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, "tokenizer.ggml.bos_token_id", "bos_token_id", false, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, "tokenizer.ggml.eos_token_id", "eos_token_id", false, json));
  PAGELLM_RETURN_IF_ERROR(CopyInt(gguf, "tokenizer.ggml.padding_token_id", "pad_token_id", false, json));
  if (hybrid) PAGELLM_RETURN_IF_ERROR(AddHybridConfig(gguf, arch, json));
  if (arch == "qwen3moe") PAGELLM_RETURN_IF_ERROR(AddQwen3MoeConfig(gguf, arch, json));
  PAGELLM_RETURN_IF_ERROR(AddTensorFacts(gguf, arch, json));
  return json;
}

StatusOr<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf) {
  PAGELLM_ASSIGN_OR_RETURN(Json json, HfConfigJsonFromGguf(gguf));
  StatusOr<ModelConfig> config = ParseModelConfig(json);
  if (!config.ok()) {
    return InvalidArgumentError(fmt::format("{}: {} (metadata read as config {})", gguf.what(),
                                            config.status().message(), json.dump()));
  }
  // qwen35moe files stack gate and up experts apart (ffn_gate_exps, ffn_up_exps): bound one
  // linear per expert, each is a contiguous slice of the file, used in place even when
  // k-quantized (the fused [E, 2 I, H] layout would interleave the two stacks into a copy).
  config->fused_experts = false;
  return config;
}

std::vector<int32_t> GgufEndOfGenerationIds(const GgufFile& gguf) {
  // llama.cpp's llama_vocab::impl::load adds these texts to its end-of-generation set.
  // NOTE: llama.cpp matches these texts whatever the token type, which also catches
  // ordinary BPE tokens that merely spell one (Qwen's vocab has a normal "</s>", id 128247,
  // which HF never stops on); only control/user-defined tokens count here.
  static const std::set<std::string, std::less<>> kEndTexts = {
      "<|eot_id|>", "<|im_end|>",      "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
      "<|endoftext|>", "</s>",         "<|eom_id|>", "<EOT>",   "_<EOT>",   "[EOT]",     "[EOS]",     "<|end_of_text|>",
      "<end_of_utterance>", "<eos>",   "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["};
  std::set<int32_t> ids;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    StatusOr<int64_t> id = gguf.GetInt(key);
    if (id.ok() && *id >= 0 && *id <= INT32_MAX) ids.insert(static_cast<int32_t>(*id));
  }
  StatusOr<std::vector<std::string>> tokens = gguf.GetStringArray("tokenizer.ggml.tokens");
  StatusOr<std::vector<int64_t>> types = gguf.GetIntArray("tokenizer.ggml.token_type");
  if (tokens.ok() && types.ok() && types->size() == tokens->size()) {
    for (size_t i = 0; i < tokens->size(); ++i) {
      bool added = (*types)[i] == 3 || (*types)[i] == 4;  // control or user-defined
      if (added && kEndTexts.count((*tokens)[i]) != 0) ids.insert(static_cast<int32_t>(i));
    }
  }
  return {ids.begin(), ids.end()};
}

GenerationConfig GenerationConfigFromGguf(const GgufFile& gguf) {
  GenerationConfig gen;
  std::vector<int32_t> ids = GgufEndOfGenerationIds(gguf);
  StatusOr<int64_t> eos = gguf.GetInt("tokenizer.ggml.eos_token_id");
  if (eos.ok()) {  // the file's eos first, as generation_config.json lists it first
    auto it = std::find(ids.begin(), ids.end(), static_cast<int32_t>(*eos));
    if (it != ids.end()) std::rotate(ids.begin(), it, it + 1);
  }
  gen.eos_token_ids = std::move(ids);
  StatusOr<int64_t> bos = gguf.GetInt("tokenizer.ggml.bos_token_id");
  if (bos.ok() && *bos >= 0 && *bos <= INT32_MAX) gen.bos_token_id = static_cast<int32_t>(*bos);
  return gen;
}

}  // namespace pagellm
