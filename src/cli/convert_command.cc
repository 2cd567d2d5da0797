// `pagellm convert`: a Hugging Face Qwen2/Qwen3 checkpoint directory -> GGUF, with the
// flags of llama.cpp's convert_hf_to_gguf.py (see model/gguf_convert.h for the rules), plus
// llama-quantize's file types as outtypes.
//
//   pagellm convert /models/Qwen3-0.6B --outfile qwen3-0.6b-q8_0.gguf --outtype q8_0
//   pagellm convert DIR                 # DIR/<name>-<bf16|f16>.gguf, 16-bit like the checkpoint
//   pagellm convert DIR --outfile out-{ftype}.gguf --outtype f16
//   pagellm convert DIR --outtype q4_k_m           # = llama-quantize on the f16 file
//   pagellm convert model-f16.gguf --outtype q4_k_m --outfile model-q4_k_m.gguf
#include <algorithm>
#include <cctype>
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
  bool no_mtp = false;
};

bool IsGgufInput(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// Sets options.outtype / options.quantize from --outtype. q4_0, q5_0, q4_k_m, q5_k_m, q6_k,
// iq4_nl, iq4_xs: llama-quantize's file types, applied to the f16 file. f32, f16, bf16, q8_0:
// convert_hf_to_gguf.py's outtypes, except that for a .gguf input q8_0 is llama-quantize's.
// "auto": the highest-fidelity 16-bit type, as llama.cpp guesses it (bf16 checkpoints stay
// bf16, everything else becomes f16). Returns the name for {ftype}.
StatusOr<std::string> ResolveOuttype(const ConvertFlags& flags, GgufConvertOptions& options) {
  std::string lower = flags.outtype;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  StatusOr<GgufFileType> file_type = GgufFileTypeFromName(lower);
  if (file_type.ok() && (*file_type != GgufFileType::kQ8_0 || IsGgufInput(flags.model_dir))) {
    options.outtype = GgmlType::kF16;
    options.quantize = *file_type;
    return lower;
  }
  if (lower != "auto") {
    StatusOr<GgmlType> type = GgmlTypeFromName(lower);
    if (!type.ok()) {
      return InvalidArgumentError(fmt::format("--outtype {}: expected f32, f16, bf16, q8_0, q4_0, q5_0, q4_k_m, "
                                              "q5_k_m, q6_k, iq4_nl or iq4_xs", flags.outtype));
    }
    options.outtype = *type;
  } else if (IsGgufInput(flags.model_dir)) {
    return InvalidArgumentError(fmt::format("{}: quantizing a .gguf needs --outtype q8_0, q4_0, q5_0, q4_k_m, "
                                            "q5_k_m, q6_k, iq4_nl or iq4_xs", flags.model_dir));
  } else {
    PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(flags.model_dir));
    options.outtype = config.torch_dtype == DType::kBF16 ? GgmlType::kBF16 : GgmlType::kF16;
  }
  return std::string(GgmlTypeName(options.outtype));
}

// DIR/<dir name>-<ftype>.gguf, or IN-<ftype>.gguf beside a .gguf input.
std::string DefaultOutfile(const std::string& model, const std::string& ftype) {
  const std::filesystem::path path(model);
  if (IsGgufInput(model)) return (path.parent_path() / fmt::format("{}-{}.gguf", path.stem().string(), ftype)).string();
  std::string dir_name = path.lexically_normal().filename().string();
  if (dir_name.empty()) dir_name = path.parent_path().filename().string();
  return fmt::format("{}/{}-{}.gguf", model, dir_name, ftype);
}

Status RunConvert(const ConvertFlags& flags) {
  GgufConvertOptions options;
  options.model_dir = flags.model_dir;
  options.name = flags.name;
  options.keep_mtp = !flags.no_mtp;
  PAGELLM_ASSIGN_OR_RETURN(std::string ftype, ResolveOuttype(flags, options));
  options.outfile = flags.outfile.empty() ? DefaultOutfile(flags.model_dir, ftype) : flags.outfile;
  if (size_t pos = options.outfile.find("{ftype}"); pos != std::string::npos) options.outfile.replace(pos, 7, ftype);
  PAGELLM_ASSIGN_OR_RETURN(GgufConvertReport report, ConvertToGguf(options));
  std::printf("%s\n", options.outfile.c_str());
  return OkStatus();
}

}  // namespace

void RegisterConvertCommand(CLI::App& app) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a Hugging Face Qwen2/Qwen3 checkpoint to GGUF (llama.cpp), or quantize an f16 GGUF");
  cmd->add_option("model", flags->model_dir,
                  "checkpoint directory (config.json, *.safetensors, tokenizer.json), or an f16/bf16/f32 .gguf "
                  "to quantize")
      ->required();
  cmd->add_option("--outfile", flags->outfile, "output path; {ftype} is replaced by the outtype");
  cmd->add_option("--outtype", flags->outtype,
                  "f32, f16, bf16, q8_0 (as convert_hf_to_gguf.py), auto (16-bit like the checkpoint), or "
                  "q4_k_m, q5_k_m, q6_k, q4_0, q5_0, iq4_nl, iq4_xs: the same bytes as llama-quantize (no imatrix) "
                  "on the f16 file, each weight rounded to f16 first")
      ->capture_default_str();
  cmd->add_option("--model-name", flags->name, "general.name (default: the directory name)");
  cmd->add_flag("--no-mtp", flags->no_mtp,
                "leave out the multi-token-prediction head (mtp.*, written as blk.N.nextn.* by default), as "
                "convert_hf_to_gguf.py --no-mtp");
  cmd->callback([flags] { ReportStatus(RunConvert(*flags)); });
}

}  // namespace pagellm::cli
