#include "model/hf_quant_config.h"

#include <optional>
#include <regex>

#include <fmt/format.h>

#include "model/hf_ascend_config.h"
#include "model/hf_compressed_tensors_config.h"
#include "model/hf_quant_json.h"

namespace pagellm {
namespace {

// -1 (one group per row) or a positive size.
Status CheckGroupSize(int64_t group_size, const std::string& where) {
  if (group_size == -1 || group_size > 0) return OkStatus();
  return InvalidArgumentError(fmt::format("{}: group_size must be positive or -1, got {}", where, group_size));
}

StatusOr<HfQuantConfig> ParseAwq(const Json& q) {
  const std::string where = "quantization_config (awq)";
  HfQuantConfig c;
  c.method = HfQuantMethod::kAwq;
  PAGELLM_ASSIGN_OR_RETURN(auto bits, HfIntKey(q, {"bits", "w_bit"}, where));
  if (!bits) return InvalidArgumentError(where + " has no 'bits' (or 'w_bit')");
  if (*bits != 4) {  // vLLM's wording
    return InvalidArgumentError(fmt::format(
        "Currently, only 4-bit weight quantization is supported for AWQ, but got {} bits.", *bits));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto group, HfIntKey(q, {"group_size", "q_group_size"}, where));
  if (!group) return InvalidArgumentError(where + " has no 'group_size' (or 'q_group_size')");
  PAGELLM_RETURN_IF_ERROR(CheckGroupSize(*group, where));
  c.group_size = *group;
  PAGELLM_ASSIGN_OR_RETURN(auto zero_point, HfBoolKey(q, "zero_point", where));
  if (zero_point.has_value() && !*zero_point) {
    return InvalidArgumentError(where + ": zero_point false is not supported (AWQ GEMM checkpoints carry qzeros)");
  }
  PAGELLM_ASSIGN_OR_RETURN(auto version, HfStringKey(q, "version", where));
  const std::string v = HfLower(version.value_or("gemm"));
  if (v != "gemm") {
    return InvalidArgumentError(fmt::format(
        "{}: version '{}' is not supported; only AWQ 'gemm' checkpoints (AutoAWQ's default packing) load", where,
        *version));
  }
  PAGELLM_ASSIGN_OR_RETURN(c.ignore, HfStringListKey(q, "modules_to_not_convert", where));
  return c;
}

// GPTQ 8-bit becomes q8_s, which holds one scale per output row and signed codes: so only
// symmetric (zero 128) per-channel (group_size -1) checkpoints. (A row whose groups all
// happen to share one scale would fit too; real GPTQ groups never do.)
Status CheckGptqInt8(const HfQuantConfig& c, const std::string& where) {
  if (!c.symmetric) {
    return InvalidArgumentError(fmt::format(
        "{}: GPTQ 8-bit with sym false (asymmetric zero points) is not supported; q8_s holds symmetric int8 codes, "
        "so only sym true 8-bit GPTQ loads", where));
  }
  if (c.group_size != -1) {
    return InvalidArgumentError(fmt::format(
        "{}: GPTQ 8-bit with group_size {} is not supported; q8_s keeps one scale per output row, so only "
        "group_size -1 (per-channel) 8-bit GPTQ loads", where, c.group_size));
  }
  return OkStatus();
}

StatusOr<HfQuantConfig> ParseGptq(const Json& q) {
  const std::string where = "quantization_config (gptq)";
  HfQuantConfig c;
  c.method = HfQuantMethod::kGptq;
  PAGELLM_ASSIGN_OR_RETURN(auto bits, HfIntKey(q, {"bits"}, where));
  if (!bits) return InvalidArgumentError(where + " has no 'bits'");
  if (*bits != 4 && *bits != 8) {
    return InvalidArgumentError(fmt::format("GPTQ bits {} is not supported; only 4-bit and 8-bit GPTQ checkpoints load",
                                            *bits));
  }
  c.bits = static_cast<int>(*bits);
  PAGELLM_ASSIGN_OR_RETURN(auto group, HfIntKey(q, {"group_size"}, where));
  if (!group) return InvalidArgumentError(where + " has no 'group_size'");
  PAGELLM_RETURN_IF_ERROR(CheckGroupSize(*group, where));
  c.group_size = *group;
  PAGELLM_ASSIGN_OR_RETURN(auto sym, HfBoolKey(q, "sym", where));
  c.symmetric = sym.value_or(true);
  PAGELLM_ASSIGN_OR_RETURN(auto desc_act, HfBoolKey(q, "desc_act", where));
  c.desc_act = desc_act.value_or(false);
  PAGELLM_ASSIGN_OR_RETURN(auto format, HfStringKey(q, "checkpoint_format", where));
  const std::string f = HfLower(format.value_or("gptq"));
  if (f != "gptq" && f != "gptq_v2") {
    return InvalidArgumentError(fmt::format(
        "{}: checkpoint_format '{}' is not supported (gptq or gptq_v2)", where, *format));
  }
  c.gptq_v2 = f == "gptq_v2";
  PAGELLM_ASSIGN_OR_RETURN(auto lm_head, HfBoolKey(q, "lm_head", where));
  if (lm_head.value_or(false)) {
    return InvalidArgumentError(where + ": a quantized lm_head (lm_head true) is not supported");
  }
  if (const Json* dynamic = HfFindKey(q, {"dynamic"}); dynamic != nullptr && !dynamic->empty()) {
    return InvalidArgumentError(where + ": per-module overrides ('dynamic') are not supported");
  }
  if (c.bits == 8) {
    PAGELLM_RETURN_IF_ERROR(CheckGptqInt8(c, where));
    c.scheme = "W8A16";
    c.run_note = "GPTQ 8-bit is weight-only (vLLM keeps activations float); pagellm runs it as W8A8, quantizing "
                 "each linear's input to int8 per token";
  }
  PAGELLM_ASSIGN_OR_RETURN(c.ignore, HfStringListKey(q, "modules_to_not_convert", where));
  return c;
}

// Qwen's (and DeepSeek-V3's) fp8 checkpoints, as vLLM's Fp8Config reads them.
StatusOr<HfQuantConfig> ParseFp8(const Json& q) {
  const std::string where = "quantization_config (fp8)";
  HfQuantConfig c;
  c.method = HfQuantMethod::kFp8;
  c.bits = 8;
  c.symmetric = true;
  c.scheme = "FP8";
  PAGELLM_ASSIGN_OR_RETURN(auto format, HfStringKey(q, "fmt", where));
  if (format.has_value() && HfLower(*format) != "e4m3") {
    return InvalidArgumentError(fmt::format(
        "{}: fmt '{}' is not supported; only e4m3 (float8_e4m3fn) fp8 checkpoints load", where, *format));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto activations, HfStringKey(q, "activation_scheme", where));
  const std::string scheme = activations.value_or("dynamic");
  if (scheme == "static") {
    // The weights are dequantized to float and the activations stay float: the calibrated
    // input scales have nothing to scale, and float activations are the more exact choice.
    c.run_note = "fp8 activation_scheme static: the checkpoint's input_scale tensors are not used; activations "
                 "stay in the model's float dtype";
  } else if (scheme != "dynamic") {
    return InvalidArgumentError(fmt::format(
        "{}: activation_scheme '{}' is not supported (dynamic or static)", where, scheme));
  }
  if (const Json* block = HfFindKey(q, {"weight_block_size"}); block != nullptr) {
    if (!block->is_array() || block->size() != 2 || !(*block)[0].is_number_integer() ||
        !(*block)[1].is_number_integer() || (*block)[0].get<int64_t>() <= 0 || (*block)[1].get<int64_t>() <= 0) {
      return InvalidArgumentError(fmt::format("{}: weight_block_size must be two positive integers [rows, columns], "
                                              "got {}", where, block->dump()));
    }
    c.block_n = (*block)[0].get<int64_t>();
    c.block_k = (*block)[1].get<int64_t>();
  }
  PAGELLM_ASSIGN_OR_RETURN(c.ignore, HfStringListKey(q, "ignored_layers", where));
  PAGELLM_ASSIGN_OR_RETURN(auto not_converted, HfStringListKey(q, "modules_to_not_convert", where));
  c.ignore.insert(c.ignore.end(), not_converted.begin(), not_converted.end());
  return c;
}

// `part` occurs in `module` as whole dot-separated components ("mlp.gate" in
// "model.layers.0.mlp.gate", not in "...mlp.gate_proj").
bool ContainsComponents(const std::string& module, const std::string& part) {
  if (part.empty()) return false;
  for (size_t at = module.find(part); at != std::string::npos; at = module.find(part, at + 1)) {
    const size_t end = at + part.size();
    if ((at == 0 || module[at - 1] == '.') && (end == module.size() || module[end] == '.')) return true;
  }
  return false;
}

// compressed-tensors matches with Python's re.match: anchored at the start only.
bool MatchesCompressedTensorsEntry(const std::string& module, const std::string& entry) {
  if (entry.rfind("re:", 0) != 0) return module == entry;
  try {
    return std::regex_search(module, std::regex(entry.substr(3)), std::regex_constants::match_continuous);
  } catch (const std::regex_error&) {
    return false;  // a pattern std::regex cannot read ignores nothing rather than failing the load
  }
}

}  // namespace

std::string_view HfQuantMethodName(HfQuantMethod method) {
  switch (method) {
    case HfQuantMethod::kNone: return "none";
    case HfQuantMethod::kAwq: return "awq";
    case HfQuantMethod::kGptq: return "gptq";
    case HfQuantMethod::kCompressedTensors: return "compressed-tensors";
    case HfQuantMethod::kFp8: return "fp8";
    case HfQuantMethod::kAscend: return "ascend";
  }
  return "?";
}

bool HfQuantConfig::IsIgnored(const std::string& module) const {
  if (method == HfQuantMethod::kAscend) {
    auto it = ascend_types.find(module + ".weight");
    return it != ascend_types.end() && it->second == "FLOAT";
  }
  for (const std::string& entry : ignore) {
    const bool hit = method == HfQuantMethod::kCompressedTensors ? MatchesCompressedTensorsEntry(module, entry)
                                                                 : ContainsComponents(module, entry);
    if (hit) return true;
  }
  return false;
}

std::string HfQuantConfig::Describe() const {
  if (!quantized()) return "none";
  if (method == HfQuantMethod::kFp8) {
    return block_n > 0 ? fmt::format("fp8 e4m3 {}x{} blocks", block_n, block_k) : std::string("fp8 e4m3 per-tensor");
  }
  const std::string granularity = tensor_scale ? std::string("tensor")
                                  : group_size < 0 ? std::string("channel")
                                                   : fmt::format("g{}", group_size);
  std::string s = fmt::format("{} int{} {}", HfQuantMethodName(method), bits, granularity);
  if (method != HfQuantMethod::kAwq) s += symmetric ? " sym" : " asym";
  if (method == HfQuantMethod::kGptq && gptq_v2) s += " v2";
  if (desc_act) s += " act-order";
  if (bits == 8 && !scheme.empty()) s += " " + scheme;
  return s;
}

StatusOr<HfQuantConfig> ParseHfQuantConfig(const Json& config_json) {
  const Json* q = config_json.is_object() ? HfFindKey(config_json, {"quantization_config"}) : nullptr;
  if (q == nullptr && config_json.is_object()) {
    if (const Json* text = HfFindKey(config_json, {"text_config"}); text != nullptr && text->is_object()) {
      q = HfFindKey(*text, {"quantization_config"});
    }
  }
  if (q == nullptr) return HfQuantConfig{};
  if (!q->is_object()) return InvalidArgumentError("quantization_config must be an object");
  PAGELLM_ASSIGN_OR_RETURN(auto method, HfStringKey(*q, "quant_method", "quantization_config"));
  if (!method) {
    if (LooksLikeAscendDescription(*q)) return ParseAscendDescription(*q, "quantization_config");
    return InvalidArgumentError("quantization_config has no 'quant_method'");
  }
  const std::string m = HfLower(*method);
  if (m == "awq") return ParseAwq(*q);
  if (m == "gptq") return ParseGptq(*q);
  if (m == "compressed-tensors" || m == "compressed_tensors") return ParseCompressedTensorsConfig(*q);
  if (m == "fp8") return ParseFp8(*q);
  return InvalidArgumentError(fmt::format(
      "quantization method '{}' (config.json quantization_config.quant_method) is not supported; pagellm loads "
      "awq, gptq, compressed-tensors, fp8 and msModelSlim (ascend) checkpoints", *method));
}

StatusOr<HfQuantConfig> LoadHfQuantConfig(const std::string& dir) {
  const std::string path = dir + "/config.json";
  PAGELLM_ASSIGN_OR_RETURN(Json json, ReadJsonFile(path));
  auto config = ParseHfQuantConfig(json);
  if (!config.ok()) return config.status().WithPrefix(path);
  PAGELLM_ASSIGN_OR_RETURN(std::optional<std::string> description, FindAscendDescription(dir));
  if (description.has_value()) {
    if (config->quantized() && config->method != HfQuantMethod::kAscend) {
      return InvalidArgumentError(fmt::format(
          "{}: declares {} quantization, but {} (an msModelSlim description) lies beside it; which one describes "
          "the weights is ambiguous", path, config->Describe(), *description));
    }
    PAGELLM_ASSIGN_OR_RETURN(Json described, ReadJsonFile(*description));
    return ParseAscendDescription(described, *description);  // errors name the file
  }
  if (!config->quantized() && json.is_object()) {
    // msModelSlim also writes `quantize` into config.json; without the description the
    // quantized tensors could not be told from float ones.
    if (const Json* quantize = HfFindKey(json, {"quantize"}); quantize != nullptr && quantize->is_string()) {
      return InvalidArgumentError(fmt::format(
          "{}: quantize '{}' marks an msModelSlim (ascend) checkpoint, but {} has no quant_model_description.json",
          path, quantize->get<std::string>(), dir));
    }
  }
  return config;
}

}  // namespace pagellm
