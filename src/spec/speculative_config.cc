#include "spec/speculative_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace pagellm {
namespace {

StatusOr<int32_t> IntField(const nlohmann::json& j, const char* key, int32_t lo, int32_t hi) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer()) {
    return InvalidArgumentError(fmt::format("--speculative-config: \"{}\" must be an integer", key));
  }
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return InvalidArgumentError(fmt::format("--speculative-config: \"{}\" must be in [{}, {}], got {}", key, lo, hi, x));
  }
  return static_cast<int32_t>(x);
}

}  // namespace

std::string SpeculativeConfig::Describe() const {
  if (!enabled()) return "off";
  std::string s = method == "draft_model"
                      ? fmt::format("draft model {}, {} speculative tokens (greedy drafts)", model, num_speculative_tokens)
                  : method == "mtp"
                      ? fmt::format("mtp (the checkpoint's multi-token-prediction head), {} speculative tokens (greedy "
                                    "drafts)", num_speculative_tokens)
                      : fmt::format("{}, {} speculative tokens, prompt lookup n in [{}, {}]", method,
                                    num_speculative_tokens, prompt_lookup_min, prompt_lookup_max);
  s += disable_by_batch_size > 0 ? fmt::format(", off above {} running requests", disable_by_batch_size)
                                 : ", on while the step cost model says drafts pay";
  return s;
}

StatusOr<SpeculativeConfig> ParseSpeculativeConfig(std::string_view text) {
  SpeculativeConfig cfg;
  if (text.empty()) return cfg;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(fmt::format("--speculative-config must be a JSON object, got: {}", text));
  }
  static constexpr const char* kKnown[] = {"method", "model", "num_speculative_tokens", "prompt_lookup_min",
                                           "prompt_lookup_max", "disable_by_batch_size",
                                           "draft_tensor_parallel_size"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) {
      return InvalidArgumentError(fmt::format(
          "--speculative-config: unknown key \"{}\" (supported: method, model, num_speculative_tokens, "
          "prompt_lookup_min, prompt_lookup_max, disable_by_batch_size, draft_tensor_parallel_size)", key));
    }
  }
  std::string method = j.contains("method") && j["method"].is_string() ? j["method"].get<std::string>() : "";
  if (j.contains("method") && !j["method"].is_string()) {
    return InvalidArgumentError("--speculative-config: \"method\" must be a string");
  }
  if (j.contains("model")) {
    if (!j["model"].is_string() || j["model"].get<std::string>().empty()) {
      return InvalidArgumentError("--speculative-config: \"model\" must be the draft model's path");
    }
    cfg.model = j["model"].get<std::string>();
    // vLLM infers draft_model from a plain "model"; the methods that take a "model" of
    // another kind (EAGLE, Medusa, MLP speculators) are refused below.
    if (method.empty()) method = "draft_model";
  }
  if (method.empty()) {
    return InvalidArgumentError(
        "--speculative-config: give \"method\" (supported: \"ngram\", \"draft_model\" with \"model\")");
  }
  if (method == "draft_model" && cfg.model.empty()) {
    return InvalidArgumentError("--speculative-config: method \"draft_model\" needs \"model\" (the draft's path)");
  }
  if (method != "draft_model" && !cfg.model.empty()) {
    return InvalidArgumentError(fmt::format(
        "--speculative-config: method \"{}\" takes no \"model\" (a draft model is method \"draft_model\")", method));
  }
  if (j.contains("draft_tensor_parallel_size")) {
    PAGELLM_ASSIGN_OR_RETURN(int32_t draft_tp, IntField(j, "draft_tensor_parallel_size", 1, 1 << 20));
    if (draft_tp != 1) {
      return InvalidArgumentError(fmt::format(
          "--speculative-config: draft_tensor_parallel_size {} is not supported (the draft runs unsharded on rank 0: 1)",
          draft_tp));
    }
  }
  // vLLM's older per-model names for the MTP method.
  if (method == "qwen3_next_mtp" || method == "qwen3_5_mtp") method = "mtp";
  if (method != "ngram" && method != "draft_model" && method != "mtp") {
    return InvalidArgumentError(fmt::format(
        "--speculative-config: method \"{}\" is not supported (supported: \"ngram\", \"draft_model\", \"mtp\")",
        method));
  }
  cfg.method = method;
  if (j.contains("num_speculative_tokens")) {
    PAGELLM_ASSIGN_OR_RETURN(cfg.num_speculative_tokens,
                             IntField(j, "num_speculative_tokens", 1, kMaxSpeculativeTokens));
  } else if (method == "mtp") {
    cfg.num_speculative_tokens = 1;  // vLLM: the checkpoint's MTP layers (one in every Qwen release)
  } else {
    return InvalidArgumentError("--speculative-config: \"num_speculative_tokens\" is required");
  }
  const bool has_min = j.contains("prompt_lookup_min"), has_max = j.contains("prompt_lookup_max");
  if (method != "ngram" && (has_min || has_max)) {
    return InvalidArgumentError(fmt::format(
        "--speculative-config: prompt_lookup_min/max belong to method \"ngram\", not to \"{}\"", method));
  }
  if (has_min) {
    PAGELLM_ASSIGN_OR_RETURN(cfg.prompt_lookup_min, IntField(j, "prompt_lookup_min", 1, 64));
  }
  if (has_max) {
    PAGELLM_ASSIGN_OR_RETURN(cfg.prompt_lookup_max, IntField(j, "prompt_lookup_max", 1, 64));
  }
  if (has_min && !has_max) cfg.prompt_lookup_max = cfg.prompt_lookup_min;
  if (has_max && !has_min) cfg.prompt_lookup_min = cfg.prompt_lookup_max;
  if (cfg.prompt_lookup_min > cfg.prompt_lookup_max) {
    return InvalidArgumentError(fmt::format("--speculative-config: prompt_lookup_min ({}) > prompt_lookup_max ({})",
                                            cfg.prompt_lookup_min, cfg.prompt_lookup_max));
  }
  if (j.contains("disable_by_batch_size")) {
    PAGELLM_ASSIGN_OR_RETURN(cfg.disable_by_batch_size, IntField(j, "disable_by_batch_size", 1, 1 << 20));
  }
  return cfg;
}

}  // namespace pagellm
