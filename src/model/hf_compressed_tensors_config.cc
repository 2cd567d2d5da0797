#include "model/hf_compressed_tensors_config.h"

#include <optional>

#include <fmt/format.h>

#include "model/hf_quant_json.h"

namespace pagellm {
namespace {

// QuantArgs.strategy of the weights: int4 takes group or channel (q4_z keeps a scale per
// group); int8 takes channel or tensor (q8_s keeps one per row; a tensor's one scale is
// every row's).
Status ParseWeightStrategy(const Json& weights, const std::string& wwhere, HfQuantConfig& c) {
  PAGELLM_ASSIGN_OR_RETURN(auto strategy, HfStringKey(weights, "strategy", wwhere));
  const std::string s = strategy.value_or("(missing)");
  if (s == "channel") {
    c.group_size = -1;
    return OkStatus();
  }
  if (c.bits == 8) {
    if (s == "tensor") {
      c.group_size = -1;
      c.tensor_scale = true;
      return OkStatus();
    }
    PAGELLM_ASSIGN_OR_RETURN(auto group_size, HfIntKey(weights, {"group_size"}, wwhere));
    return InvalidArgumentError(fmt::format(
        "{}.strategy '{}'{} is not supported for 8-bit weights; q8_s keeps one scale per output row (channel or "
        "tensor)", wwhere, s, group_size ? fmt::format(" (group_size {})", *group_size) : std::string()));
  }
  if (s == "group") {
    PAGELLM_ASSIGN_OR_RETURN(auto group_size, HfIntKey(weights, {"group_size"}, wwhere));
    if (group_size.value_or(0) <= 0) {
      return InvalidArgumentError(wwhere + ": strategy 'group' needs a positive group_size");
    }
    c.group_size = *group_size;
    return OkStatus();
  }
  return InvalidArgumentError(fmt::format("{}.strategy '{}' is not supported (group or channel)", wwhere, s));
}

// The weights QuantArgs of one group: num_bits 4 or 8, type int, static.
Status ParseWeights(const Json& weights, const std::string& wwhere, HfQuantConfig& c) {
  PAGELLM_ASSIGN_OR_RETURN(auto bits, HfIntKey(weights, {"num_bits"}, wwhere));
  if (bits.value_or(0) != 4 && bits.value_or(0) != 8) {
    return InvalidArgumentError(fmt::format("{}.num_bits {} is not supported; only 4-bit and 8-bit weights load",
                                            wwhere, bits ? std::to_string(*bits) : "(missing)"));
  }
  c.bits = static_cast<int>(*bits);
  PAGELLM_ASSIGN_OR_RETURN(auto type, HfStringKey(weights, "type", wwhere));
  if (type.value_or("int") != "int") {
    return InvalidArgumentError(fmt::format("{}.type '{}' is not supported; only int weights load", wwhere, *type));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto dynamic, HfBoolKey(weights, "dynamic", wwhere));
  if (dynamic.value_or(false)) return InvalidArgumentError(wwhere + ".dynamic true is not supported for weights");
  PAGELLM_ASSIGN_OR_RETURN(auto symmetric, HfBoolKey(weights, "symmetric", wwhere));
  c.symmetric = symmetric.value_or(true);
  if (c.bits == 8 && !c.symmetric) {
    return InvalidArgumentError(fmt::format(
        "{}.symmetric false (asymmetric int8 weights with a weight_zero_point) is not supported; q8_s holds "
        "symmetric int8 codes", wwhere));
  }
  PAGELLM_RETURN_IF_ERROR(ParseWeightStrategy(weights, wwhere, c));
  PAGELLM_ASSIGN_OR_RETURN(auto actorder, HfStringKey(weights, "actorder", wwhere));
  c.desc_act = actorder.value_or("") == "group";
  return OkStatus();
}

// input_activations of an 8-bit group: none (W8A16, run as W8A8) or int8 dynamic per token
// (W8A8, exactly what the backends do).
Status ParseInt8Activations(const Json* act, const std::string& awhere, HfQuantConfig& c) {
  if (act == nullptr) {
    c.scheme = "W8A16";
    c.run_note = "compressed-tensors W8A16 is weight-only (vLLM keeps activations float); pagellm runs it as W8A8, "
                 "quantizing each linear's input to int8 per token";
    return OkStatus();
  }
  if (!act->is_object()) return InvalidArgumentError(awhere + " must be an object or null");
  c.scheme = "W8A8";
  PAGELLM_ASSIGN_OR_RETURN(auto bits, HfIntKey(*act, {"num_bits"}, awhere));
  PAGELLM_ASSIGN_OR_RETURN(auto type, HfStringKey(*act, "type", awhere));
  if (bits.value_or(0) != 8 || type.value_or("int") != "int") {
    return InvalidArgumentError(fmt::format("{} {} is not supported; only 8-bit int activations load", awhere,
                                            act->dump()));
  }
  const Json* dynamic = HfFindKey(*act, {"dynamic"});
  if (dynamic == nullptr || !dynamic->is_boolean() || !dynamic->get<bool>()) {
    return InvalidArgumentError(fmt::format(
        "{}.dynamic {} (static activation scales, input_scale tensors) is not supported; pagellm quantizes "
        "activations dynamically per token, so only dynamic true W8A8 checkpoints load", awhere,
        dynamic == nullptr ? std::string("(missing)") : dynamic->dump()));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto strategy, HfStringKey(*act, "strategy", awhere));
  if (strategy.value_or("") != "token") {
    return InvalidArgumentError(fmt::format(
        "{}.strategy '{}' is not supported; only per-token ('token') dynamic activations load", awhere,
        strategy.value_or("(missing)")));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto symmetric, HfBoolKey(*act, "symmetric", awhere));
  if (!symmetric.value_or(true)) {
    c.run_note = "compressed-tensors W8A8 with asymmetric activations: pagellm quantizes them symmetrically "
                 "(per token, dynamic); the weights are used as they are";
  }
  return OkStatus();
}

// The weights scheme of one compressed-tensors config group.
StatusOr<HfQuantConfig> ParseCompressedGroup(const std::string& name, const Json& group,
                                             const std::string& top_format) {
  const std::string where = fmt::format("quantization_config.config_groups.{}", name);
  if (!group.is_object()) return InvalidArgumentError(where + " must be an object");
  PAGELLM_ASSIGN_OR_RETURN(auto group_format, HfStringKey(group, "format", where));
  const std::string format = group_format.value_or(top_format);
  if (format != "pack-quantized" && format != "int-quantized") {
    const char* what = format == "float-quantized" ? " (fp8 weights and activations)" : "";
    return InvalidArgumentError(fmt::format(
        "compressed-tensors format '{}'{} is not supported; only 'pack-quantized' (int4 W4A16, int8 W8A16) and "
        "'int-quantized' (int8 W8A8) checkpoints load", format.empty() ? "(none)" : format, what));
  }
  if (const Json* out = HfFindKey(group, {"output_activations"}); out != nullptr) {
    return InvalidArgumentError(fmt::format("{}.output_activations is set ({}): output quantization is not supported",
                                            where, out->dump()));
  }
  const Json* weights = HfFindKey(group, {"weights"});
  if (weights == nullptr || !weights->is_object()) return InvalidArgumentError(where + " has no 'weights' object");
  HfQuantConfig c;
  c.method = HfQuantMethod::kCompressedTensors;
  PAGELLM_RETURN_IF_ERROR(ParseWeights(*weights, where + ".weights", c));
  const Json* act = HfFindKey(group, {"input_activations"});
  if (c.bits == 4) {
    if (format != "pack-quantized") {
      return InvalidArgumentError(fmt::format("{}: 4-bit weights in format '{}' are not supported; int4 loads from "
                                              "'pack-quantized'", where, format));
    }
    if (act != nullptr) {
      return InvalidArgumentError(fmt::format(
          "{}.input_activations is set ({}): activation quantization is not supported with int4 weights; only "
          "weight-only (W4A16) int4 compressed-tensors checkpoints load", where, act->dump()));
    }
    return c;
  }
  c.int8_weight_tensor = format == "int-quantized";
  PAGELLM_RETURN_IF_ERROR(ParseInt8Activations(act, where + ".input_activations", c));
  return c;
}

bool SameWeightScheme(const HfQuantConfig& a, const HfQuantConfig& b) {
  return a.bits == b.bits && a.group_size == b.group_size && a.symmetric == b.symmetric &&
         a.desc_act == b.desc_act && a.tensor_scale == b.tensor_scale &&
         a.int8_weight_tensor == b.int8_weight_tensor && a.scheme == b.scheme;
}

Status CheckTopLevel(const Json& q, const std::string& where) {
  PAGELLM_ASSIGN_OR_RETURN(auto status, HfStringKey(q, "quantization_status", where));
  if (status.has_value() && *status != "compressed") {
    return InvalidArgumentError(fmt::format(
        "{}: quantization_status '{}' is not supported; only 'compressed' (packed) checkpoints load", where, *status));
  }
  if (const Json* kv = HfFindKey(q, {"kv_cache_scheme"}); kv != nullptr) {
    return InvalidArgumentError(fmt::format("{}: kv_cache_scheme {} is not supported", where, kv->dump()));
  }
  if (const Json* sparsity = HfFindKey(q, {"sparsity_config"}); sparsity != nullptr && !sparsity->empty()) {
    const Json* format = sparsity->is_object() ? HfFindKey(*sparsity, {"format"}) : nullptr;
    if (format == nullptr || !format->is_string() || format->get<std::string>() != "dense") {
      return InvalidArgumentError(fmt::format("{}: sparsity_config {} is not supported", where, sparsity->dump()));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<HfQuantConfig> ParseCompressedTensorsConfig(const Json& q) {
  const std::string where = "quantization_config (compressed-tensors)";
  PAGELLM_RETURN_IF_ERROR(CheckTopLevel(q, where));
  PAGELLM_ASSIGN_OR_RETURN(auto top_format, HfStringKey(q, "format", where));
  const Json* groups = HfFindKey(q, {"config_groups"});
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
  PAGELLM_ASSIGN_OR_RETURN(scheme->ignore, HfStringListKey(q, "ignore", where));
  return *scheme;
}

}  // namespace pagellm
