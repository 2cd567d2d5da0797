// Weight binding: turns a bag of named tensors (a checkpoint) into ModelWeights,
// checking every tensor against the config.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(dir));
//   PAGELLM_ASSIGN_OR_RETURN(ModelWeights weights, BindWeights(config, *ckpt));
//   PAGELLM_ASSIGN_OR_RETURN(weights, ConvertWeights(weights, DType::kF32));  // --dtype float32
//
// Names and shapes come from ListWeightSpecs (HF naming). A missing tensor, a wrong
// shape or a dtype outside {bf16, f16, f32} fails naming the tensor and both shapes;
// extra tensors (e.g. rotary inv_freq, lm_head of a tied model) only log a warning.
// The exceptions to float: q4_z and q8_s (HF int4 / int8 checkpoints,
// model/hf_quant_source.h) for the decoder layers' 2-D linear projections (attention, MLP,
// experts, GDN projections).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/config.h"
#include "model/tensor_source.h"
#include "model/weights.h"

namespace pagellm {

// Binds views into `source` (no copy). If the checkpoint mixes float dtypes, every float
// tensor is converted to `mixed_float_dtype` when given (the loader passes the run dtype,
// so a view already in it, e.g. an fp8 linear dequantized to f32, is not rounded through
// another dtype), else to the majority one, so the float views share one dtype (see
// weights.h); quantized views are kept as they are and then name ModelWeights::dtype.
// with_mtp also binds the multi-token-prediction head (ListMtpWeightSpecs; NotFound,
// naming the speculative method, when the checkpoint has none); otherwise mtp.* tensors
// are skipped with one info line.
StatusOr<ModelWeights> BindWeights(const ModelConfig& config, const TensorSource& source,
                                   std::optional<DType> mixed_float_dtype = std::nullopt, bool with_mtp = false);

// A copy of `weights` with every float tensor converted to float `dtype` (new buffers;
// tied lm_head keeps sharing the embedding; quantized views untouched). Returns
// `weights` unchanged if its float views are already `dtype`.
StatusOr<ModelWeights> ConvertWeights(const ModelWeights& weights, DType dtype);

// Resolves a user `--dtype` ("auto", "bfloat16", "float16", "float32", "half", ...)
// against the checkpoint's dtype: "auto" keeps `checkpoint_dtype`.
StatusOr<DType> ResolveDtype(const std::string& dtype, DType checkpoint_dtype);

// Bytes of all distinct tensors (tied lm_head counted once).
uint64_t WeightBytes(const ModelWeights& weights);

// One storage format of one tensor group: "embed", "lm_head" (absent when tied),
// "attention" (q/k/v/o and the Gated DeltaNet projections), "mlp" (dense and shared-expert
// gate/up/down), "experts" (routed experts), "mtp" (the multi-token-prediction head, when
// loaded), "other" (norms, routers, conv kernels, ...).
struct WeightFormat {
  std::string group;
  DType dtype = DType::kF32;
  int64_t tensors = 0;
  uint64_t bytes = 0;
};
std::vector<WeightFormat> WeightFormats(const ModelWeights& weights);

// The storage formats per tensor group, for the memory plan's log line, e.g.
// "embed q6_K x1 127.60 MiB (lm_head tied); attention q4_K x98 + q6_K x14 61.20 MiB; mlp ...; other f32 x113".
std::string WeightFormatSummary(const ModelWeights& weights);

}  // namespace pagellm
