#include "model/model_loader.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "common/logging.h"
#include "model/dummy_weights.h"
#include "model/gguf_loader.h"
#include "model/safetensors.h"
#include "model/weight_binding.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

// "Loading weights [#####     ] 12/28 shards" redrawn in place; TTY only so logs and
// pipes stay clean.
void DrawProgress(size_t done, size_t total) {
  if (total <= 1 || !::isatty(STDERR_FILENO)) return;
  constexpr size_t kWidth = 30;
  size_t filled = done * kWidth / total;
  std::fprintf(stderr, "\rLoading weights [%s%s] %zu/%zu shards", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), done, total);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

bool HasSafetensors(const std::string& dir) {
  std::error_code ec;
  return fs::exists(dir + "/model.safetensors", ec) || fs::exists(dir + "/model.safetensors.index.json", ec);
}

StatusOr<ModelWeights> LoadSafetensorsWeights(const ModelConfig& config, const std::string& dir, DType dtype,
                                              size_t& num_files) {
  PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(dir, DrawProgress));
  num_files = ckpt->files().size();
  PAGELLM_ASSIGN_OR_RETURN(ModelWeights weights, BindWeights(config, *ckpt));
  if (weights.dtype != dtype) {
    PLOG_INFO("converting weights from {} to {}", DTypeName(weights.dtype), DTypeName(dtype));
    return ConvertWeights(weights, dtype);
  }
  return weights;
}

}  // namespace

StatusOr<LoadedModel> LoadModel(const LoadOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const std::string& dir = options.model_path;
  if (IsGgufPath(dir)) return LoadGgufModel(options);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFoundError(fmt::format("model directory {} does not exist", dir));
  LoadedModel model;
  PAGELLM_ASSIGN_OR_RETURN(model.config, LoadModelConfig(dir));
  PAGELLM_ASSIGN_OR_RETURN(model.generation_config, LoadGenerationConfig(dir));
  PAGELLM_ASSIGN_OR_RETURN(DType dtype, ResolveDtype(options.dtype, model.config.torch_dtype));
  std::string format = options.load_format;
  if (format == "auto") format = HasSafetensors(dir) ? "safetensors" : "";
  size_t num_files = 0;
  if (format == "dummy") {
    PAGELLM_ASSIGN_OR_RETURN(auto store, GenerateDummyWeights(model.config, options.seed, dtype));
    PAGELLM_ASSIGN_OR_RETURN(model.weights, BindWeights(model.config, *store));
  } else if (format == "safetensors") {
    PAGELLM_ASSIGN_OR_RETURN(model.weights, LoadSafetensorsWeights(model.config, dir, dtype, num_files));
  } else if (format.empty()) {
    return NotFoundError(fmt::format(
        "{} has no model.safetensors or model.safetensors.index.json (use --load-format dummy for random weights)",
        dir));
  } else {
    return InvalidArgumentError(fmt::format("--load-format '{}' is not supported (auto, safetensors, dummy)", format));
  }
  if (fs::exists(dir + "/tokenizer.json", ec)) model.tokenizer_path = dir;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PLOG_INFO("loaded {} ({}): {} tensors, {:.1f} MB of {} weights from {}, {:.2f} s", dir,
            ModelConfigSummary(model.config), ListWeightSpecs(model.config).size(), WeightBytes(model.weights) / 1e6,
            DTypeName(model.weights.dtype),
            format == "dummy" ? fmt::format("dummy seed {}", options.seed) : fmt::format("{} file(s)", num_files),
            seconds);
  return model;
}

}  // namespace pagellm
