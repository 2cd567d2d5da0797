#include "model/gguf_loader.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "common/logging.h"
#include "gguf/gguf_file.h"
#include "model/dummy_weights.h"
#include "model/gguf_config.h"
#include "model/gguf_weights.h"
#include "model/weight_binding.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

bool HasGgufMagic(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char magic[4] = {};
  size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return n == 4 && magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' && magic[3] == 'F';
}

}  // namespace

bool IsGgufPath(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".gguf" || HasGgufMagic(path);
}

StatusOr<LoadedModel> LoadGgufModel(const LoadOptions& options) {
  auto start = std::chrono::steady_clock::now();
  PAGELLM_ASSIGN_OR_RETURN(std::shared_ptr<const GgufFile> gguf, OpenSharedGguf(options.model_path));
  LoadedModel model;
  PAGELLM_ASSIGN_OR_RETURN(model.config, ModelConfigFromGguf(*gguf));
  model.generation_config = GenerationConfigFromGguf(*gguf);
  PAGELLM_ASSIGN_OR_RETURN(DType dtype, ResolveDtype(options.dtype, model.config.torch_dtype));
  // auto: the file's own types (Q8_0 natively); an explicit --dtype converts everything.
  std::optional<DType> target;
  if (!options.dtype.empty() && options.dtype != "auto") target = dtype;
  model.tokenizer_path = gguf->Find("tokenizer.ggml.tokens") != nullptr ? options.model_path : "";
  size_t converted_bytes = 0;
  if (options.load_format == "dummy") {
    PAGELLM_ASSIGN_OR_RETURN(auto store, GenerateDummyWeights(model.config, options.seed, dtype, options.load_mtp));
    PAGELLM_ASSIGN_OR_RETURN(model.weights, BindWeights(model.config, *store, std::nullopt, options.load_mtp));
  } else if (options.load_format == "auto" || options.load_format == "gguf") {
    PAGELLM_ASSIGN_OR_RETURN(auto source, GgufTensorSource::Create(gguf, target, options.load_mtp));
    converted_bytes = source->converted_bytes();
    StatusOr<ModelWeights> weights = BindGgufWeights(model.config, *source, options.load_mtp);
    // The file named, the code kept: NotFound for a missing tensor or MTP head, as BindWeights.
    if (!weights.ok()) {
      return Status(weights.status().code(), fmt::format("{}: {}", gguf->what(), weights.status().message()));
    }
    model.weights = std::move(*weights);
  } else {
    return InvalidArgumentError(
        fmt::format("--load-format '{}' does not apply to a GGUF file (auto, gguf, dummy)", options.load_format));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PLOG_INFO("loaded {} ({}): GGUF v{}, {} tensors, {:.1f} MB of {} weights ({:.1f} MB converted), {:.2f} s",
            options.model_path, ModelConfigSummary(model.config), gguf->version(),
            ListWeightSpecs(model.config).size() + (options.load_mtp ? ListMtpWeightSpecs(model.config).size() : 0),
            WeightBytes(model.weights) / 1e6, DTypeName(model.weights.dtype), converted_bytes / 1e6, seconds);
  return model;
}

}  // namespace pagellm
