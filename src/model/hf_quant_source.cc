#include "model/hf_quant_source.h"

#include <fmt/format.h>

#include "common/logging.h"
#include "common/mapped_file.h"
#include "model/hf_int4_formats.h"
#include "model/hf_int4_linear.h"

namespace pagellm {

StatusOr<std::unique_ptr<HfQuantTensorSource>> HfQuantTensorSource::Create(const TensorSource& base,
                                                                           const HfQuantConfig& config) {
  if (!config.quantized()) return InvalidArgumentError("HfQuantTensorSource needs a quantized checkpoint config");
  std::unique_ptr<HfQuantTensorSource> source(new HfQuantTensorSource(base, config));
  const std::string marker = "." + std::string(Int4MarkerSuffix(config.method));
  std::vector<std::string> ignored_but_quantized;
  for (const std::string& name : base.Names()) {
    if (name.size() <= marker.size() || name.compare(name.size() - marker.size(), marker.size(), marker) != 0) continue;
    const std::string prefix = name.substr(0, name.size() - marker.size());
    if (config.IsIgnored(prefix)) ignored_but_quantized.push_back(prefix);
    PAGELLM_RETURN_IF_ERROR(source->Repack(prefix));
  }
  if (!ignored_but_quantized.empty()) {
    // The tensors are the truth (vLLM would have expected a float weight and failed).
    PLOG_WARN("{} module(s) listed in quantization_config's ignore list are stored quantized, e.g. '{}'; loading "
              "them quantized", ignored_but_quantized.size(), ignored_but_quantized.front());
  }
  return source;
}

Status HfQuantTensorSource::Repack(const std::string& prefix) {
  const std::string weight = prefix + ".weight";
  if (base_.Find(weight) != nullptr) {
    return InvalidArgumentError(fmt::format("module '{}' in {} has both a float '{}' and {} tensors", prefix,
                                            base_.Origin(weight), weight, HfQuantMethodName(config_.method)));
  }
  StatusOr<Int4Linear> linear = ReadInt4Linear(base_, prefix, config_);
  const std::string marker = prefix + "." + std::string(Int4MarkerSuffix(config_.method));
  if (!linear.ok()) return linear.status().WithPrefix(base_.Origin(marker));
  Entry entry;
  entry.view = PackQ4_Z(*linear, entry.buffer);
  entry.from = marker;
  for (const std::string& suffix : Int4TensorSuffixes(config_.method)) {
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
  return fmt::format("{} ({} as q4_z from {})", base_.Origin(it->second.from), config_.Describe(), it->second.from);
}

std::vector<std::shared_ptr<const void>> HfQuantTensorSource::Storage() const {
  std::vector<std::shared_ptr<const void>> storage = base_.Storage();
  for (const auto& [name, entry] : repacked_) storage.push_back(entry.buffer);
  return storage;
}

}  // namespace pagellm
