#include "model/hf_ascend_config.h"

#include <filesystem>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace pagellm {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDescriptionFile = "quant_model_description.json";
constexpr const char* kDescriptionPrefix = "quant_model_description_";

// Why a type is refused, for the message.
std::string RefusalReason(const std::string& type) {
  if (type == "W8A8") {
    return "static W8A8 quantizes activations with calibrated per-tensor constants (input_scale, input_offset, "
           "quant_bias, deq_scale), which pagellm's W8A8 (dynamic per-token activations) does not reproduce";
  }
  if (type == "C8") return "a quantized KV cache is not supported";
  return "pagellm runs int8 per-channel weights only";
}

}  // namespace

StatusOr<std::optional<std::string>> FindAscendDescription(const std::string& dir) {
  std::error_code ec;
  const std::string main = dir + "/" + kDescriptionFile;
  if (fs::is_regular_file(main, ec)) return std::optional<std::string>(main);
  std::vector<std::string> typed;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kDescriptionPrefix, 0) == 0 && name.ends_with(".json")) typed.push_back(entry.path().string());
  }
  if (typed.empty()) return std::optional<std::string>();
  if (typed.size() > 1) {
    return InvalidArgumentError(fmt::format("{} holds {} msModelSlim descriptions ({}, {}, ...); keep one, or name it "
                                            "{}", dir, typed.size(), typed[0], typed[1], kDescriptionFile));
  }
  return std::optional<std::string>(typed.front());
}

bool LooksLikeAscendDescription(const Json& description) {
  if (!description.is_object() || description.contains("quant_method")) return false;
  if (description.contains("model_quant_type")) return true;
  for (const auto& [key, value] : description.items()) {
    if (key.ends_with(".weight") && value.is_string()) return true;
  }
  return false;
}

StatusOr<HfQuantConfig> ParseAscendDescription(const Json& description, const std::string& where) {
  if (!description.is_object()) return InvalidArgumentError(where + ": the msModelSlim description must be an object");
  static const std::set<std::string> kAccepted = {"W8A8_DYNAMIC", "W8A16", "FLOAT"};
  HfQuantConfig c;
  c.method = HfQuantMethod::kAscend;
  c.bits = 8;
  c.symmetric = true;
  std::set<std::string> schemes;
  for (const auto& [key, value] : description.items()) {
    if (key == "version" || !value.is_string()) continue;  // metadata, or per-layer extras with numbers
    const std::string type = value.get<std::string>();
    if (type.empty()) continue;  // e.g. "kv_cache_type": "" (none)
    if (kAccepted.count(type) == 0) {
      return InvalidArgumentError(fmt::format(
          "{}: msModelSlim quant type '{}' ({}) is not supported: {}; only W8A8_DYNAMIC (and W8A16) checkpoints "
          "load", where, type, key, RefusalReason(type)));
    }
    if (key == "model_quant_type") continue;
    c.ascend_types[key] = type;
    if (type != "FLOAT" && key.ends_with(".weight")) schemes.insert(type);
  }
  c.scheme = schemes.size() == 1 ? *schemes.begin() : schemes.empty() ? std::string("FLOAT") : "W8A8_DYNAMIC+W8A16";
  if (schemes.count("W8A16") != 0) {
    c.run_note = "msModelSlim W8A16 is weight-only (vLLM-Ascend keeps activations float); pagellm runs it as W8A8, "
                 "quantizing each linear's input to int8 per token";
  }
  return c;
}

}  // namespace pagellm
