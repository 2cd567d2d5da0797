#include "model/gguf_weights.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "common/logging.h"
#include "gguf/gguf_names.h"
#include "gguf/gguf_quants.h"
#include "model/convert.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

bool IsFloatType(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16;
}

// Dequantizes `info` (rows of ne[0] values) into `dst` of dtype `dst.dtype`, a chunk of
// rows per task so the float32 scratch stays small.
Status DequantizeInto(const GgufTensorInfo& info, const TensorView& dst) {
  const int64_t row_len = info.ne[0];
  const int64_t num_rows = info.num_elements / row_len;
  const size_t row_bytes = GgmlRowBytes(info.type, row_len);
  const int64_t rows_per_chunk = std::max<int64_t>(1, 65536 / row_len);
  std::vector<Status> errors;
  std::mutex mu;
  ParallelFor(num_rows, rows_per_chunk, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(rows_per_chunk * row_len));
    for (int64_t r = begin; r < end; r += rows_per_chunk) {
      int64_t n_rows = std::min(rows_per_chunk, end - r);
      int64_t n = n_rows * row_len;
      Status s = Dequantize(info.type, info.data.subspan(static_cast<size_t>(r) * row_bytes, n_rows * row_bytes), n,
                            scratch.data());
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back(std::move(s));
        return;
      }
      TensorView src{scratch.data(), DType::kF32, {n}};
      TensorView out{static_cast<char*>(dst.data) + r * row_len * DTypeSize(dst.dtype), dst.dtype, {n}};
      ConvertTensor(src, out);
    }
  });
  return errors.empty() ? OkStatus() : errors.front();
}

// The ModelWeights field HF tensor `spec` binds to (the same table as BindWeights).
TensorView* SlotFor(ModelWeights& w, const WeightSpec& spec) {
  switch (spec.role) {
    case WeightRole::kEmbedding: return &w.embed_tokens;
    case WeightRole::kLmHead: return &w.lm_head;
    case WeightRole::kFinalNorm: return &w.norm;
    default: break;
  }
  LayerWeights& l = w.layers[static_cast<size_t>(spec.layer_idx)];
  static const std::map<std::string, TensorView LayerWeights::*, std::less<>> kFields = {
      {"input_layernorm.weight", &LayerWeights::input_layernorm},
      {"self_attn.q_proj.weight", &LayerWeights::q_proj},
      {"self_attn.k_proj.weight", &LayerWeights::k_proj},
      {"self_attn.v_proj.weight", &LayerWeights::v_proj},
      {"self_attn.q_proj.bias", &LayerWeights::q_bias},
      {"self_attn.k_proj.bias", &LayerWeights::k_bias},
      {"self_attn.v_proj.bias", &LayerWeights::v_bias},
      {"self_attn.o_proj.weight", &LayerWeights::o_proj},
      {"self_attn.o_proj.bias", &LayerWeights::o_bias},
      {"self_attn.q_norm.weight", &LayerWeights::q_norm},
      {"self_attn.k_norm.weight", &LayerWeights::k_norm},
      {"post_attention_layernorm.weight", &LayerWeights::post_attention_layernorm},
      {"mlp.gate_proj.weight", &LayerWeights::gate_proj},
      {"mlp.up_proj.weight", &LayerWeights::up_proj},
      {"mlp.down_proj.weight", &LayerWeights::down_proj},
  };
  std::string_view suffix = std::string_view(spec.name).substr(fmt::format("model.layers.{}.", spec.layer_idx).size());
  auto it = kFields.find(suffix);
  PAGELLM_CHECK(it != kFields.end());
  return &(l.*(it->second));
}

}  // namespace

