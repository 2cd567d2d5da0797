#include "model/hf_quant_config.h"

#include <algorithm>
#include <optional>
#include <regex>

#include <fmt/format.h>

namespace pagellm {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The first of `keys` present (and not null) in `j`; AWQ configs spell bits "w_bit" or
// "bits" depending on the tool that wrote them.
const Json* FindKey(const Json& j, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

StatusOr<std::optional<int64_t>> IntKey(const Json& j, std::initializer_list<const char*> keys,
                                        const std::string& where) {
  const Json* v = FindKey(j, keys);
  if (v == nullptr) return std::optional<int64_t>();
  if (!v->is_number_integer()) {
    return InvalidArgumentError(fmt::format("{}.{} must be an integer, got {}", where, *keys.begin(), v->dump()));
  }
  return std::optional<int64_t>(v->get<int64_t>());
}

StatusOr<std::optional<bool>> BoolKey(const Json& j, const char* key, const std::string& where) {
  const Json* v = FindKey(j, {key});
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return InvalidArgumentError(fmt::format("{}.{} must be true or false, got {}", where, key, v->dump()));
  return std::optional<bool>(v->get<bool>());
}

StatusOr<std::optional<std::string>> StringKey(const Json& j, const char* key, const std::string& where) {
  const Json* v = FindKey(j, {key});
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return InvalidArgumentError(fmt::format("{}.{} must be a string, got {}", where, key, v->dump()));
  return std::optional<std::string>(v->get<std::string>());
}

StatusOr<std::vector<std::string>> StringListKey(const Json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const Json* v = FindKey(j, {key});
  if (v == nullptr) return out;
  if (!v->is_array()) return InvalidArgumentError(fmt::format("{}.{} must be a list of strings", where, key));
  for (const Json& item : *v) {
    if (!item.is_string()) return InvalidArgumentError(fmt::format("{}.{} must be a list of strings", where, key));
    out.push_back(item.get<std::string>());
  }
  return out;
}

// -1 (one group per row) or a positive size.
Status CheckGroupSize(int64_t group_size, const std::string& where) {
  if (group_size == -1 || group_size > 0) return OkStatus();
  return InvalidArgumentError(fmt::format("{}: group_size must be positive or -1, got {}", where, group_size));
}

StatusOr<HfQuantConfig> ParseAwq(const Json& q) {
  const std::string where = "quantization_config (awq)";
  HfQuantConfig c;
  c.method = HfQuantMethod::kAwq;
  PAGELLM_ASSIGN_OR_RETURN(auto bits, IntKey(q, {"bits", "w_bit"}, where));
  if (!bits) return InvalidArgumentError(where + " has no 'bits' (or 'w_bit')");
  if (*bits != 4) {  // vLLM's wording
    return InvalidArgumentError(fmt::format(
        "Currently, only 4-bit weight quantization is supported for AWQ, but got {} bits.", *bits));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto group, IntKey(q, {"group_size", "q_group_size"}, where));
  if (!group) return InvalidArgumentError(where + " has no 'group_size' (or 'q_group_size')");
  PAGELLM_RETURN_IF_ERROR(CheckGroupSize(*group, where));
  c.group_size = *group;
  PAGELLM_ASSIGN_OR_RETURN(auto zero_point, BoolKey(q, "zero_point", where));
  if (zero_point.has_value() && !*zero_point) {
    return InvalidArgumentError(where + ": zero_point false is not supported (AWQ GEMM checkpoints carry qzeros)");
  }
  PAGELLM_ASSIGN_OR_RETURN(auto version, StringKey(q, "version", where));
  const std::string v = Lower(version.value_or("gemm"));
  if (v != "gemm") {
    return InvalidArgumentError(fmt::format(
        "{}: version '{}' is not supported; only AWQ 'gemm' checkpoints (AutoAWQ's default packing) load", where,
        *version));
  }
  PAGELLM_ASSIGN_OR_RETURN(c.ignore, StringListKey(q, "modules_to_not_convert", where));
  return c;
}

StatusOr<HfQuantConfig> ParseGptq(const Json& q) {
  const std::string where = "quantization_config (gptq)";
  HfQuantConfig c;
  c.method = HfQuantMethod::kGptq;
  PAGELLM_ASSIGN_OR_RETURN(auto bits, IntKey(q, {"bits"}, where));
  if (!bits) return InvalidArgumentError(where + " has no 'bits'");
  if (*bits == 8) {
    return InvalidArgumentError(
        "GPTQ 8-bit checkpoints (quantization_config.bits 8) are not supported yet; only 4-bit GPTQ loads");
  }
  if (*bits != 4) {
    return InvalidArgumentError(fmt::format("GPTQ bits {} is not supported; only 4-bit GPTQ checkpoints load", *bits));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto group, IntKey(q, {"group_size"}, where));
  if (!group) return InvalidArgumentError(where + " has no 'group_size'");
  PAGELLM_RETURN_IF_ERROR(CheckGroupSize(*group, where));
  c.group_size = *group;
  PAGELLM_ASSIGN_OR_RETURN(auto sym, BoolKey(q, "sym", where));
  c.symmetric = sym.value_or(true);
  PAGELLM_ASSIGN_OR_RETURN(auto desc_act, BoolKey(q, "desc_act", where));
  c.desc_act = desc_act.value_or(false);
  PAGELLM_ASSIGN_OR_RETURN(auto format, StringKey(q, "checkpoint_format", where));
  const std::string f = Lower(format.value_or("gptq"));
  if (f != "gptq" && f != "gptq_v2") {
    return InvalidArgumentError(fmt::format(
        "{}: checkpoint_format '{}' is not supported (gptq or gptq_v2)", where, *format));
  }
  c.gptq_v2 = f == "gptq_v2";
  PAGELLM_ASSIGN_OR_RETURN(auto lm_head, BoolKey(q, "lm_head", where));
  if (lm_head.value_or(false)) {
    return InvalidArgumentError(where + ": a quantized lm_head (lm_head true) is not supported");
  }
  if (const Json* dynamic = FindKey(q, {"dynamic"}); dynamic != nullptr && !dynamic->empty()) {
    return InvalidArgumentError(where + ": per-module overrides ('dynamic') are not supported");
  }
  PAGELLM_ASSIGN_OR_RETURN(c.ignore, StringListKey(q, "modules_to_not_convert", where));
  return c;
}

// The weights scheme of one compressed-tensors config group.
StatusOr<HfQuantConfig> ParseCompressedGroup(const std::string& name, const Json& group,
                                             const std::string& top_format) {
  const std::string where = fmt::format("quantization_config.config_groups.{}", name);
  if (!group.is_object()) return InvalidArgumentError(where + " must be an object");
  PAGELLM_ASSIGN_OR_RETURN(auto group_format, StringKey(group, "format", where));
  const std::string format = group_format.value_or(top_format);
  if (format != "pack-quantized") {
    const char* what = format == "int-quantized"     ? " (int8 weights and activations, W8A8)"
                       : format == "float-quantized" ? " (fp8 weights and activations)"
                                                     : "";
    return InvalidArgumentError(fmt::format(
        "compressed-tensors format '{}'{} is not supported; only 'pack-quantized' int4 weight-only (W4A16) "
        "checkpoints load", format.empty() ? "(none)" : format, what));
  }
  for (const char* key : {"input_activations", "output_activations"}) {
    if (const Json* act = FindKey(group, {key}); act != nullptr) {
      return InvalidArgumentError(fmt::format(
          "{}.{} is set ({}): activation quantization is not supported; only weight-only (W4A16) "
          "compressed-tensors checkpoints load", where, key, act->dump()));
    }
  }
  const Json* weights = FindKey(group, {"weights"});
  if (weights == nullptr || !weights->is_object()) return InvalidArgumentError(where + " has no 'weights' object");
  const std::string wwhere = where + ".weights";
  HfQuantConfig c;
  c.method = HfQuantMethod::kCompressedTensors;
  PAGELLM_ASSIGN_OR_RETURN(auto bits, IntKey(*weights, {"num_bits"}, wwhere));
  if (bits.value_or(0) != 4) {
    return InvalidArgumentError(fmt::format("{}.num_bits {} is not supported; only 4-bit weights load", wwhere,
                                            bits ? std::to_string(*bits) : "(missing)"));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto type, StringKey(*weights, "type", wwhere));
  if (type.value_or("int") != "int") {
    return InvalidArgumentError(fmt::format("{}.type '{}' is not supported; only int weights load", wwhere, *type));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto dynamic, BoolKey(*weights, "dynamic", wwhere));
  if (dynamic.value_or(false)) return InvalidArgumentError(wwhere + ".dynamic true is not supported for weights");
  PAGELLM_ASSIGN_OR_RETURN(auto symmetric, BoolKey(*weights, "symmetric", wwhere));
  c.symmetric = symmetric.value_or(true);
  PAGELLM_ASSIGN_OR_RETURN(auto strategy, StringKey(*weights, "strategy", wwhere));
  if (strategy.value_or("") == "channel") {
    c.group_size = -1;
  } else if (strategy.value_or("") == "group") {
    PAGELLM_ASSIGN_OR_RETURN(auto group_size, IntKey(*weights, {"group_size"}, wwhere));
    if (group_size.value_or(0) <= 0) return InvalidArgumentError(wwhere + ": strategy 'group' needs a positive group_size");
    c.group_size = *group_size;
  } else {
    return InvalidArgumentError(fmt::format("{}.strategy '{}' is not supported (group or channel)", wwhere,
                                            strategy.value_or("(missing)")));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto actorder, StringKey(*weights, "actorder", wwhere));
  c.desc_act = actorder.value_or("") == "group";
  return c;
}

bool SameWeightScheme(const HfQuantConfig& a, const HfQuantConfig& b) {
  return a.bits == b.bits && a.group_size == b.group_size && a.symmetric == b.symmetric && a.desc_act == b.desc_act;
}

StatusOr<HfQuantConfig> ParseCompressedTensors(const Json& q) {
  const std::string where = "quantization_config (compressed-tensors)";
  PAGELLM_ASSIGN_OR_RETURN(auto status, StringKey(q, "quantization_status", where));
  if (status.has_value() && *status != "compressed") {
    return InvalidArgumentError(fmt::format(
        "{}: quantization_status '{}' is not supported; only 'compressed' (packed) checkpoints load", where, *status));
  }
  if (const Json* kv = FindKey(q, {"kv_cache_scheme"}); kv != nullptr) {
    return InvalidArgumentError(fmt::format("{}: kv_cache_scheme {} is not supported", where, kv->dump()));
  }
  if (const Json* sparsity = FindKey(q, {"sparsity_config"}); sparsity != nullptr && !sparsity->empty()) {
    const Json* format = sparsity->is_object() ? FindKey(*sparsity, {"format"}) : nullptr;
    if (format == nullptr || !format->is_string() || format->get<std::string>() != "dense") {
      return InvalidArgumentError(fmt::format("{}: sparsity_config {} is not supported", where, sparsity->dump()));
    }
  }
  PAGELLM_ASSIGN_OR_RETURN(auto top_format, StringKey(q, "format", where));
  const Json* groups = FindKey(q, {"config_groups"});
  if (groups == nullptr || !groups->is_object() || groups->empty()) {
    return InvalidArgumentError(where + " has no 'config_groups'");
  }
  std::optional<HfQuantConfig> scheme;
  for (const auto& [name, group] : groups->items()) {
    PAGELLM_ASSIGN_OR_RETURN(HfQuantConfig c, ParseCompressedGroup(name, group, top_format.value_or("")));
    if (scheme.has_value() && !SameWeightScheme(*scheme, c)) {
      return InvalidArgumentError(where + ": config_groups with different weight schemes are not supported");
    }
    scheme = c;
  }
  PAGELLM_ASSIGN_OR_RETURN(scheme->ignore, StringListKey(q, "ignore", where));
  return *scheme;
}

}  // namespace

std::string_view HfQuantMethodName(HfQuantMethod method) {
  switch (method) {
    case HfQuantMethod::kNone: return "none";
    case HfQuantMethod::kAwq: return "awq";
    case HfQuantMethod::kGptq: return "gptq";
    case HfQuantMethod::kCompressedTensors: return "compressed-tensors";
  }
  return "?";
}

namespace {

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

}  // namespace

bool HfQuantConfig::IsIgnored(const std::string& module) const {
  for (const std::string& entry : ignore) {
    if (method != HfQuantMethod::kCompressedTensors) {
      if (ContainsComponents(module, entry)) return true;
    } else if (entry.rfind("re:", 0) == 0) {
      // compressed-tensors matches with Python's re.match: anchored at the start only.
      try {
        if (std::regex_search(module, std::regex(entry.substr(3)), std::regex_constants::match_continuous)) return true;
      } catch (const std::regex_error&) {
        continue;  // a pattern std::regex cannot read ignores nothing rather than failing the load
      }
    } else if (module == entry) {
      return true;
    }
  }
  return false;
}

std::string HfQuantConfig::Describe() const {
  if (!quantized()) return "none";
  std::string s = fmt::format("{} int{} {}", HfQuantMethodName(method), bits,
                              group_size < 0 ? std::string("channel") : fmt::format("g{}", group_size));
  if (method != HfQuantMethod::kAwq) s += symmetric ? " sym" : " asym";
  if (method == HfQuantMethod::kGptq && gptq_v2) s += " v2";
  if (desc_act) s += " act-order";
  return s;
}

StatusOr<HfQuantConfig> ParseHfQuantConfig(const Json& config_json) {
  const Json* q = config_json.is_object() ? FindKey(config_json, {"quantization_config"}) : nullptr;
  if (q == nullptr && config_json.is_object()) {
    if (const Json* text = FindKey(config_json, {"text_config"}); text != nullptr && text->is_object()) {
      q = FindKey(*text, {"quantization_config"});
    }
  }
  if (q == nullptr) return HfQuantConfig{};
  if (!q->is_object()) return InvalidArgumentError("quantization_config must be an object");
  PAGELLM_ASSIGN_OR_RETURN(auto method, StringKey(*q, "quant_method", "quantization_config"));
  if (!method) return InvalidArgumentError("quantization_config has no 'quant_method'");
  const std::string m = Lower(*method);
  if (m == "awq") return ParseAwq(*q);
  if (m == "gptq") return ParseGptq(*q);
  if (m == "compressed-tensors" || m == "compressed_tensors") return ParseCompressedTensors(*q);
  return InvalidArgumentError(fmt::format(
      "quantization method '{}' (config.json quantization_config.quant_method) is not supported; pagellm loads "
      "awq, gptq and compressed-tensors int4 checkpoints", *method));
}

StatusOr<HfQuantConfig> LoadHfQuantConfig(const std::string& dir) {
  const std::string path = dir + "/config.json";
  PAGELLM_ASSIGN_OR_RETURN(Json json, ReadJsonFile(path));
  auto config = ParseHfQuantConfig(json);
  if (!config.ok()) return config.status().WithPrefix(path);
  return config;
}

}  // namespace pagellm
