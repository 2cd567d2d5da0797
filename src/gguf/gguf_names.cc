#include "gguf/gguf_names.h"

#include <charconv>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace pagellm {
namespace {

enum ArchMask : unsigned {
  kQwen2 = 1,
  kQwen3 = 2,
  kHybrid = 4,
  kQwen3Moe = 8,
  kDense = kQwen2 | kQwen3,
  kAll = 15
};

struct NamePair {
  std::string_view hf;    // suffix after "<prefix>layers.N." (or after "<prefix>" for global tensors)
  std::string_view gguf;  // suffix after "blk.N." (or the full name)
  unsigned archs;         // ArchMask bits of the architectures that have the tensor
};

constexpr NamePair kGlobalNames[] = {
    {"embed_tokens.weight", "token_embd.weight", kAll},
    {"norm.weight", "output_norm.weight", kAll},
};

// llama.cpp gguf-py tensor_mapping.py / constants.py (QWEN2, QWEN3, QWEN3MOE, QWEN3NEXT, QWEN35, QWEN35MOE).
constexpr NamePair kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight", kAll},
    {"post_attention_layernorm.weight", "ffn_norm.weight", kDense | kQwen3Moe},
    {"post_attention_layernorm.weight", "post_attention_norm.weight", kHybrid},
    {"self_attn.q_proj.weight", "attn_q.weight", kAll},
    {"self_attn.k_proj.weight", "attn_k.weight", kAll},
    {"self_attn.v_proj.weight", "attn_v.weight", kAll},
    {"self_attn.o_proj.weight", "attn_output.weight", kAll},
    {"self_attn.q_proj.bias", "attn_q.bias", kDense},
    {"self_attn.k_proj.bias", "attn_k.bias", kDense},
    {"self_attn.v_proj.bias", "attn_v.bias", kDense},
    {"self_attn.o_proj.bias", "attn_output.bias", kDense},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", kQwen3 | kQwen3Moe | kHybrid},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", kQwen3 | kQwen3Moe | kHybrid},
    {"mlp.gate_proj.weight", "ffn_gate.weight", kDense | kHybrid},
    {"mlp.up_proj.weight", "ffn_up.weight", kDense | kHybrid},
    {"mlp.down_proj.weight", "ffn_down.weight", kDense | kHybrid},
    // Gated DeltaNet (Qwen3.5 split projections; Qwen3-Next keeps in_proj_ba as ssm_ba).
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight", kHybrid},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight", kHybrid},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight", kHybrid},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight", kHybrid},
    {"linear_attn.in_proj_ba.weight", "ssm_ba.weight", kHybrid},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight", kHybrid},
    {"linear_attn.dt_bias", "ssm_dt.bias", kHybrid},
    {"linear_attn.A_log", "ssm_a", kHybrid},
    {"linear_attn.norm.weight", "ssm_norm.weight", kHybrid},
    {"linear_attn.out_proj.weight", "ssm_out.weight", kHybrid},
    // MoE router and shared expert (experts themselves are stacked: model/gguf_hybrid_plan.h).
    {"mlp.gate.weight", "ffn_gate_inp.weight", kHybrid | kQwen3Moe},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", kHybrid},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", kHybrid},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", kHybrid},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", kHybrid},
};

// The MTP head's own tensors (names below "mtp.") -> llama.cpp's NextN tensors (gguf-py
// MODEL_TENSOR.NEXTN_*; embed_tokens and shared_head_head have no Qwen counterpart: the head
// shares the model's embedding and lm_head).
constexpr std::pair<std::string_view, std::string_view> kNextnNames[] = {
    {"fc.weight", "nextn.eh_proj.weight"},
    {"pre_fc_norm_embedding.weight", "nextn.enorm.weight"},
    {"pre_fc_norm_hidden.weight", "nextn.hnorm.weight"},
    {"norm.weight", "nextn.shared_head_norm.weight"},
};

