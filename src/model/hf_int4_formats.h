// The three Hugging Face int4 checkpoint layouts, read into an Int4Linear
// (model/hf_int4_linear.h). N = out_features, K = in_features, G = group size (-1: K),
// packing 8 nibbles into an int32 (nibble i = bits 4i..4i+3):
//
//   AWQ (GEMM)   P.qweight int32 [K, N/8]: nibble i of [k, c] = code of column n = 8c + kAwqOrder[i],
//                kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7} (AutoAWQ's pack order); P.qzeros int32
//                [K/G, N/8] packed alike, zeros as stored; P.scales f16 [K/G, N].
//   GPTQ         P.qweight int32 [K/8, N]: nibble j of [i, n] = code of input k = 8i + j;
//                P.qzeros int32 [K/G, N/8]: nibble j of [g, c] = zero of n = 8c + j, stored
//                minus 1 in checkpoint_format "gptq" (v1), as is in "gptq_v2"; P.scales
//                [K/G, N]; optional P.g_idx int32 [K], the group of each input (act-order:
//                any order, each group a multiple of 32 columns; ReadActOrder).
//   compressed-  P.weight_packed int32 [N, K/8]: nibble j of [n, c] = code of k = 8c + j (signed
//   tensors      int4 + 8); P.weight_scale [N, K/G]; P.weight_shape int32/int64 {N, K};
//                asymmetric: P.weight_zero_point int32 [ceil(N/8), K/G], nibble j of [r, g] =
//                zero of n = 8r + j (+ 8 like the codes); symmetric: zero 8. Optional
//                P.weight_g_idx as GPTQ's g_idx.
// Every shape and dtype is checked; errors name the tensor.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "model/hf_int4_linear.h"
#include "model/hf_quant_config.h"
#include "model/hf_quant_tensors.h"
#include "model/tensor_source.h"

namespace pagellm {

// Where an int4 module of `method` (awq, gptq or compressed-tensors) keeps its tensors:
// marker "qweight" / "weight_packed", and every suffix the repacking consumes.
HfModuleLayout Int4Layout(HfQuantMethod method);

// Reads module `prefix` ("model.layers.0.self_attn.q_proj", no trailing dot) of `source`.
// The returned reader borrows `source`'s tensors: use it while `source` lives.
StatusOr<Int4Linear> ReadInt4Linear(const TensorSource& source, const std::string& prefix,
                                    const HfQuantConfig& config);

}  // namespace pagellm
