#include "model/gguf_weights.h"

#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/logging.h"
#include "gguf/gguf_names.h"
#include "gguf/gguf_quants.h"
#include "model/convert.h"
#include "model/gguf_config.h"
#include "model/gguf_hybrid_plan.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

bool IsFloatType(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16;
}

// The GGUF types the backends compute with in place (besides Q8_0), as DTypes.
std::optional<DType> KQuantDType(GgmlType type) {
  if (type == GgmlType::kQ4_K) return DType::kQ4_K;
  if (type == GgmlType::kQ5_K) return DType::kQ5_K;
  if (type == GgmlType::kQ4_0) return DType::kQ4_0;
  if (type == GgmlType::kQ5_0) return DType::kQ5_0;
  if (type == GgmlType::kQ4_1) return DType::kQ4_1;
  if (type == GgmlType::kQ5_1) return DType::kQ5_1;
  if (type == GgmlType::kIQ4_NL) return DType::kIQ4_NL;
  if (type == GgmlType::kIQ4_XS) return DType::kIQ4_XS;
  if (type == GgmlType::kQ6_K) return DType::kQ6_K;
  return std::nullopt;
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

}  // namespace

StatusOr<ModelWeights> BindGgufWeights(const ModelConfig& config, const TensorSource& source, bool with_mtp) {
  PAGELLM_RETURN_IF_ERROR(CheckLayerCount(config, source.Names().size()));
  ModelWeights w;
  w.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  std::vector<WeightSpec> specs = ListWeightSpecs(config);
  if (with_mtp) {
    const std::vector<WeightSpec> mtp = ListMtpWeightSpecs(config);
    if (mtp.empty() || source.Find(mtp.front().name) == nullptr) {
      return NotFoundError(fmt::format(
          "--speculative-config method mtp: the GGUF has no multi-token-prediction head ({}): convert the "
          "checkpoint with its mtp.* tensors (pagellm convert and llama.cpp's converter keep them unless --no-mtp), "
          "or use method ngram / a draft model",
          mtp.empty() ? std::string("no nextn_predict_layers block") : "no '" + mtp.front().name + "'"));
    }
    specs.insert(specs.end(), mtp.begin(), mtp.end());
  }
  for (const WeightSpec& spec : specs) {
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
    if (view->dtype == DType::kQ8_0 && (spec.shape.size() < 2 || spec.shape.back() % kQ8_0BlockElements != 0)) {
      return InvalidArgumentError(fmt::format("tensor '{}' in {}: Q8_0 is supported for matrices only",
                                              spec.name, source.Origin(spec.name)));
    }
    *WeightSlot(w, spec) = *view;
  }
  if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
  w.storage = source.Storage();
  // The linear weights' type: layer 0's q_proj, or its GDN in_proj for hybrid models.
  const LayerWeights* l0 = w.layers.empty() ? nullptr : &w.layers[0];
  w.dtype = l0 == nullptr ? w.embed_tokens.dtype : !l0->q_proj.empty() ? l0->q_proj.dtype
                                                 : !l0->gdn_in_proj_qkv.empty() ? l0->gdn_in_proj_qkv.dtype
                                                                                : l0->gdn_in_proj_qkvz.dtype;
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
                                                                     std::optional<DType> dtype, bool with_mtp) {
  PAGELLM_CHECK(!dtype || *dtype == DType::kBF16 || *dtype == DType::kF16 || *dtype == DType::kF32);
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, gguf->GetString("general.architecture"));
  std::unique_ptr<GgufTensorSource> source(new GgufTensorSource());
  source->gguf_ = std::move(gguf);
  if (UsesGgufTensorPlans(arch)) {
    PAGELLM_RETURN_IF_ERROR(source->AddPlannedTensors(arch, dtype, with_mtp));
    return source;
  }
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
  PAGELLM_RETURN_IF_ERROR(MakeEntry(info, target, entry, /*keep_kquant=*/true));
  tensors_[hf_name] = std::move(entry);
  return OkStatus();
}