StatusOr<ModelWeights> BindGgufWeights(const ModelConfig& config, const TensorSource& source) {
  ModelWeights w;
  w.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  for (const WeightSpec& spec : ListWeightSpecs(config)) {
    const TensorView* view = source.Find(spec.name);
    if (view == nullptr) {
      return NotFoundError(fmt::format("checkpoint is missing tensor '{}' (expected shape {})", spec.name,
                                       ShapeToString(spec.shape)));
    }
    if (view->shape != spec.shape) {
      return InvalidArgumentError(fmt::format("tensor '{}' in {} has shape {} but the config implies {}", spec.name,
                                              source.Origin(spec.name), ShapeToString(view->shape),
                                              ShapeToString(spec.shape)));
    }
    if (view->dtype == DType::kQ8_0 && (spec.shape.size() != 2 || spec.shape[1] % kQ8_0BlockElements != 0)) {
      return InvalidArgumentError(fmt::format("tensor '{}' in {}: Q8_0 is supported for 2-D weights only",
                                              spec.name, source.Origin(spec.name)));
    }
    *SlotFor(w, spec) = *view;
  }
  if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
  w.storage = source.Storage();
  w.dtype = w.layers.empty() ? w.embed_tokens.dtype : w.layers[0].q_proj.dtype;
  return w;
}

DType NaturalDType(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return DType::kF32;
    case GgmlType::kF16: return DType::kF16;
    case GgmlType::kQ8_0: return DType::kQ8_0;
    default: return DType::kBF16;
  }
}

StatusOr<std::shared_ptr<const GgufFile>> OpenSharedGguf(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
  return std::shared_ptr<const GgufFile>(std::move(gguf));
}

StatusOr<std::unique_ptr<GgufTensorSource>> GgufTensorSource::Create(std::shared_ptr<const GgufFile> gguf,
                                                                     std::optional<DType> dtype) {
  PAGELLM_CHECK(!dtype || *dtype == DType::kBF16 || *dtype == DType::kF16 || *dtype == DType::kF32);
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, gguf->GetString("general.architecture"));
  std::unique_ptr<GgufTensorSource> source(new GgufTensorSource());
  source->gguf_ = std::move(gguf);
  std::vector<std::string> skipped;
  for (const GgufTensorInfo& info : source->gguf_->tensors()) {
    StatusOr<std::string> hf_name = GgufToHfTensorName(arch, info.name);
    if (!hf_name.ok()) {
      skipped.push_back(info.name);
      continue;
    }
    PAGELLM_RETURN_IF_ERROR(source->AddTensor(info, *hf_name, dtype));
  }
  if (!skipped.empty()) {
    PLOG_WARN("{}: ignoring {} GGUF tensor(s) with no {} counterpart, e.g. '{}'", source->gguf_->what(),
              skipped.size(), arch, skipped.front());
  }
  return source;
}

Status GgufTensorSource::AddTensor(const GgufTensorInfo& info, const std::string& hf_name,
                                   std::optional<DType> target) {
  Entry entry;
  entry.gguf_name = info.name;
  entry.view.shape = info.TorchShape();
  const DType dtype = target.value_or(NaturalDType(info.type));
  entry.view.dtype = dtype;
  const bool in_place = IsFloatType(info.type) || info.type == GgmlType::kQ8_0;
  if (in_place && NaturalDType(info.type) == dtype) {
    // The reader validated size and bounds; the view aliases the mapping (read-only use).
    entry.view.data = const_cast<std::byte*>(info.data.data());
  } else {
    entry.buffer = AllocateAligned(entry.view.nbytes());
    entry.view.data = entry.buffer.get();
    converted_bytes_ += entry.view.nbytes();
    if (IsFloatType(info.type)) {
      TensorView src{const_cast<std::byte*>(info.data.data()), NaturalDType(info.type), entry.view.shape};
      ConvertTensor(src, entry.view);
    } else {
      Status s = DequantizeInto(info, entry.view);
      if (!s.ok()) return InvalidArgumentError(fmt::format("{}: tensor '{}': {}", gguf_->what(), info.name, s.message()));
    }
  }
  tensors_[hf_name] = std::move(entry);
  return OkStatus();
}

const TensorView* GgufTensorSource::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second.view;
}

std::vector<std::string> GgufTensorSource::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : tensors_) names.push_back(name);
  return names;
}

std::string GgufTensorSource::Origin(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? gguf_->what() : fmt::format("{} ({})", gguf_->what(), it->second.gguf_name);
}

std::vector<std::shared_ptr<const void>> GgufTensorSource::Storage() const {
  std::vector<std::shared_ptr<const void>> storage = {gguf_};
  for (const auto& [name, entry] : tensors_) {
    if (entry.buffer) storage.push_back(entry.buffer);
  }
  return storage;
}

}  // namespace pagellm
