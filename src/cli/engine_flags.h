// The engine flags shared by `generate`, `logits`, `bench throughput` and `serve`,
// spelled as vLLM spells them (`--max-model-len`, `--kv-cache-memory`, ...).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine_config.h"

namespace pagellm::cli {

// Adds the flags to `cmd`, writing into `config`. The model is a separate argument
// (positional for serve, --model elsewhere), added by the caller.
void AddEngineFlags(CLI::App* cmd, EngineConfig* config);

}  // namespace pagellm::cli
