// HfQuantTensorSource: a quantized Hugging Face checkpoint seen the way weight binding
// expects it: every quantized linear module P shows one tensor `P.weight` [out_features,
// in_features], and the tensors it was made of are hidden. What P.weight becomes:
//
//   int4 (AWQ, GPTQ, compressed-tensors W4A16)                 kQ4_Z, rearranged losslessly
//   int8 per channel (compressed-tensors W8A8 / W8A16, GPTQ
//   8-bit, msModelSlim W8A8_DYNAMIC)                           kQ8_S, rearranged losslessly
//   fp8 (e4m3, block or tensor scales)                         `float_dtype`, dequantized
//
// Everything else (embeddings, norms, biases, lm_head and any linear kept float) passes
// through untouched.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(dir));
//   PAGELLM_ASSIGN_OR_RETURN(auto source, HfQuantTensorSource::Create(*ckpt, quant_config, DType::kBF16));
//   PAGELLM_ASSIGN_OR_RETURN(ModelWeights w, BindWeights(config, *source));
//
// Which modules are quantized is read off the tensors (a module with the format's marker
// tensor: P.qweight, P.weight_packed, P.weight_scale, P.weight_scale_inv), not off `ignore`
// / modules_to_not_convert, so a router or lm_head stored float stays float whatever those
// lists say. The converted weights live in buffers this source owns (Storage() hands them
// out); the consumed tensors' file pages are dropped once copied.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/hf_quant_config.h"
#include "model/tensor_source.h"

namespace pagellm {

// The tensor suffix that marks a module of `config`'s format as quantized ("qweight",
// "weight_packed", "weight_scale" or "weight_scale_inv").
std::string HfQuantMarkerSuffix(const HfQuantConfig& config);

class HfQuantTensorSource final : public TensorSource {
 public:
  // Converts every quantized module of `base` in `config`'s format (config.quantized());
  // fp8 weights become `float_dtype` (bf16, f16 or f32: the model's run dtype, so they are
  // rounded once). `base` must outlive the returned source. Errors name the offending tensor.
  static StatusOr<std::unique_ptr<HfQuantTensorSource>> Create(const TensorSource& base, const HfQuantConfig& config,
                                                               DType float_dtype = DType::kBF16);

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Origin(const std::string& name) const override;
  std::vector<std::shared_ptr<const void>> Storage() const override;

  size_t num_repacked() const { return repacked_.size(); }

 private:
  HfQuantTensorSource(const TensorSource& base, HfQuantConfig config, DType float_dtype)
      : base_(base), config_(std::move(config)), float_dtype_(float_dtype) {}
  Status Repack(const std::string& prefix);
  // Module `prefix` in its target form (q4_z, q8_s or float_dtype_), in a buffer `buffer` owns.
  StatusOr<TensorView> Convert(const std::string& prefix, std::shared_ptr<void>& buffer) const;
  void LogRun() const;

  struct Entry {
    TensorView view;
    std::shared_ptr<void> buffer;
    std::string from;  // the checkpoint tensor it was made of, for Origin()
  };
  const TensorSource& base_;
  HfQuantConfig config_;
  DType float_dtype_;
  std::map<std::string, Entry> repacked_;  // "P.weight"
  std::set<std::string> hidden_;           // consumed checkpoint tensors
};

}  // namespace pagellm
