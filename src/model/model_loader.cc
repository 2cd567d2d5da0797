#include "model/model_loader.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "common/logging.h"
#include "model/dummy_weights.h"
#include "model/gguf_loader.h"
#include "model/hf_quant_source.h"
#include "model/quantization_flag.h"
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

// Qwen3.5-MoE checkpoints hold each layer's experts fused ([E, 2 I, H] / [E, H, I]); the
// quantized ones keep a linear per expert (AWQ, GPTQ and llm-compressor quantize nn.Linear
// modules, as vLLM's expert mapping expects), the Qwen3-MoE layout. Bind whichever the
// checkpoint has.
void PickExpertLayout(ModelConfig& config, const TensorSource& source) {
  if (!config.fused_experts) return;
  auto first_expert_name = [&](bool fused) {
    ModelConfig c = config;
    c.fused_experts = fused;
    for (const WeightSpec& spec : ListWeightSpecs(c)) {
      if (spec.role == WeightRole::kExpertGateUp) return spec.name;
    }
    return std::string();
  };
  const std::string fused = first_expert_name(true), per_expert = first_expert_name(false);
  if (source.Find(fused) == nullptr && !per_expert.empty() && source.Find(per_expert) != nullptr) {
    PLOG_INFO("experts stored one linear each ({}), not fused: binding them per expert", per_expert);
    config.fused_experts = false;
  }
}

StatusOr<ModelWeights> LoadSafetensorsWeights(ModelConfig& config, const std::string& dir, DType dtype,
                                              const HfQuantConfig& quant, bool load_mtp, size_t& num_files) {
  PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(dir, DrawProgress));
  num_files = ckpt->files().size();
  std::unique_ptr<HfQuantTensorSource> repacked;
  if (quant.quantized()) {
    // fp8 linears are dequantized straight into the run dtype, so they are rounded once.
    PAGELLM_ASSIGN_OR_RETURN(repacked, HfQuantTensorSource::Create(*ckpt, quant, dtype));
    if (repacked->num_repacked() == 0) {
      return InvalidArgumentError(fmt::format("{}: the checkpoint declares {} quantization but no tensor is quantized "
                                              "(no *.{})", dir, quant.Describe(), HfQuantMarkerSuffix(quant)));
    }
  }
  const TensorSource& source = repacked != nullptr ? static_cast<const TensorSource&>(*repacked) : *ckpt;
  PickExpertLayout(config, source);
  PAGELLM_ASSIGN_OR_RETURN(ModelWeights weights, BindWeights(config, source, dtype, load_mtp));
  // The float views share the embedding's dtype (BindWeights); quantized ones stay.
  if (weights.embed_tokens.dtype != dtype) {
    PLOG_INFO("converting {}weights from {} to {}", quant.quantized() ? "float " : "",
              DTypeName(weights.embed_tokens.dtype), DTypeName(dtype));
    return ConvertWeights(weights, dtype);
  }
  return weights;
}

// "bf16", or "awq int4 g128 (as q4_z) + f16" for a quantized checkpoint.
std::string WeightsDescription(const LoadedModel& model) {
  if (!model.quantization.quantized()) return std::string(DTypeName(model.weights.dtype));
  return fmt::format("{} (as {}) + {}", model.quantization.Describe(), DTypeName(model.weights.dtype),
                     DTypeName(model.weights.embed_tokens.dtype));
}

}  // namespace

StatusOr<LoadedModel> LoadModel(const LoadOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const std::string& dir = options.model_path;
  if (IsGgufPath(dir)) {
    PAGELLM_RETURN_IF_ERROR(CheckQuantizationFlag(options.quantization, HfQuantConfig{}, dir));
    return LoadGgufModel(options);
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFoundError(fmt::format("model directory {} does not exist", dir));
  LoadedModel model;
  PAGELLM_ASSIGN_OR_RETURN(model.config, LoadModelConfig(dir));
  PAGELLM_ASSIGN_OR_RETURN(HfQuantConfig quant, LoadHfQuantConfig(dir));
  PAGELLM_RETURN_IF_ERROR(CheckQuantizationFlag(options.quantization, quant, dir));
  PAGELLM_ASSIGN_OR_RETURN(model.generation_config, LoadGenerationConfig(dir));
  PAGELLM_ASSIGN_OR_RETURN(DType dtype, ResolveDtype(options.dtype, model.config.torch_dtype));
  std::string format = options.load_format;
  if (format == "auto") format = HasSafetensors(dir) ? "safetensors" : "";
  size_t num_files = 0;
  if (format == "dummy") {
    if (quant.quantized()) {
      PLOG_INFO("--load-format dummy: random float weights; the checkpoint's {} quantization is not applied",
                quant.Describe());
    }
    PAGELLM_ASSIGN_OR_RETURN(auto store, GenerateDummyWeights(model.config, options.seed, dtype, options.load_mtp));
    PAGELLM_ASSIGN_OR_RETURN(model.weights, BindWeights(model.config, *store, std::nullopt, options.load_mtp));
  } else if (format == "safetensors") {
    PAGELLM_ASSIGN_OR_RETURN(model.weights, LoadSafetensorsWeights(model.config, dir, dtype, quant, options.load_mtp, num_files));
    model.quantization = quant;
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
            WeightsDescription(model),
            format == "dummy" ? fmt::format("dummy seed {}", options.seed) : fmt::format("{} file(s)", num_files),
            seconds);
  return model;
}

}  // namespace pagellm
