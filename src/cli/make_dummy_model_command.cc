// `pagellm make-dummy-model`: writes a loadable HF-style model directory with the real
// config of a Qwen model and seeded random weights (see model/dummy_checkpoint.h).
//
//   pagellm make-dummy-model --preset qwen3-0.6b --out /tmp/qwen3-0.6b
//   pagellm make-dummy-model --preset qwen3-tiny --out DIR --dtype f32 --seed 7
//   pagellm make-dummy-model --list-presets
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "model/dummy_checkpoint.h"
#include "model/safetensors_writer.h"

namespace pagellm::cli {
namespace {

struct MakeDummyFlags {
  std::string preset;
  std::string out;
  std::string tokenizer;
  std::string dtype = "bf16";
  uint64_t seed = 0;
  std::string max_shard_size = "2GB";
  bool list_presets = false;
};

void ListPresets() {
  for (const DummyPreset& p : DummyPresets()) std::printf("%-14s %s\n", p.name.c_str(), p.description.c_str());
}

Status RunMakeDummyModel(const MakeDummyFlags& flags) {
  if (flags.list_presets) {
    ListPresets();
    return OkStatus();
  }
  if (flags.preset.empty() || flags.out.empty()) {
    return InvalidArgumentError("make-dummy-model needs --preset NAME and --out DIR (see --list-presets)");
  }
  DummyCheckpointOptions options;
  options.preset = flags.preset;
  options.out_dir = flags.out;
  options.tokenizer_dir = flags.tokenizer;
  options.seed = flags.seed;
  PAGELLM_ASSIGN_OR_RETURN(options.dtype, DTypeFromUserName(flags.dtype));
  PAGELLM_ASSIGN_OR_RETURN(options.max_shard_bytes, ParseByteSize(flags.max_shard_size));
  PAGELLM_ASSIGN_OR_RETURN(std::vector<std::string> files, WriteDummyCheckpoint(options));
  for (const std::string& file : files) std::printf("%s/%s\n", flags.out.c_str(), file.c_str());
  return OkStatus();
}

}  // namespace

void RegisterMakeDummyModelCommand(CLI::App& app) {
  auto flags = std::make_shared<MakeDummyFlags>();
  CLI::App* cmd = app.add_subcommand("make-dummy-model",
                                     "Write a model directory with a real Qwen config and random weights");
  cmd->add_option("--preset", flags->preset, "qwen2.5-0.5b, qwen2.5-7b, qwen3-0.6b, qwen3-8b, qwen2-tiny, qwen3-tiny, qwen3-tiny-k");
  cmd->add_option("--out", flags->out, "output directory (created if missing)");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "directory with tokenizer.json + tokenizer_config.json (default: the npm Qwen3 tokenizer)");
  cmd->add_option("--dtype", flags->dtype, "bf16, f16 or f32")->capture_default_str();
  cmd->add_option("--seed", flags->seed, "random seed; same seed => identical files")->capture_default_str();
  cmd->add_option("--max-shard-size", flags->max_shard_size, "shard above this size, e.g. 2GB, 500MB")
      ->capture_default_str();
  cmd->add_flag("--list-presets", flags->list_presets, "print the presets and exit");
  cmd->callback([flags] { ReportStatus(RunMakeDummyModel(*flags)); });
}

}  // namespace pagellm::cli
