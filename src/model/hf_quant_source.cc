#include "model/hf_quant_source.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/mapped_file.h"
#include "model/hf_fp8_linear.h"
#include "model/hf_int4_formats.h"
#include "model/hf_int8_formats.h"

namespace pagellm {
namespace {

// What a quantized module of `config` becomes.
enum class Target { kQ4_Z, kQ8_S, kFloat };

Target TargetOf(const HfQuantConfig& config) {
  if (config.method == HfQuantMethod::kFp8) return Target::kFloat;
  return config.bits == 8 ? Target::kQ8_S : Target::kQ4_Z;
}

HfModuleLayout LayoutOf(const HfQuantConfig& config) {
  switch (TargetOf(config)) {
    case Target::kQ4_Z: return Int4Layout(config.method);
    case Target::kQ8_S: return Int8Layout(config);
    case Target::kFloat: return Fp8Layout(config);
  }
  return {};
}

}  // namespace

std::string HfQuantMarkerSuffix(const HfQuantConfig& config) { return LayoutOf(config).marker; }

StatusOr<std::unique_ptr<HfQuantTensorSource>> HfQuantTensorSource::Create(const TensorSource& base,
                                                                           const HfQuantConfig& config,
                                                                           DType float_dtype) {
  if (!config.quantized()) return InvalidArgumentError("HfQuantTensorSource needs a quantized checkpoint config");
  std::unique_ptr<HfQuantTensorSource> source(new HfQuantTensorSource(base, config, float_dtype));
  const std::string marker = "." + LayoutOf(config).marker;
  std::vector<std::string> ignored_but_quantized;
  for (const std::string& name : base.Names()) {
    if (name.size() <= marker.size() || !name.ends_with(marker)) continue;
    const std::string prefix = name.substr(0, name.size() - marker.size());
    if (config.IsIgnored(prefix)) ignored_but_quantized.push_back(prefix);
    PAGELLM_RETURN_IF_ERROR(source->Repack(prefix));
  }
  if (!ignored_but_quantized.empty()) {
    // The tensors are the truth (vLLM would have expected a float weight and failed).
    PLOG_WARN("{} module(s) listed to stay float by the quantization config are stored quantized, e.g. '{}'; loading "
              "them quantized", ignored_but_quantized.size(), ignored_but_quantized.front());
  }
  if (source->num_repacked() > 0) source->LogRun();
  return source;
}

void HfQuantTensorSource::LogRun() const {
  if (TargetOf(config_) == Target::kFloat) {
    const std::string blocks = config_.block_n > 0 ? fmt::format("{}x{} blocks", config_.block_n, config_.block_k)
                                                   : std::string("one scale per tensor");
    // The wording is the log's contract (tests grep it): a dequantization, not in place.
    PLOG_INFO("fp8 (e4m3, {}) run as {}: {} linear(s) dequantized at load (pagellm has no fp8 kernel)", blocks,
              DTypeName(float_dtype_), repacked_.size());
  }
  if (!config_.run_note.empty()) PLOG_INFO("{}", config_.run_note);
}

StatusOr<TensorView> HfQuantTensorSource::Convert(const std::string& prefix, std::shared_ptr<void>& buffer) const {
  switch (TargetOf(config_)) {
    case Target::kQ4_Z: {
      PAGELLM_ASSIGN_OR_RETURN(Int4Linear linear, ReadInt4Linear(base_, prefix, config_));
      return PackQ4_Z(linear, buffer);
    }
    case Target::kQ8_S: {
      PAGELLM_ASSIGN_OR_RETURN(Int8Linear linear, ReadInt8Linear(base_, prefix, config_));
      return PackQ8_S(linear, buffer);
    }
    case Target::kFloat: return DequantizeFp8Linear(base_, prefix, config_, float_dtype_, buffer);
  }
  return InternalError("unknown quantization target");
}

Status HfQuantTensorSource::Repack(const std::string& prefix) {
  const HfModuleLayout layout = LayoutOf(config_);
  const std::string weight = prefix + ".weight";
  const bool weight_is_codes = std::count(layout.suffixes.begin(), layout.suffixes.end(), "weight") != 0;
  if (!weight_is_codes && base_.Find(weight) != nullptr) {
    return InvalidArgumentError(fmt::format("module '{}' in {} has both a float '{}' and {} tensors", prefix,
                                            base_.Origin(weight), weight, HfQuantMethodName(config_.method)));
  }
  const std::string marker = prefix + "." + layout.marker;
  Entry entry;
  StatusOr<TensorView> converted = Convert(prefix, entry.buffer);
  if (!converted.ok()) return converted.status().WithPrefix(base_.Origin(marker));
  entry.view = *converted;
  entry.from = marker;
  for (const std::string& suffix : layout.suffixes) {
    const std::string name = prefix + "." + suffix;
    if (const TensorView* t = base_.Find(name); t != nullptr) {
      hidden_.insert(name);
      MappedFile::ReleasePages(t->data, t->nbytes());  // copied into entry.buffer (or read once)
    }
  }
  repacked_[weight] = std::move(entry);
  return OkStatus();
}

const TensorView* HfQuantTensorSource::Find(const std::string& name) const {
  if (auto it = repacked_.find(name); it != repacked_.end()) return &it->second.view;
  if (hidden_.count(name) != 0) return nullptr;
  return base_.Find(name);
}

std::vector<std::string> HfQuantTensorSource::Names() const {
  std::set<std::string> names;
  for (const std::string& name : base_.Names()) {
    if (hidden_.count(name) == 0) names.insert(name);
  }
  for (const auto& [name, entry] : repacked_) names.insert(name);
  return {names.begin(), names.end()};
}

std::string HfQuantTensorSource::Origin(const std::string& name) const {
  auto it = repacked_.find(name);
  if (it == repacked_.end()) return base_.Origin(name);
  return fmt::format("{} ({} as {} from {})", base_.Origin(it->second.from), config_.Describe(),
                     DTypeName(it->second.view.dtype), it->second.from);
}

std::vector<std::shared_ptr<const void>> HfQuantTensorSource::Storage() const {
  std::vector<std::shared_ptr<const void>> storage = base_.Storage();
  for (const auto& [name, entry] : repacked_) storage.push_back(entry.buffer);
  return storage;
}

}  // namespace pagellm