Status GgufTensorSource::MakeEntry(const GgufTensorInfo& info, std::optional<DType> target, Entry& entry,
                                   bool keep_kquant) {
  entry.gguf_name = info.name;
  entry.view.shape = info.TorchShape();
  const size_t rank = entry.view.shape.size();
  const std::optional<DType> kquant = keep_kquant && (rank == 2 || rank == 3) ? KQuantDType(info.type) : std::nullopt;
  const DType natural = kquant.value_or(NaturalDType(info.type));
  const DType dtype = target.value_or(natural);
  entry.view.dtype = dtype;
  const bool in_place = IsFloatType(info.type) || info.type == GgmlType::kQ8_0 || kquant.has_value();
  if (in_place && natural == dtype) {
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
  return OkStatus();
}

Status GgufTensorSource::AddPlannedTensors(const std::string& arch, std::optional<DType> target, bool with_mtp) {
  PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, ModelConfigFromGguf(*gguf_));
  // The NextN block only when asked for (and present: nextn_predict_layers sets the config's
  // mtp_num_hidden_layers); otherwise its tensors are left alone.
  PAGELLM_ASSIGN_OR_RETURN(std::vector<GgufTensorPlan> plans, HybridHfPlans(config, arch, with_mtp));
  std::set<std::string, std::less<>> used;
  for (const GgufTensorPlan& plan : plans) used.insert(plan.inputs.begin(), plan.inputs.end());
  // The file's tensors the plans read, in their natural dtypes (zero-copy where possible), by
  // GGUF name; k-quant matrices and expert stacks stay quantized (an explicit --dtype
  // dequantizes them once the plans have cut them, straight to float32: ConvertEntry).
  std::map<std::string, Entry> raw;
  for (const GgufTensorInfo& info : gguf_->tensors()) {
    if (used.count(info.name) == 0) continue;
    Entry e;
    PAGELLM_RETURN_IF_ERROR(MakeEntry(info, std::nullopt, e, /*keep_kquant=*/true));
    raw[info.name] = std::move(e);
  }
  for (const GgufTensorPlan& plan : plans) {
    std::vector<const TensorView*> inputs;
    for (const std::string& name : plan.inputs) {
      auto it = raw.find(name);
      if (it == raw.end()) {
        return NotFoundError(fmt::format("{}: missing tensor '{}' (needed for '{}')", gguf_->what(), name, plan.name));
      }
      if (it->second.view.shape.empty() || it->second.view.shape.back() != plan.row_len()) {
        return InvalidArgumentError(fmt::format("{}: tensor '{}' has shape {}, expected rows of {} values",
                                                gguf_->what(), name, ShapeToString(it->second.view.shape),
                                                plan.row_len()));
      }
      inputs.push_back(&it->second.view);
    }
    for (const GgufRowRef& ref : plan.rows) {
      const TensorView& in = *inputs[static_cast<size_t>(ref.input)];
      if (ref.row >= in.numel() / in.shape.back()) {
        return InvalidArgumentError(fmt::format("{}: tensor '{}' has too few rows for '{}' (shape {})", gguf_->what(),
                                                plan.inputs[static_cast<size_t>(ref.input)], plan.name,
                                                ShapeToString(in.shape)));
      }
    }
    Entry entry;
    entry.gguf_name = fmt::format("{}", fmt::join(plan.inputs, "+"));
    const std::optional<int64_t> first_row = plan.ContiguousRowsStart();
    const bool reorders_quant_columns = !target && IsPackedQuant(inputs[0]->dtype) && inputs.size() == 1 &&
                                        plan.op == GgufValueOp::kNone && !plan.col_perm.empty() &&
                                        PlanOutputDType(plan, inputs[0]->dtype) != inputs[0]->dtype;
    if (plan.IsIdentity() && inputs[0]->numel() == TensorView{nullptr, DType::kF32, plan.shape}.numel()) {
      entry.view = *inputs[0];
      entry.view.shape = plan.shape;
      entry.buffer = raw[plan.inputs[0]].buffer;
    } else if (first_row.has_value()) {
      // Rows of one input in order (one expert of a stack): a view of its bytes, no copy.
      entry.view = *inputs[0];
      entry.view.data = static_cast<std::byte*>(inputs[0]->data) + DTypeBytes(inputs[0]->dtype, *first_row * plan.row_len());
      entry.view.shape = plan.shape;
      entry.buffer = raw[plan.inputs[0]].buffer;
    } else if (reorders_quant_columns) {
      // Columns reordered across k-quant blocks (Qwen3.5's GDN out_proj when key and value
      // head counts differ): keep the file's column order and let the linear gather its
      // input instead (TensorView::column_order), so the matrix stays quantized.
      GgufTensorPlan rows_only = plan;
      rows_only.col_perm.clear();
      entry.view = TensorView{nullptr, inputs[0]->dtype, plan.shape};
      entry.buffer = AllocateAligned(entry.view.nbytes());
      entry.view.data = entry.buffer.get();
      converted_bytes_ += entry.view.nbytes();
      PAGELLM_RETURN_IF_ERROR(RunPlan(rows_only, inputs, entry.view));
      auto order = std::make_shared<std::vector<int32_t>>(plan.col_perm.size());
      for (size_t c = 0; c < plan.col_perm.size(); ++c) (*order)[static_cast<size_t>(plan.col_perm[c])] = static_cast<int32_t>(c);
      entry.view.column_order = *order;
      entry.column_order = std::move(order);
    } else {
      DType dtype = PlanOutputDType(plan, inputs[0]->dtype);
      for (const TensorView* in : inputs) dtype = in->dtype == inputs[0]->dtype ? dtype : DType::kF32;
      entry.view = TensorView{nullptr, dtype, plan.shape};
      entry.buffer = AllocateAligned(entry.view.nbytes());
      entry.view.data = entry.buffer.get();
      converted_bytes_ += entry.view.nbytes();
      PAGELLM_RETURN_IF_ERROR(RunPlan(plan, inputs, entry.view));
    }
    if (target && entry.view.dtype != *target) PAGELLM_RETURN_IF_ERROR(ConvertEntry(*target, entry));
    tensors_[plan.name] = std::move(entry);
  }
  return OkStatus();
}

