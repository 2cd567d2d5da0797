// GgufTensorSource: the tensors of a GGUF file under their Hugging Face names, as a
// TensorSource that BindWeights checks and binds like a safetensors checkpoint.
//
//   PAGELLM_ASSIGN_OR_RETURN(std::shared_ptr<const GgufFile> gguf, OpenSharedGguf("m.gguf"));
//   PAGELLM_ASSIGN_OR_RETURN(auto source, GgufTensorSource::Create(gguf, std::nullopt));  // auto
//   PAGELLM_ASSIGN_OR_RETURN(ModelWeights weights, BindGgufWeights(config, *source));
//   // MTP speculation: Create(gguf, dtype, /*with_mtp=*/true), BindGgufWeights(config, *source, true).
//
// With a `dtype` (bf16, f16 or f32) every tensor comes out in that dtype:
//   - F32/F16/BF16 tensors already in `dtype` are views into the mapped file (no copy);
//   - other float tensors are converted (round-to-nearest-even);
//   - quantized tensors (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) are dequantized exactly as
//     llama.cpp does and then rounded to `dtype` (f32 keeps them exact).
// Without one (`--dtype auto`), tensors keep the file's types where the model can run
// them: F32/F16/BF16 and Q8_0 (DType::kQ8_0, the backend's native int8 path) are views
// into the mapping; other quantized types are dequantized to bf16. The result mixes
// dtypes (e.g. Q8_0 linears with F32 norms), which QwenModel reads per tensor.
// GGUF shapes are ggml order (ne[0] fastest); views use PyTorch order (reversed).
// Tensors with no Hugging Face name for the architecture are skipped with a warning.
// Hybrid archs (qwen3next, qwen35, qwen35moe) are read through the inverse of llama.cpp's
// converter transformations (model/gguf_hybrid_plan.h): norms - 1, A_log = log(-ssm_a),
// value heads back to grouped order, experts unstacked, Qwen3-Next in_proj_qkvz rebuilt;
// tensors a transformation touches are copies (f32 where an element op applies), the
// others stay views into the file.
// The multi-token-prediction head (llama.cpp's NextN block: the blk.N >= num_hidden_layers of
// {arch}.nextn_predict_layers) is read, the same way back to its HF mtp.* names and
// convention (zero-centred norms: w - 1), only when asked for (with_mtp); otherwise its
// tensors are not touched.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_file.h"
#include "model/config.h"
#include "model/tensor_source.h"
#include "model/weights.h"
#include "tensor/dtype.h"

namespace pagellm {

// GgufFile::Open into a shared_ptr (the source and ModelWeights::storage share the mapping).
StatusOr<std::shared_ptr<const GgufFile>> OpenSharedGguf(const std::string& path);

class GgufTensorSource final : public TensorSource {
 public:
  // Precondition: dtype, if given, in {kBF16, kF16, kF32}. Fails naming the tensor on a
  // malformed one. with_mtp also provides the NextN block's tensors as mtp.* (when the file
  // has one).
  static StatusOr<std::unique_ptr<GgufTensorSource>> Create(std::shared_ptr<const GgufFile> gguf,
                                                            std::optional<DType> dtype, bool with_mtp = false);

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Origin(const std::string& name) const override;
  std::vector<std::shared_ptr<const void>> Storage() const override;

  // Bytes allocated for converted/dequantized tensors (0 when every view is zero-copy).
  size_t converted_bytes() const { return converted_bytes_; }

 private:
  struct Entry {
    TensorView view;
    std::string gguf_name;
    std::shared_ptr<void> buffer;  // null for views into the file
    std::shared_ptr<const std::vector<int32_t>> column_order;  // behind view.column_order, if set
  };
  GgufTensorSource() = default;
  Status AddTensor(const GgufTensorInfo& info, const std::string& hf_name, std::optional<DType> dtype);
  // `info` as an entry of dtype `target` (default: its natural dtype), zero-copy when possible.
  // keep_kquant: a 2-D (or 3-D expert stack) Q4_K / Q5_K / Q6_K / Q4_0 / Q5_0 / IQ4_NL tensor stays in the
  // mapping as its DType (the backends run it natively) unless `target` asks for a float dtype.
  Status MakeEntry(const GgufTensorInfo& info, std::optional<DType> target, Entry& entry, bool keep_kquant = false);
  // Qwen3-MoE and hybrid archs: every HF tensor of the file's config (and its MTP head's,
  // with_mtp) from the inverse plans (model/gguf_hybrid_plan.h), then converted to `target`
  // if given.
  Status AddPlannedTensors(const std::string& arch, std::optional<DType> target, bool with_mtp);
  Status ConvertEntry(DType target, Entry& entry);

  std::shared_ptr<const GgufFile> gguf_;
  std::map<std::string, Entry> tensors_;
  size_t converted_bytes_ = 0;
};

// The dtype a GGUF tensor type binds as under `--dtype auto`: F32 -> kF32, F16 -> kF16,
// BF16 -> kBF16, Q8_0 -> kQ8_0; other quantized types -> kBF16 (dequantized).
DType NaturalDType(GgmlType type);

// Like BindWeights (same names, shapes and messages) but accepts mixed dtypes and kQ8_0
// for 2-D weights. ModelWeights::dtype is the type of the linear weights (layer 0 q_proj).
// with_mtp also binds ModelWeights::mtp (ListMtpWeightSpecs, from a source made with_mtp);
// NotFound naming --speculative-config method mtp when the file has no NextN block.
StatusOr<ModelWeights> BindGgufWeights(const ModelConfig& config, const TensorSource& source, bool with_mtp = false);

}  // namespace pagellm
