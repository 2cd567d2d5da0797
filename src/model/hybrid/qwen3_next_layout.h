// Qwen3-Next's grouped GDN projections -> the flat Qwen3.5 layout
// (docs/qwen-architectures.md §4.2, §5.2 item 5).
//
// Qwen3-Next fuses in_proj_qkvz: per key group g a row [q_g | k_g | v_{g*r..} | z_{g*r..}]
// ([nk, 2dk + 2r dv]), and in_proj_ba: per group [b_{g*r..} | a_{g*r..}] ([nk, 2r]).
// Qwen3.5 (and every kernel here) uses [q (nk dk) | k (nk dk) | v (nv dv)], z [nv dv],
// b [nv], a [nv], value head index g*r + j. Both are a fixed permutation, so a loader
// should permute the weight ROWS once (no per-token cost); the activation form is for
// tests and for loaders that keep the fused weight.
//
//   std::vector<int64_t> src = Qwen3NextQkvzSourceIndex(dims);  // flat idx -> grouped idx
//   for (int64_t r = 0; r < n; ++r) copy weight row src[r] to new row r;
//   // then new rows [0, conv_dim) are in_proj_qkv, [conv_dim, conv_dim + value_dim) in_proj_z
#pragma once

#include <cstdint>
#include <vector>

#include "model/hybrid/gdn_dims.h"

namespace pagellm {

// [conv_dim + value_dim]: entry f is the grouped index (in x Wqkvz^T) of flat index f of
// [q | k | v | z].
std::vector<int64_t> Qwen3NextQkvzSourceIndex(const GdnDims& dims);

// [2 * nv]: entry f is the grouped index (in x Wba^T) of flat index f of [b | a].
std::vector<int64_t> Qwen3NextBaSourceIndex(const GdnDims& dims);

// dst[t, f] = src[t, source_index[f]] for t < num_rows; src [T, n], dst [T, n], n =
// source_index.size(). dst must not alias src.
void GatherColumns(const float* src, int64_t num_rows, const std::vector<int64_t>& source_index, float* dst);

}  // namespace pagellm
