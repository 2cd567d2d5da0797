// Int8Linear: one int8 linear [N, K] the way every per-channel int8 Hugging Face format
// reduces to it (a signed code per weight and one scale per output row; value = code *
// scale), and its repacking into Q8_S blocks (tensor/kquant_blocks.h).
//
//   PAGELLM_ASSIGN_OR_RETURN(Int8Linear linear, ReadInt8Linear(source, prefix, config));  // hf_int8_formats.h
//   std::shared_ptr<void> buffer;
//   TensorView w = PackQ8_S(linear, buffer);  // kQ8_S [N, K]
//
// Q8_S block (n, b) holds codes 32b..32b+31 of row n and row n's scale as a float: every
// f32, bf16 or f16 scale exactly, so the repacking is lossless (DequantizeRowQ8_S gives
// code * scale), and every block of a row shares its scale, which the backends' W8A8 needs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

struct Int8Linear {
  std::string name;           // module prefix, for messages ("model.layers.0.mlp.up_proj")
  int64_t n = 0, k = 0;       // out_features, in_features (k % 32 == 0)
  std::vector<float> scales;  // [n]
  // Writes the codes of rows [row0, row0 + rows) to codes[(row - row0) * k + column].
  // Called from several threads at once on disjoint rows.
  std::function<void(int64_t row0, int64_t rows, int8_t* codes)> read_codes;
};

// OK when Q8_S can hold `k` input columns (k % 32 == 0); else InvalidArgument naming `tensor`.
Status CheckQ8_SColumns(const std::string& tensor, int64_t k);

// The scales of `t` (f32, bf16 or f16) as one float per output row: [n, 1] or [n] per
// channel; [1], [1, 1] or [] for one scale per tensor, repeated for every row. Other shapes
// (groups) and non-finite values are InvalidArgument naming `tensor`.
StatusOr<std::vector<float>> ReadRowScales(const TensorView& t, const std::string& tensor, int64_t n);

// kQ8_S [n, k] in a new 64-byte aligned buffer (owned by `buffer`), filled in parallel.
TensorView PackQ8_S(const Int8Linear& linear, std::shared_ptr<void>& buffer);

}  // namespace pagellm
