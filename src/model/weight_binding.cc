#include "model/weight_binding.h"

#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/logging.h"
#include "model/convert.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

bool IsFloatDtype(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kF32; }

// The block-quantized weight dtypes a safetensors checkpoint may bind (HF int4 / int8
// checkpoints repacked by HfQuantTensorSource), for the 2-D linear projections of the decoder
// layers only: norms, embeddings, conv1d, routers and lm_head have no quantized code path there.
bool AcceptsQuantized(const WeightSpec& spec, DType dtype) {
  if ((dtype != DType::kQ4_Z && dtype != DType::kQ8_S) || spec.shape.size() != 2) return false;
  switch (spec.role) {
    case WeightRole::kQProj:
    case WeightRole::kKProj:
    case WeightRole::kVProj:
    case WeightRole::kOProj:
    case WeightRole::kGateUp:
    case WeightRole::kDown:
    case WeightRole::kGdnInProj:
    case WeightRole::kGdnGateProj:
    case WeightRole::kGdnOutProj:
    case WeightRole::kExpertGateUp:
    case WeightRole::kExpertDown:
    case WeightRole::kSharedGateUp:
    case WeightRole::kSharedDown: return true;
    default: return false;
  }
}

void AppendLayerViews(LayerWeights& l, std::vector<TensorView*>& views) {
  for (TensorView* v : {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_bias, &l.k_bias, &l.v_bias,
                        &l.o_proj, &l.o_bias, &l.q_norm, &l.k_norm, &l.post_attention_layernorm, &l.gate_proj,
                        &l.up_proj, &l.down_proj, &l.gdn_in_proj_qkv, &l.gdn_in_proj_z, &l.gdn_in_proj_b,
                        &l.gdn_in_proj_a, &l.gdn_in_proj_qkvz, &l.gdn_in_proj_ba, &l.gdn_conv1d, &l.gdn_dt_bias,
                        &l.gdn_a_log, &l.gdn_norm, &l.gdn_out_proj, &l.moe_router, &l.experts_gate_up,
                        &l.experts_down, &l.shared_gate_proj, &l.shared_up_proj, &l.shared_down_proj,
                        &l.shared_expert_gate}) {
    views.push_back(v);
  }
  for (auto* list : {&l.expert_gate_proj, &l.expert_up_proj, &l.expert_down_proj}) {
    for (TensorView& v : *list) views.push_back(&v);
  }
}

// The MTP head's views (empty when it was not loaded).
std::vector<TensorView*> MtpViews(ModelWeights& w) {
  std::vector<TensorView*> views = {&w.mtp.fc, &w.mtp.pre_fc_norm_embedding, &w.mtp.pre_fc_norm_hidden, &w.mtp.norm};
  for (LayerWeights& l : w.mtp.layers) AppendLayerViews(l, views);
  return views;
}

// Every distinct non-empty view, with lm_head skipped when it aliases the embedding.
std::vector<TensorView*> AllViews(ModelWeights& w) {
  std::vector<TensorView*> views = {&w.embed_tokens, &w.norm};
  if (w.lm_head.data != w.embed_tokens.data) views.push_back(&w.lm_head);
  for (LayerWeights& l : w.layers) AppendLayerViews(l, views);
  for (TensorView* v : MtpViews(w)) views.push_back(v);
  std::vector<TensorView*> present;
  for (TensorView* v : views) {
    if (!v->empty()) present.push_back(v);
  }
  return present;
}

void WarnAboutExtras(const TensorSource& source, const std::set<std::string>& used) {
  std::vector<std::string> extras, mtp, visual;
  for (const std::string& name : source.Names()) {
    if (used.count(name) != 0) continue;
    if (IsSkippedAuxiliaryTensor(name)) {
      (name.find("visual.") != std::string::npos ? visual : mtp).push_back(name);
    } else {
      extras.push_back(name);
    }
  }
  if (!mtp.empty()) PLOG_INFO("skipping {} multi-token-prediction tensor(s) (mtp.*): not used for decoding", mtp.size());
  if (!visual.empty()) PLOG_INFO("skipping {} vision tensor(s) (model.visual.*): text-only serving", visual.size());
  if (extras.empty()) return;
  PLOG_WARN("ignoring {} checkpoint tensor(s) the model does not use, e.g. '{}'", extras.size(), extras.front());
}

}  // namespace

