// Int4Linear: one int4 quantized linear [N, K] the way every Hugging Face format reduces
// to it (a code 0..15 per weight; an integer zero and an fp16 scale per row and group of
// G input columns; value = (code - zero) * scale), and its repacking into Q4_Z blocks.
//
//   PAGELLM_ASSIGN_OR_RETURN(Int4Linear linear, ReadInt4Linear(source, prefix, config));  // hf_int4_formats.h
//   std::shared_ptr<void> buffer;
//   TensorView w = PackQ4_Z(linear, buffer);  // kQ4_Z [N, K]
//
// Q4_Z block (n, b) covers columns 32b..32b+31 of row n and takes its group's (scale,
// zero): a group of G columns repeats them in its G / 32 blocks, so the repacking is
// lossless: DequantizeRowKQuant gives exactly (code - zero) * scale in float32.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

struct Int4Linear {
  std::string name;      // module prefix, for messages ("model.layers.0.mlp.up_proj")
  int64_t n = 0, k = 0;  // out_features, in_features
  int64_t group = 0;     // G: divides k, a multiple of 32 (or k itself)
  std::vector<uint16_t> scales;  // fp16 bits, [n, k / G]
  std::vector<uint8_t> zeros;    // 0..15, [n, k / G]
  // Writes the codes of rows [row0, row0 + rows) to codes[(row - row0) * k + column].
  // Called from several threads at once on disjoint rows.
  std::function<void(int64_t row0, int64_t rows, uint8_t* codes)> read_codes;

  int64_t groups() const { return k / group; }
};

// OK when Q4_Z can hold a [n, k] linear of group size `group` (-1: k): k % 32 == 0 and G a
// multiple of 32 dividing k (or G = k); else InvalidArgument naming `tensor`.
StatusOr<int64_t> ResolveQ4_ZGroup(const std::string& tensor, int64_t k, int64_t group);

// The scales of `t` (f16, bf16 or f32) as fp16 bits in [n, groups] order; `t` is
// [groups, n] when `groups_first` (AWQ, GPTQ) else [n, groups] (compressed-tensors).
// InvalidArgument naming `tensor` and the first value fp16 cannot hold exactly (checked
// by a round trip), so no scale is silently rounded.
StatusOr<std::vector<uint16_t>> ReadScalesAsF16(const TensorView& t, const std::string& tensor, int64_t n,
                                                int64_t groups, bool groups_first);

// kQ4_Z [n, k] in a new 64-byte aligned buffer (owned by `buffer`), filled in parallel.
TensorView PackQ4_Z(const Int4Linear& linear, std::shared_ptr<void>& buffer);

}  // namespace pagellm
