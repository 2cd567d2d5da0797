#include "gguf/gguf_names.h"

#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace pagellm {
namespace {

struct NamePair {
  std::string_view hf;    // suffix after "model.layers.N." (or the full name for global tensors)
  std::string_view gguf;  // suffix after "blk.N." (or the full name)
  bool qwen3_only;        // q/k norms
};

constexpr NamePair kGlobalNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight", false},
    {"model.norm.weight", "output_norm.weight", false},
    {"lm_head.weight", "output.weight", false},
};

constexpr NamePair kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight", false},
    {"post_attention_layernorm.weight", "ffn_norm.weight", false},
    {"self_attn.q_proj.weight", "attn_q.weight", false},
    {"self_attn.k_proj.weight", "attn_k.weight", false},
    {"self_attn.v_proj.weight", "attn_v.weight", false},
    {"self_attn.o_proj.weight", "attn_output.weight", false},
    {"self_attn.q_proj.bias", "attn_q.bias", false},
    {"self_attn.k_proj.bias", "attn_k.bias", false},
    {"self_attn.v_proj.bias", "attn_v.bias", false},
    {"self_attn.o_proj.bias", "attn_output.bias", false},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", true},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", true},
    {"mlp.gate_proj.weight", "ffn_gate.weight", false},
    {"mlp.up_proj.weight", "ffn_up.weight", false},
    {"mlp.down_proj.weight", "ffn_down.weight", false},
};

Status CheckArch(std::string_view arch) {
  if (arch == "qwen2" || arch == "qwen3") return OkStatus();
  return UnimplementedError(fmt::format("tensor names for architecture '{}' are not supported", arch));
}

// Splits "<prefix><N>.<rest>" into (N, rest).
std::optional<std::pair<int, std::string_view>> SplitLayer(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  int layer = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + dot, layer);
  if (ec != std::errc() || ptr != name.data() + dot || layer < 0) return std::nullopt;
  return std::make_pair(layer, name.substr(dot + 1));
}

// Maps `name` from one side's naming to the other's (`to_gguf` picks the direction).
StatusOr<std::string> MapName(std::string_view arch, std::string_view name, bool to_gguf) {
  PAGELLM_RETURN_IF_ERROR(CheckArch(arch));
  const bool qwen3 = arch == "qwen3";
  for (const NamePair& p : kGlobalNames) {
    if (name == (to_gguf ? p.hf : p.gguf)) return std::string(to_gguf ? p.gguf : p.hf);
  }
  auto split = SplitLayer(name, to_gguf ? "model.layers." : "blk.");
  if (split) {
    for (const NamePair& p : kLayerNames) {
      if (p.qwen3_only && !qwen3) continue;
      if (split->second == (to_gguf ? p.hf : p.gguf)) {
        return fmt::format("{}{}.{}", to_gguf ? "blk." : "model.layers.", split->first, to_gguf ? p.gguf : p.hf);
      }
    }
  }
  return NotFoundError(fmt::format("no {} name for {} tensor '{}'", to_gguf ? "GGUF" : "Hugging Face", arch, name));
}

}  // namespace

StatusOr<std::string> HfToGgufTensorName(std::string_view arch, std::string_view hf_name) {
  return MapName(arch, hf_name, /*to_gguf=*/true);
}

StatusOr<std::string> GgufToHfTensorName(std::string_view arch, std::string_view gguf_name) {
  return MapName(arch, gguf_name, /*to_gguf=*/false);
}

}  // namespace pagellm
