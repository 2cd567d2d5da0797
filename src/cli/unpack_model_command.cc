// `pagellm unpack-model`: expands a compact checkpoint (model/compact_checkpoint.h) into
// an ordinary Hugging Face model folder that pagellm, `pagellm convert` and transformers load.
//
//   pagellm unpack-model assets/models/pydoc-qwen3 --out models/pydoc-qwen3
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "model/compact_checkpoint.h"

namespace pagellm::cli {

void RegisterUnpackModelCommand(CLI::App& app) {
  auto options = std::make_shared<UnpackOptions>();
  CLI::App* cmd = app.add_subcommand("unpack-model",
                                     "Expand a compact checkpoint (e.g. assets/models/pydoc-qwen3) into a model folder");
  cmd->add_option("src", options->src_dir, "folder with compact.safetensors and config.json")->required();
  cmd->add_option("--out", options->out_dir, "model folder to write")->required();
  cmd->add_option("--tokenizer", options->tokenizer_dir, "folder with tokenizer.json and tokenizer_config.json "
                                                         "(default: the Qwen3 tokenizer in .refs/)");
  cmd->callback([options] {
    auto files = UnpackCompactCheckpoint(*options);
    if (!ReportStatus(files.status())) return;
    for (const std::string& f : *files) std::printf("%s/%s\n", options->out_dir.c_str(), f.c_str());
  });
}

}  // namespace pagellm::cli