StatusOr<unsigned> ArchBit(std::string_view arch) {
  if (arch == "qwen2") return static_cast<unsigned>(kQwen2);
  if (arch == "qwen3") return static_cast<unsigned>(kQwen3);
  if (arch == "qwen3moe") return static_cast<unsigned>(kQwen3Moe);
  if (IsHybridGgufArch(arch)) return static_cast<unsigned>(kHybrid);
  return UnimplementedError(fmt::format("tensor names for architecture '{}' are not supported", arch));
}

// The HF prefix of decoder tensors: Qwen3.5's multimodal wrapper nests the text model.
std::string_view HfPrefix(std::string_view arch) {
  return arch == "qwen35" || arch == "qwen35moe" ? "model.language_model." : "model.";
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

StatusOr<std::string> ToGguf(std::string_view arch, unsigned bit, std::string_view name) {
  if (name == "lm_head.weight") return std::string("output.weight");
  // Accept both "model.language_model." and "model." (text-only Qwen3.5 exports).
  std::string stripped;
  if (name.substr(0, 21) == "model.language_model.") {
    stripped = fmt::format("model.{}", name.substr(21));
    name = stripped;
  }
  if (name.substr(0, 6) == "model.") {
    std::string_view rest = name.substr(6);
    for (const NamePair& p : kGlobalNames) {
      if ((p.archs & bit) && rest == p.hf) return std::string(p.gguf);
    }
  }
  if (auto split = SplitLayer(name, "model.layers.")) {
    for (const NamePair& p : kLayerNames) {
      if ((p.archs & bit) && split->second == p.hf) return fmt::format("blk.{}.{}", split->first, p.gguf);
    }
  }
  return NotFoundError(fmt::format("no GGUF name for {} tensor '{}'", arch, name));
}

StatusOr<std::string> ToHf(std::string_view arch, unsigned bit, std::string_view name) {
  if (name == "output.weight") return std::string("lm_head.weight");
  for (const NamePair& p : kGlobalNames) {
    if ((p.archs & bit) && name == p.gguf) return fmt::format("{}{}", HfPrefix(arch), p.hf);
  }
  if (auto split = SplitLayer(name, "blk.")) {
    for (const NamePair& p : kLayerNames) {
      if ((p.archs & bit) && split->second == p.gguf) {
        return fmt::format("{}layers.{}.{}", HfPrefix(arch), split->first, p.hf);
      }
    }
  }
  return NotFoundError(fmt::format("no Hugging Face name for {} tensor '{}'", arch, name));
}

}  // namespace

bool IsHybridGgufArch(std::string_view arch) { return arch == "qwen3next" || arch == "qwen35" || arch == "qwen35moe"; }

bool UsesGgufTensorPlans(std::string_view arch) { return arch == "qwen3moe" || IsHybridGgufArch(arch); }

StatusOr<std::string> HfToGgufTensorName(std::string_view arch, std::string_view hf_name) {
  PAGELLM_ASSIGN_OR_RETURN(unsigned bit, ArchBit(arch));
  return ToGguf(arch, bit, hf_name);
}

StatusOr<std::string> GgufToHfTensorName(std::string_view arch, std::string_view gguf_name) {
  PAGELLM_ASSIGN_OR_RETURN(unsigned bit, ArchBit(arch));
  return ToHf(arch, bit, gguf_name);
}

StatusOr<std::string> GgufLayerSuffix(std::string_view arch, std::string_view field) {
  PAGELLM_ASSIGN_OR_RETURN(unsigned bit, ArchBit(arch));
  for (const NamePair& p : kLayerNames) {
    if ((p.archs & bit) && field == p.hf) return std::string(p.gguf);
  }
  return NotFoundError(fmt::format("no 1:1 GGUF name for {} tensor field '{}'", arch, field));
}

StatusOr<std::string> GgufNextnSuffix(std::string_view field) {
  for (const auto& [hf, gguf] : kNextnNames) {
    if (field == hf) return std::string(gguf);
  }
  return NotFoundError(fmt::format("no GGUF NextN name for multi-token-prediction tensor 'mtp.{}'", field));
}

}  // namespace pagellm
