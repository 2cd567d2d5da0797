// `pagellm logits`: the logits at every prompt position, written as a .npy float32
// array [T, vocab] — the hook the golden tests use to compare with a reference.
#include <cstdio>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/prompt_input.h"
#include "engine/engine_core.h"

namespace pagellm::cli {
namespace {

Status WriteNpy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) return PermissionDeniedError(fmt::format("cannot create {}", path));
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  return out ? OkStatus() : DataLossError(fmt::format("cannot write {}", path));
}

}  // namespace

void RegisterLogitsCommand(CLI::App& app) {
  struct Flags {
    EngineConfig engine;
    std::string prompt, prompt_ids, out;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("logits", "write the logits at every prompt position as .npy [T, vocab]");
  cmd->add_option("--model", f->engine.model, "model directory")->required();
  cmd->add_option("--prompt", f->prompt, "prompt text");
  cmd->add_option("--prompt-ids", f->prompt_ids, "prompt token ids, e.g. 1,2,3");
  cmd->add_option("--out", f->out, "output .npy path")->required();
  AddEngineFlags(cmd, &f->engine);
  cmd->callback([f] {
    if (RunIfMpiWorkerRank(f->engine)) return;
    auto core = EngineCore::Create(f->engine);
    if (!ReportStatus(core.status())) return;
    std::vector<int32_t> ids;
    if (!f->prompt_ids.empty()) {
      auto parsed = ParseIdList(f->prompt_ids);
      if (!ReportStatus(parsed.status())) return;
      ids = *parsed;
    } else {
      ids = (*core)->tokenizer().Encode(f->prompt);
    }
    auto logits = (*core)->ScorePrompt(ids);
    if (!ReportStatus(logits.status())) return;
    size_t vocab = static_cast<size_t>((*core)->model_config().vocab_size);
    ReportStatus(WriteNpy(f->out, *logits, ids.size(), vocab));
  });
}

}  // namespace pagellm::cli
