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
//
// Act-order (GPTQ desc_act, compressed-tensors actorder "group"): g_idx[k] names the group
// of input column k in any order. The columns are stored sorted by group (stable, as
// Marlin's g_idx_sort_indices), so each group is a run of whole q4_z blocks, and the view's
// TensorView::column_order says which input column each stored column multiplies: the
// linear gathers x[:, column_order] first and computes exactly the logical weight.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/tensor_source.h"
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
  // Act-order: stored column j is input column column_order[j] ([k]; empty: the identity),
  // and stored block b (columns 32b..32b+31) lies in group block_groups[b] ([k / 32];
  // empty: group 32 b / G). Set by ReadActOrder; read_codes keeps the input order.
  std::vector<int32_t> column_order;
  std::vector<int32_t> block_groups;

  int64_t groups() const { return k / group; }
};

// Reads the optional g_idx tensor `name` (int32 [k]: the group of each input column) of a
// linear whose k, group, and scales' group count are set, into linear.column_order and
// block_groups (column_order stays empty when g_idx keeps the input order). InvalidArgument
// naming `name` for an index outside [0, k / G) or a group whose member count is not a
// multiple of 32 (it would share a q4_z block, and so one (scale, zero), with another
// group). OK and nothing set when `name` is absent.
Status ReadActOrder(const TensorSource& source, const std::string& name, Int4Linear& linear);

// OK when Q4_Z can hold a [n, k] linear of group size `group` (-1: k): k % 32 == 0 and G a
// multiple of 32 dividing k (or G = k); else InvalidArgument naming `tensor`.
StatusOr<int64_t> ResolveQ4_ZGroup(const std::string& tensor, int64_t k, int64_t group);

// The scales of `t` (f16, bf16 or f32) as fp16 bits in [n, groups] order; `t` is
// [groups, n] when `groups_first` (AWQ, GPTQ) else [n, groups] (compressed-tensors).
// InvalidArgument naming `tensor` and the first value fp16 cannot hold exactly (checked
// by a round trip), so no scale is silently rounded.
StatusOr<std::vector<uint16_t>> ReadScalesAsF16(const TensorView& t, const std::string& tensor, int64_t n,
                                                int64_t groups, bool groups_first);

// kQ4_Z [n, k] in a new 64-byte aligned buffer (owned by `buffer`), filled in parallel; an
// act-order linear's column order follows the blocks in the same buffer, behind the view's
// column_order.
TensorView PackQ4_Z(const Int4Linear& linear, std::shared_ptr<void>& buffer);

}  // namespace pagellm
