#include "gguf/gguf_quant_recipe.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <tuple>

#include <fmt/format.h>

namespace pagellm {
namespace {

struct FileTypeInfo {
  GgufFileType file_type;
  std::string_view name;
  GgmlType default_type;
};

constexpr FileTypeInfo kFileTypes[] = {
    {GgufFileType::kQ4_0, "q4_0", GgmlType::kQ4_0},       {GgufFileType::kQ8_0, "q8_0", GgmlType::kQ8_0},
    {GgufFileType::kQ5_0, "q5_0", GgmlType::kQ5_0},       {GgufFileType::kQ4_K_M, "q4_k_m", GgmlType::kQ4_K},
    {GgufFileType::kQ5_K_M, "q5_k_m", GgmlType::kQ5_K},   {GgufFileType::kQ6_K, "q6_k", GgmlType::kQ6_K},
    {GgufFileType::kIQ4_NL, "iq4_nl", GgmlType::kIQ4_NL}, {GgufFileType::kIQ4_XS, "iq4_xs", GgmlType::kIQ4_XS},
};

const FileTypeInfo& Info(GgufFileType file_type) {
  for (const FileTypeInfo& info : kFileTypes) {
    if (info.file_type == file_type) return info;
  }
  PAGELLM_CHECK(false && "GgufFileType value outside the enum");
  return kFileTypes[0];
}

// llama-quant.cpp's tensor categories, matched on the name as it does.
enum class Category { kTokenEmbd, kOutput, kAttnQkv, kAttnKvB, kAttnV, kAttnK, kAttnQ, kAttnOutput, kFfnUp,
                      kFfnGate, kFfnDown, kOther };

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category CategoryOf(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  // First match wins (attn_qkv before attn_v, ffn_gate also matches ffn_gate_exps).
  const std::pair<std::string_view, Category> kParts[] = {
      {"attn_qkv.weight", Category::kAttnQkv}, {"attn_kv_b.weight", Category::kAttnKvB},
      {"attn_v.weight", Category::kAttnV},     {"attn_k.weight", Category::kAttnK},
      {"attn_q.weight", Category::kAttnQ},     {"attn_output.weight", Category::kAttnOutput},
      {"ffn_up", Category::kFfnUp},            {"ffn_gate", Category::kFfnGate},
      {"ffn_down", Category::kFfnDown}};
  for (const auto& [part, category] : kParts) {
    if (Contains(name, part)) return category;
  }
  return Category::kOther;
}

// The tensors llama.cpp treats like attn_v (more sensitive to quantization).
bool IsAttnVLike(Category c) { return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB; }

// tensor_allows_quantization, reduced to the names that occur in the Qwen archs (the rest of
// its list names other archs' tensors: RWKV time_mix_*, Gemma altup, vision towers, ...).
bool AllowsQuantization(const GgufRecipeTensor& t) {
  if (GgmlTrimmedDims(t.ne).size() < 2) return false;
  const std::string_view name = t.name;
  if (!name.ends_with("weight")) return false;
  for (std::string_view kept : {"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d"}) {
    if (Contains(name, kept)) return false;
  }
  return true;
}

// The layer N of "blk.N.", or -1 (what llama.cpp's sscanf leaves when the prefix is absent).
int LayerOfName(std::string_view name) {
  int layer = -1;
  if (name.starts_with("blk.")) std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  return layer;
}

bool UseMoreBits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool IsIq4(GgufFileType f) { return f == GgufFileType::kIQ4_NL || f == GgufFileType::kIQ4_XS; }

// quantize_state_impl: what the recipe counts across tensors (in llama-quantize's order).
struct RecipeState {
  GgufFileType file_type;
  const GgufRecipeModel& model;
  bool tied_embeddings = true;
  int64_t num_attn_v = 0;
  int64_t attn_v_idx = 0;
  int64_t ffn_down_idx = 0;
  int64_t ffn_gate_idx = 0;
  int64_t ffn_up_idx = 0;
};

// layer_info: a running count for dense models, the name's blk.N for MoE ones.
StatusOr<int64_t> FfnLayer(const RecipeState& s, int64_t counter, const std::string& name) {
  if (std::max<int64_t>(1, s.model.num_experts) == 1) return counter;
  const int layer = LayerOfName(name);
  if (!name.starts_with("blk.") || layer < 0 || layer >= s.model.num_layers) {
    return InvalidArgumentError(fmt::format("cannot tell the layer of MoE tensor '{}'", name));
  }
  return layer;
}

// llama_tensor_get_type_impl for our file types: the type before the shape fallback.
StatusOr<GgmlType> ChooseType(RecipeState& s, const GgufRecipeTensor& t, Category c) {
  const GgufFileType f = s.file_type;
  GgmlType type = Info(f).default_type;
  const bool eight_experts = s.model.num_experts == 8;
  if (c == Category::kOutput || (s.tied_embeddings && c == Category::kTokenEmbd)) {
    if (t.ne[0] % GgmlBlockSize(type) != 0) return GgmlType::kQ8_0;
    return type == GgmlType::kQ8_0 ? type : GgmlType::kQ6_K;
  }
  if (IsAttnVLike(c)) {
    const int64_t gqa = s.model.num_kv_heads == 0 ? 0 : s.model.num_heads / s.model.num_kv_heads;
    if (IsIq4(f) && gqa >= 4) {
      type = GgmlType::kQ5_K;
    } else if ((f == GgufFileType::kQ4_K_M || f == GgufFileType::kQ5_K_M) && UseMoreBits(s.attn_v_idx, s.num_attn_v)) {
      type = GgmlType::kQ6_K;
    }
    if (eight_experts) type = GgmlType::kQ8_0;  // llama.cpp: "trades just ~128MB"
    ++s.attn_v_idx;
  } else if (c == Category::kAttnK) {
    if (eight_experts) type = GgmlType::kQ8_0;
  } else if (c == Category::kFfnDown) {
    PAGELLM_ASSIGN_OR_RETURN(int64_t layer, FfnLayer(s, s.ffn_down_idx, t.name));
    const int64_t n = s.model.num_layers;
    if (f == GgufFileType::kQ4_K_M) {
      if (UseMoreBits(layer, n)) type = GgmlType::kQ6_K;
    } else if (layer < n / 8 && IsIq4(f)) {
      type = GgmlType::kQ5_K;
    } else if (f == GgufFileType::kQ5_K_M && UseMoreBits(layer, n)) {
      type = GgmlType::kQ6_K;
    }
    ++s.ffn_down_idx;
  } else if (c == Category::kAttnOutput) {
    if (eight_experts && (f == GgufFileType::kQ4_K_M || IsIq4(f))) type = GgmlType::kQ5_K;
  } else if (c == Category::kFfnGate || c == Category::kFfnUp) {
    // No rule for our file types, but llama.cpp still checks MoE names here.
    int64_t& idx = c == Category::kFfnGate ? s.ffn_gate_idx : s.ffn_up_idx;
    PAGELLM_RETURN_IF_ERROR(FfnLayer(s, idx, t.name).status());
    ++idx;
  }
  return type;
}

// tensor_type_fallback: rows that do not split into the type's blocks take a 32-value type,
// and F16 when 32 does not divide them either.
GgmlType FallbackType(GgmlType type, int64_t ncols) {
  if (ncols % GgmlBlockSize(type) == 0) return type;
  switch (type) {
    case GgmlType::kIQ4_XS: type = GgmlType::kIQ4_NL; break;
    case GgmlType::kQ4_K: type = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: type = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: type = GgmlType::kQ8_0; break;
    default: break;  // already a 32-value type
  }
  return ncols % GgmlBlockSize(type) == 0 ? type : GgmlType::kF16;
}

bool IsQuantizedType(GgmlType t) { return t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16; }

const GgufValue* FindKey(const GgufMetadata& metadata, std::string_view key) {
  for (const auto& [k, v] : metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

// A per-layer key may be one value or an array (then layer 0's); absent: `fallback`.
StatusOr<int64_t> LayerZeroInt(const GgufMetadata& metadata, const std::string& key, std::optional<int64_t> fallback) {
  const GgufValue* v = FindKey(metadata, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return NotFoundError(fmt::format("GGUF metadata has no '{}'", key));
  }
  if (!v->is_array()) return v->AsInt();
  PAGELLM_ASSIGN_OR_RETURN(std::vector<int64_t> values, v->AsIntArray());
  if (values.empty()) return InvalidArgumentError(fmt::format("GGUF metadata '{}' is an empty array", key));
  return values[0];
}

}  // namespace

std::string_view GgufFileTypeName(GgufFileType file_type) { return Info(file_type).name; }

StatusOr<GgufFileType> GgufFileTypeFromName(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (const FileTypeInfo& info : kFileTypes) {
    if (info.name == lower) return info.file_type;
  }
  return InvalidArgumentError(fmt::format("unknown llama.cpp file type '{}'", name));
}

GgmlType GgufFileTypeDefaultType(GgufFileType file_type) { return Info(file_type).default_type; }

StatusOr<GgufRecipeModel> GgufRecipeModelFromMetadata(const GgufMetadata& metadata) {
  const GgufValue* arch_value = FindKey(metadata, "general.architecture");
  if (arch_value == nullptr) return NotFoundError("GGUF metadata has no 'general.architecture'");
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, arch_value->AsString());
  GgufRecipeModel model;
  PAGELLM_ASSIGN_OR_RETURN(model.num_layers, LayerZeroInt(metadata, arch + ".block_count", std::nullopt));
  PAGELLM_ASSIGN_OR_RETURN(model.num_heads, LayerZeroInt(metadata, arch + ".attention.head_count", std::nullopt));
  PAGELLM_ASSIGN_OR_RETURN(model.num_kv_heads, LayerZeroInt(metadata, arch + ".attention.head_count_kv", model.num_heads));
  PAGELLM_ASSIGN_OR_RETURN(model.num_experts, LayerZeroInt(metadata, arch + ".expert_count", 0));
  return model;
}

StatusOr<std::vector<GgmlType>> GgufRecipeTypes(GgufFileType file_type, const GgufRecipeModel& model,
                                                const std::vector<GgufRecipeTensor>& tensors) {
  RecipeState state{.file_type = file_type, .model = model};
  std::vector<std::string> names;
  for (const GgufRecipeTensor& t : tensors) {
    const Category c = CategoryOf(t.name);
    state.num_attn_v += IsAttnVLike(c) ? 1 : 0;
    state.tied_embeddings = state.tied_embeddings && c != Category::kOutput;
    names.push_back(t.name);
  }
  std::vector<GgmlType> types(tensors.size());
  // The counters (attn_v_idx, dense ffn_down_idx) advance in llama-quantize's order.
  for (size_t i : GgufLlamaTensorOrder(names)) {
    const GgufRecipeTensor& t = tensors[i];
    if (!AllowsQuantization(t)) {
      types[i] = t.type;
      continue;
    }
    PAGELLM_ASSIGN_OR_RETURN(GgmlType chosen, ChooseType(state, t, CategoryOf(t.name)));
    types[i] = FallbackType(chosen, t.ne[0]);
    if (IsQuantizedType(t.type) && types[i] != t.type) {
      return InvalidArgumentError(fmt::format("tensor '{}' is already {}; requantizing to {} is not supported",
                                              t.name, GgmlTypeName(t.type), GgmlTypeName(types[i])));
    }
  }
  return types;
}

std::vector<size_t> GgufLlamaTensorOrder(const std::vector<std::string>& names) {
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_tuple(LayerOfName(names[a]), std::string_view(names[a])) <
           std::make_tuple(LayerOfName(names[b]), std::string_view(names[b]));
  });
  return order;
}

GgufMetadata GgufQuantizedMetadata(const GgufMetadata& input, GgufFileType file_type) {
  GgufMetadata out;
  for (const auto& [key, value] : input) {
    if (key == "general.quantization_version" || key == "general.file_type" || key == "split.no" ||
        key == "split.count" || key == "split.tensors.count") {
      continue;
    }
    out.emplace_back(key, value);
  }
  out.emplace_back("general.quantization_version", GgufValue::U32(2));  // GGML_QNT_VERSION
  out.emplace_back("general.file_type", GgufValue::U32(static_cast<uint32_t>(file_type)));
  return out;
}

std::vector<int64_t> GgmlTrimmedDims(const std::vector<int64_t>& ne) {
  if (ne.empty()) return {1};
  size_t n = ne.size();
  while (n > 1 && ne[n - 1] == 1) --n;
  return {ne.begin(), ne.begin() + static_cast<ptrdiff_t>(n)};
}

}  // namespace pagellm
