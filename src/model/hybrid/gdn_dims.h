// GdnDims: the shape of one Gated DeltaNet (linear-attention) layer of Qwen3-Next /
// Qwen3.5, and the value-head -> key-head mapping (docs/qwen-architectures.md §4).
//
//   GdnDims dims{.num_k_heads = 16, .num_v_heads = 16, .k_head_dim = 128, .v_head_dim = 128};
//   PAGELLM_RETURN_IF_ERROR(ValidateGdnDims(dims));
//   int64_t conv_dim = dims.conv_dim();          // 2 * key_dim + value_dim
//   int64_t kh = dims.KeyHeadOf(value_head_idx);  // which q/k head a value head reads
#pragma once

#include <cstdint>

#include "common/status.h"

namespace pagellm {

// How value head j picks its q/k head when nv > nk (r = nv / nk).
enum class GdnHeadMapping {
  kGrouped,  // j / r: HF safetensors order (repeat_interleave)
  kTiled,    // j % nk: llama.cpp GGUF order (converter reorders value heads, §5.2 item 6)
};

struct GdnDims {
  int64_t num_k_heads = 0;  // nk
  int64_t num_v_heads = 0;  // nv, a multiple of nk
  int64_t k_head_dim = 0;   // dk, multiple of 16 (SIMD width), <= kGdnMaxHeadDim
  int64_t v_head_dim = 0;   // dv, multiple of 16, <= kGdnMaxHeadDim
  int64_t conv_kernel = 4;  // K
  GdnHeadMapping head_mapping = GdnHeadMapping::kGrouped;

  int64_t key_dim() const { return num_k_heads * k_head_dim; }
  int64_t value_dim() const { return num_v_heads * v_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  int64_t heads_ratio() const { return num_v_heads / num_k_heads; }  // r
  int64_t KeyHeadOf(int64_t v_head_idx) const {
    return head_mapping == GdnHeadMapping::kGrouped ? v_head_idx / heads_ratio() : v_head_idx % num_k_heads;
  }
  // Recurrent state floats per sequence: [nv, dk, dv].
  int64_t state_floats() const { return num_v_heads * k_head_dim * v_head_dim; }
  // Conv state floats per sequence: [K-1, conv_dim].
  int64_t conv_state_floats() const { return (conv_kernel - 1) * conv_dim(); }
};

inline constexpr int64_t kGdnMaxHeadDim = 256;
inline constexpr int64_t kGdnChunkSize = 64;  // C in §4.5

// InvalidArgument unless every count is positive, nv % nk == 0, dk and dv are multiples
// of 16 and <= kGdnMaxHeadDim, and 1 <= K <= 8.
Status ValidateGdnDims(const GdnDims& dims);

}  // namespace pagellm
