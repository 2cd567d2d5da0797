// `pagellm convert`: a Hugging Face Qwen2/Qwen3 checkpoint directory -> GGUF, with the
// flags of llama.cpp's convert_hf_to_gguf.py (see model/gguf_convert.h for the rules).
//
//   pagellm convert /models/Qwen3-0.6B --outfile qwen3-0.6b-q8_0.gguf --outtype q8_0
//   pagellm convert DIR                 # DIR/<name>-<bf16|f16>.gguf, 16-bit like the checkpoint
//   pagellm convert DIR --outfile out-{ftype}.gguf --outtype f16
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/json.h"
#include "model/config.h"
#include "model/gguf_convert.h"

namespace pagellm::cli {
namespace {

struct ConvertFlags {
  std::string model_dir;
  std::string outfile;
  std::string outtype = "auto";
  std::string name;
};

// "auto": the highest-fidelity 16-bit type, as llama.cpp guesses it (bf16 checkpoints
// stay bf16, everything else becomes f16).
StatusOr<GgmlType> ResolveOuttype(const ConvertFlags& flags) {
  if (flags.outtype != "auto") return GgmlTypeFromName(flags.outtype);
  PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(flags.model_dir));
  return config.torch_dtype == DType::kBF16 ? GgmlType::kBF16 : GgmlType::kF16;
}

Status RunConvert(const ConvertFlags& flags) {
  GgufConvertOptions options;
  options.model_dir = flags.model_dir;
  options.name = flags.name;
  PAGELLM_ASSIGN_OR_RETURN(options.outtype, ResolveOuttype(flags));
  std::string ftype(GgmlTypeName(options.outtype));
  options.outfile = flags.outfile;
  if (options.outfile.empty()) {
    std::string dir_name = std::filesystem::path(flags.model_dir).lexically_normal().filename().string();
    if (dir_name.empty()) dir_name = std::filesystem::path(flags.model_dir).parent_path().filename().string();
    options.outfile = fmt::format("{}/{}-{}.gguf", flags.model_dir, dir_name, ftype);
  }
  if (size_t pos = options.outfile.find("{ftype}"); pos != std::string::npos) options.outfile.replace(pos, 7, ftype);
  PAGELLM_ASSIGN_OR_RETURN(GgufConvertReport report, ConvertToGguf(options));
  std::printf("%s\n", options.outfile.c_str());
  return OkStatus();
}

}  // namespace

void RegisterConvertCommand(CLI::App& app) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a Hugging Face Qwen2/Qwen3 checkpoint to GGUF (llama.cpp)");
  cmd->add_option("model", flags->model_dir, "checkpoint directory (config.json, *.safetensors, tokenizer.json)")
      ->required();
  cmd->add_option("--outfile", flags->outfile, "output path; {ftype} is replaced by the outtype");
  cmd->add_option("--outtype", flags->outtype, "f32, f16, bf16, q8_0 or auto (16-bit like the checkpoint)")
      ->capture_default_str();
  cmd->add_option("--model-name", flags->name, "general.name (default: the directory name)");
  cmd->callback([flags] { ReportStatus(RunConvert(*flags)); });
}

}  // namespace pagellm::cli