Status GgufTensorSource::ConvertEntry(DType target, Entry& entry) {
  TensorView dst{nullptr, target, entry.view.shape};
  std::shared_ptr<void> buffer = AllocateAligned(dst.nbytes());
  dst.data = buffer.get();
  if (entry.view.dtype == DType::kQ8_0) {
    const int64_t n = entry.view.numel();
    std::vector<float> f32(static_cast<size_t>(n));
    PAGELLM_RETURN_IF_ERROR(Dequantize(GgmlType::kQ8_0, {static_cast<const std::byte*>(entry.view.data),
                                                         DTypeBytes(DType::kQ8_0, n)}, n, f32.data()));
    ConvertTensor(TensorView{f32.data(), DType::kF32, entry.view.shape}, dst);
  } else if (IsPackedQuant(entry.view.dtype)) {
    PAGELLM_CHECK(entry.view.column_order.empty());  // only made without a target dtype
    const int64_t n = entry.view.numel(), row = entry.view.shape.back();
    std::vector<float> f32(static_cast<size_t>(n));
    for (int64_t r = 0; r < n / row; ++r) {
      DequantizeRowKQuant(entry.view.dtype, static_cast<const std::byte*>(entry.view.data) + DTypeBytes(entry.view.dtype, r * row),
                          row, f32.data() + r * row);
    }
    ConvertTensor(TensorView{f32.data(), DType::kF32, entry.view.shape}, dst);
  } else {
    ConvertTensor(entry.view, dst);
  }
  converted_bytes_ += dst.nbytes();
  entry.view = dst;
  entry.buffer = std::move(buffer);
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
    if (entry.column_order) storage.push_back(entry.column_order);
  }
  return storage;
}

}  // namespace pagellm
