// Shared by the GGUF model tests (gguf_model_test, gguf_hybrid_test, gguf_mtp_test): a
// dummy checkpoint per preset, and every weight view of decoder layers by a readable name
// so a loaded HF checkpoint and its GGUF can be compared view by view.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/weights.h"

namespace pagellm::testing_util {

// A dummy checkpoint of `preset` (real Qwen3 tokenizer) under the test temp dir, written
// once per test binary run; `tag` keeps test files apart, `seed` picks the weights.
std::string TinyCheckpointDir(const std::string& preset, const std::string& tag, uint64_t seed);

// Appends every view of `layers` as ("layer L field", view), empty views included, so two
// listings of the same config line up index by index. Fused experts ([E, 2 I, H] /
// [E, H, I], the HF layout of Qwen3.5-MoE) are listed as the per-expert slices a GGUF binds.
void AppendLayerViews(const std::vector<LayerWeights>& layers, std::vector<std::pair<std::string, TensorView>>* out);

}  // namespace pagellm::testing_util
