#include "model/generation_config.h"

#include <filesystem>

#include <fmt/format.h>

namespace pagellm {
namespace {

template <typename T>
Status ReadNumber(const Json& json, const char* key, std::optional<T>& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return OkStatus();
  bool ok = std::is_integral_v<T> ? it->is_number_integer() : it->is_number();
  if (!ok) {
    return InvalidArgumentError(
        fmt::format("generation_config key '{}' must be {}, got {}", key,
                    std::is_integral_v<T> ? "an integer" : "a number", it->dump()));
  }
  out = it->get<T>();
  return OkStatus();
}

Status ReadIdList(const Json& json, const char* key, std::vector<int32_t>& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return OkStatus();
  if (it->is_number_integer()) {
    out.push_back(it->get<int32_t>());
    return OkStatus();
  }
  if (it->is_array()) {
    for (const Json& id : *it) {
      if (!id.is_number_integer()) break;
      out.push_back(id.get<int32_t>());
    }
    if (out.size() == it->size()) return OkStatus();
  }
  return InvalidArgumentError(
      fmt::format("generation_config key '{}' must be an integer or a list of integers, got {}", key, it->dump()));
}

}  // namespace

StatusOr<GenerationConfig> ParseGenerationConfig(const Json& json) {
  if (!json.is_object()) return InvalidArgumentError("generation_config.json must hold a JSON object");
  GenerationConfig gen;
  gen.loaded = true;
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "temperature", gen.temperature));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "top_p", gen.top_p));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "top_k", gen.top_k));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "min_p", gen.min_p));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "repetition_penalty", gen.repetition_penalty));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "presence_penalty", gen.presence_penalty));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "max_new_tokens", gen.max_new_tokens));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "bos_token_id", gen.bos_token_id));
  PAGELLM_RETURN_IF_ERROR(ReadNumber(json, "pad_token_id", gen.pad_token_id));
  PAGELLM_RETURN_IF_ERROR(ReadIdList(json, "eos_token_id", gen.eos_token_ids));
  if (auto it = json.find("do_sample"); it != json.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return InvalidArgumentError(fmt::format("generation_config key 'do_sample' must be a boolean, got {}", it->dump()));
    }
    gen.do_sample = it->get<bool>();
  }
  if (gen.temperature && *gen.temperature < 0.0f) {
    return InvalidArgumentError(fmt::format("generation_config key 'temperature' must be >= 0, got {}", *gen.temperature));
  }
  if (gen.top_p && !(*gen.top_p > 0.0f && *gen.top_p <= 1.0f)) {
    return InvalidArgumentError(fmt::format("generation_config key 'top_p' must be in (0, 1], got {}", *gen.top_p));
  }
  return gen;
}

StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& dir) {
  std::string path = dir + "/generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return GenerationConfig{};
  PAGELLM_ASSIGN_OR_RETURN(Json json, ReadJsonFile(path));
  auto gen = ParseGenerationConfig(json);
  if (!gen.ok()) return gen.status().WithPrefix(path);
  return gen;
}

void ApplyGenerationDefaults(const GenerationConfig& gen, SamplingParams& params) {
  if (!params.temperature) {
    if (gen.do_sample.has_value() && !*gen.do_sample) {
      params.temperature = 0.0f;
    } else if (gen.temperature) {
      params.temperature = gen.temperature;
    }
  }
  if (!params.top_p && gen.top_p) params.top_p = gen.top_p;
  if (!params.top_k && gen.top_k) params.top_k = gen.top_k;
  if (!params.min_p && gen.min_p) params.min_p = gen.min_p;
  if (!params.repetition_penalty && gen.repetition_penalty) params.repetition_penalty = gen.repetition_penalty;
  if (!params.max_tokens && gen.max_new_tokens) params.max_tokens = gen.max_new_tokens;
}

}  // namespace pagellm