StatusOr<ModelWeights> BindWeights(const ModelConfig& config, const TensorSource& source,
                                   std::optional<DType> mixed_float_dtype, bool with_mtp) {
  PAGELLM_RETURN_IF_ERROR(CheckLayerCount(config, source.Names().size()));
  ModelWeights w;
  w.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  std::set<std::string> used;
  std::map<DType, int> float_counts;  // quantized views keep their dtype; floats go to the majority
  std::optional<DType> quantized_dtype;
  std::vector<WeightSpec> specs = ListWeightSpecs(config);
  if (with_mtp) {
    const std::vector<WeightSpec> mtp = ListMtpWeightSpecs(config);
    if (mtp.empty() || source.Find(mtp.front().name) == nullptr) {
      return NotFoundError(fmt::format(
          "--speculative-config method mtp: the checkpoint has no multi-token-prediction head ({}; config "
          "mtp_num_hidden_layers {}): use a checkpoint that ships mtp.* weights, or method ngram / a draft model",
          mtp.empty() ? std::string("the config declares none") : "no '" + mtp.front().name + "'",
          config.mtp_num_hidden_layers));
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
    const bool quantized = AcceptsQuantized(spec, view->dtype);
    if (!IsFloatDtype(view->dtype) && !quantized) {
      const bool packed = DTypeBlockSize(view->dtype) > 1;
      // Safetensors F8_E4M3 reads as u8 (model/safetensors.h): say what would load it.
      const char* hint = packed ? " (only decoder-layer linear projections may be quantized)"
                         : view->dtype == DType::kU8
                             ? " (an F8_E4M3 tensor: fp8 weights load with a quantization_config of quant_method fp8)"
                             : "";
      return InvalidArgumentError(fmt::format("tensor '{}' in {} has dtype {}; expected bf16, f16 or f32{}", spec.name,
                                              source.Origin(spec.name), DTypeName(view->dtype), hint));
    }
    *WeightSlot(w, spec) = *view;
    used.insert(spec.name);
    if (quantized) {
      quantized_dtype = view->dtype;
    } else {
      ++float_counts[view->dtype];
    }
  }
  if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
  WarnAboutExtras(source, used);
  w.storage = source.Storage();
  DType majority = w.embed_tokens.dtype;
  for (const auto& [dtype, count] : float_counts) {
    if (count > float_counts[majority]) majority = dtype;
  }
  if (mixed_float_dtype.has_value()) majority = *mixed_float_dtype;
  // As BindGgufWeights: a model with quantized linears is known by their dtype.
  w.dtype = quantized_dtype.value_or(majority);
  if (float_counts.size() > 1) {
    PLOG_INFO("checkpoint mixes {} float dtypes; converting the float weights to {}", float_counts.size(),
              DTypeName(majority));
    return ConvertWeights(w, majority);
  }
  return w;
}

StatusOr<ModelWeights> ConvertWeights(const ModelWeights& weights, DType dtype) {
  if (!IsFloatDtype(dtype)) {
    return InvalidArgumentError(fmt::format("cannot convert weights to {}", DTypeName(dtype)));
  }
  ModelWeights out = weights;
  // Quantized views (HF int4 as q4_z) stay as they are and keep naming the model's dtype.
  const bool quantized = !IsFloatDtype(weights.dtype);
  const DType model_dtype = quantized ? weights.dtype : dtype;
  bool all_same = true;
  for (TensorView* v : AllViews(out)) all_same = all_same && (v->dtype == dtype || !IsFloatDtype(v->dtype));
  if (all_same) {
    out.dtype = model_dtype;
    return out;
  }
  bool tied = weights.lm_head.data == weights.embed_tokens.data;
  // Untouched quantized views still point into the old storage: keep it then.
  if (!quantized) out.storage.clear();
  for (TensorView* v : AllViews(out)) {
    if (!IsFloatDtype(v->dtype)) continue;
    std::shared_ptr<void> buffer = AllocateAligned(static_cast<size_t>(v->numel()) * DTypeSize(dtype));
    TensorView dst = *v;
    dst.dtype = dtype;
    dst.data = buffer.get();
    ConvertTensor(*v, dst);
    *v = dst;
    out.storage.push_back(std::move(buffer));
  }
  if (tied) out.lm_head = out.embed_tokens;
  out.dtype = model_dtype;
  return out;
}

StatusOr<DType> ResolveDtype(const std::string& dtype, DType checkpoint_dtype) {
  if (dtype.empty() || dtype == "auto") return checkpoint_dtype;
  auto parsed = DTypeFromUserName(dtype);
  if (!parsed.ok()) return parsed.status().WithPrefix("--dtype");
  return *parsed;
}

uint64_t WeightBytes(const ModelWeights& weights) {
  uint64_t total = 0;
  for (TensorView* v : AllViews(const_cast<ModelWeights&>(weights))) total += v->nbytes();  // read only
  return total;
}

namespace {

// dtype -> (tensors, bytes) of one group.
using FormatTally = std::map<DType, std::pair<int64_t, uint64_t>>;

void Tally(const TensorView& v, FormatTally& t) {
  if (v.empty()) return;
  t[v.dtype].first += 1;
  t[v.dtype].second += v.nbytes();
}

}  // namespace

std::vector<WeightFormat> WeightFormats(const ModelWeights& weights) {
  FormatTally embed, head, attention, mlp, experts, mtp, other;
  Tally(weights.embed_tokens, embed);
  const bool tied = weights.lm_head.data == weights.embed_tokens.data;
  if (!tied) Tally(weights.lm_head, head);
  std::set<const TensorView*> grouped;
  auto group = [&](const TensorView* v, FormatTally& t) {
    Tally(*v, t);
    grouped.insert(v);
  };
  for (const LayerWeights& l : weights.layers) {
    // Attention matrices, softmax or Gated DeltaNet (its projections play the same part).
    for (const TensorView* v : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gdn_in_proj_qkv, &l.gdn_in_proj_z,
                                &l.gdn_in_proj_b, &l.gdn_in_proj_a, &l.gdn_in_proj_qkvz, &l.gdn_in_proj_ba,
                                &l.gdn_out_proj}) {
      group(v, attention);
    }
    for (const TensorView* v : {&l.gate_proj, &l.up_proj, &l.down_proj, &l.shared_gate_proj, &l.shared_up_proj,
                                &l.shared_down_proj}) {
      group(v, mlp);
    }
    // Routed experts: most of a MoE model's bytes.
    for (const std::vector<TensorView>* list : {&l.expert_gate_proj, &l.expert_up_proj, &l.expert_down_proj}) {
      for (const TensorView& v : *list) group(&v, experts);
    }
    for (const TensorView* v : {&l.experts_gate_up, &l.experts_down}) group(v, experts);
  }
  // The multi-token-prediction head, when loaded: served only to draft tokens.
  for (const TensorView* v : MtpViews(const_cast<ModelWeights&>(weights))) group(v, mtp);  // read only
  for (TensorView* v : AllViews(const_cast<ModelWeights&>(weights))) {  // read only
    if (v != &weights.embed_tokens && v != &weights.lm_head && grouped.count(v) == 0) Tally(*v, other);
  }
  std::vector<WeightFormat> out;
  for (const auto& [name, tally] : std::vector<std::pair<std::string, const FormatTally*>>{
           {"embed", &embed},
           {"lm_head", &head},
           {"attention", &attention},
           {"mlp", &mlp},
           {"experts", &experts},
           {"mtp", &mtp},
           {"other", &other}}) {
    for (const auto& [dtype, count_bytes] : *tally) out.push_back({name, dtype, count_bytes.first, count_bytes.second});
  }
  return out;
}

std::string WeightFormatSummary(const ModelWeights& weights) {
  const std::vector<WeightFormat> formats = WeightFormats(weights);
  const bool tied = weights.lm_head.data == weights.embed_tokens.data;
  std::string out;
  for (size_t i = 0; i < formats.size();) {
    const std::string& group = formats[i].group;
    std::string line = group;
    uint64_t bytes = 0;
    const char* sep = " ";
    for (; i < formats.size() && formats[i].group == group; ++i) {
      line += fmt::format("{}{} x{}", sep, DTypeName(formats[i].dtype), formats[i].tensors);
      bytes += formats[i].bytes;
      sep = " + ";
    }
    line += fmt::format(" {:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
    if (group == "embed" && tied) line += " (lm_head tied)";
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

}  // namespace pagellm
