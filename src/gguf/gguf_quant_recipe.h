// llama-quantize's recipe: which ggml type each tensor of a model gets for a llama.cpp file
// type such as Q4_K_M (llama_tensor_get_type and its helpers in llama.cpp's
// src/llama-quant.cpp, default parameters: no imatrix, no overrides, output tensor
// quantized), and the order and metadata llama-quantize writes the file with.
//
//   GgufRecipeModel model{.num_layers = 28, .num_heads = 16, .num_kv_heads = 8};
//   std::vector<GgufRecipeTensor> tensors = {{"token_embd.weight", {1024, 151936}, GgmlType::kF16}, ...};
//   PAGELLM_ASSIGN_OR_RETURN(std::vector<GgmlType> types,
//                            GgufRecipeTypes(GgufFileType::kQ4_K_M, model, tensors));
//
// The rules that apply to the Qwen families pagellm writes (qwen2, qwen3, qwen3moe, qwen3next,
// qwen35, qwen35moe):
//  - Only tensors with >= 2 dims whose names end in "weight" are quantized, minus norms, the
//    MoE router (ffn_gate_inp), ssm_conv1d and a few tensors of other archs; the rest keep
//    their type (F32 in pagellm's files).
//  - output.weight, or token_embd.weight when there is no output.weight (tied embeddings):
//    Q6_K, or Q8_0 when its rows are not a multiple of the file type's block size.
//  - attn_v / attn_qkv (counted together in file order) and ffn_down of layer i of n get Q6_K
//    in Q4_K_M and Q5_K_M when use_more_bits(i, n): i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2.
//  - IQ4_NL / IQ4_XS: attn_v Q5_K when n_head / n_head_kv >= 4, ffn_down Q5_K for i < n/8.
//  - 8 experts exactly: attn_v and attn_k Q8_0; attn_output Q5_K in Q4_K_M, IQ4_NL, IQ4_XS.
//  - Rows not a multiple of the chosen type's block fall back: Q4_K -> Q5_0, Q5_K -> Q5_1,
//    Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, and to F16 when even 32 does not divide them.
// ffn_down's layer is its index among the ffn_down tensors for dense models and the blk.N of
// its name for MoE models (so ffn_down_shexp and ffn_down_exps share it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_types.h"

namespace pagellm {

// llama_ftype values (llama.h), stored as general.file_type: the quantized file types
// pagellm's quantizers can make as llama-quantize does.
enum class GgufFileType : uint32_t {
  kQ4_0 = 2,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ4_K_M = 15,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
};

// "q4_k_m", "iq4_xs", ... (llama-quantize's names, lower case; parsing ignores case).
std::string_view GgufFileTypeName(GgufFileType file_type);
StatusOr<GgufFileType> GgufFileTypeFromName(std::string_view name);
// The type most tensors get (llama_ftype_get_default_type): Q4_K for Q4_K_M, ...
GgmlType GgufFileTypeDefaultType(GgufFileType file_type);

// The hyperparameters the recipe reads.
struct GgufRecipeModel {
  int64_t num_layers = 0;    // {arch}.block_count
  int64_t num_heads = 0;     // {arch}.attention.head_count (layer 0's when per layer)
  int64_t num_kv_heads = 0;  // {arch}.attention.head_count_kv (default: num_heads)
  int64_t num_experts = 0;   // {arch}.expert_count, 0 for dense models
};

// Reads GgufRecipeModel from a file's metadata (general.architecture names the {arch} prefix).
StatusOr<GgufRecipeModel> GgufRecipeModelFromMetadata(const GgufMetadata& metadata);

struct GgufRecipeTensor {
  std::string name;         // GGUF name, e.g. "blk.3.ffn_down.weight"
  std::vector<int64_t> ne;  // ggml order
  GgmlType type;            // its type in the input (F16 file)
};

// The type of each tensor (parallel to `tensors`). Errors: a quantized input tensor that
// would change type (llama-quantize refuses to requantize), or an MoE tensor whose name has
// no valid layer.
StatusOr<std::vector<GgmlType>> GgufRecipeTypes(GgufFileType file_type, const GgufRecipeModel& model,
                                                const std::vector<GgufRecipeTensor>& tensors);

// The order llama-quantize writes tensors in (its loader's weight map): tensors outside a
// "blk.N." first, then by layer N, each group by name. Returns indices into `names`.
std::vector<size_t> GgufLlamaTensorOrder(const std::vector<std::string>& names);

// The metadata llama-quantize writes: the input's keys in order (minus split.*), with
// general.quantization_version (2) and general.file_type moved to the end.
GgufMetadata GgufQuantizedMetadata(const GgufMetadata& input, GgufFileType file_type);

// ggml_n_dims: `ne` without trailing 1s (at least one dim), as llama.cpp's writer stores it.
std::vector<int64_t> GgmlTrimmedDims(const std::vector<int64_t>& ne);

}  // namespace pagellm
