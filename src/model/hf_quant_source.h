// HfQuantTensorSource: a Hugging Face int4 checkpoint (AWQ, GPTQ, compressed-tensors
// pack-quantized) seen the way weight binding expects it: every quantized linear module P
// shows one tensor `P.weight` [out_features, in_features] of DType::kQ4_Z, and the
// tensors it was made of (P.qweight, P.qzeros, P.scales, P.g_idx / P.weight_packed,
// P.weight_scale, ...) are hidden. Everything else (embeddings, norms, biases, lm_head and
// any linear kept float) passes through untouched.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(dir));
//   PAGELLM_ASSIGN_OR_RETURN(auto source, HfQuantTensorSource::Create(*ckpt, quant_config));
//   PAGELLM_ASSIGN_OR_RETURN(ModelWeights w, BindWeights(config, *source));
//
// Which modules are quantized is read off the tensors (a module with P.qweight /
// P.weight_packed), not off `ignore` / modules_to_not_convert, so a router or lm_head
// stored float stays float whatever those lists say. The Q4_Z weights live in buffers
// this source owns (Storage() hands them out); the repacked tensors' file pages are
// dropped once copied.
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

class HfQuantTensorSource final : public TensorSource {
 public:
  // Repacks every quantized module of `base` in `config`'s format (config.quantized()).
  // `base` must outlive the returned source. Errors name the offending tensor.
  static StatusOr<std::unique_ptr<HfQuantTensorSource>> Create(const TensorSource& base, const HfQuantConfig& config);

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Origin(const std::string& name) const override;
  std::vector<std::shared_ptr<const void>> Storage() const override;

  size_t num_repacked() const { return repacked_.size(); }

 private:
  HfQuantTensorSource(const TensorSource& base, HfQuantConfig config) : base_(base), config_(std::move(config)) {}
  Status Repack(const std::string& prefix);

  struct Entry {
    TensorView view;
    std::shared_ptr<void> buffer;
    std::string from;  // the checkpoint tensor it was made of, for Origin()
  };
  const TensorSource& base_;
  HfQuantConfig config_;
  std::map<std::string, Entry> repacked_;  // "P.weight"
  std::set<std::string> hidden_;           // consumed checkpoint tensors
};

}  // namespace pagellm
