// WriteTinyQwen3 (part of gguf_test_tool): a 2-layer qwen3-shaped GGUF with random weights and
// the real Qwen3 tokenizer metadata, written the way `pagellm convert` will: metadata from
// BuildGgufModelMetadata/BuildGgufTokenizerMetadata, names from HfToGgufTensorName,
// 2-D weights in `dtype`, 1-D norms in F32, tied embeddings (no output.weight).
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/json.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_names.h"
#include "gguf/gguf_quants.h"
#include "gguf/gguf_tokenizer_metadata.h"
#include "gguf/gguf_writer.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

// H=64, 4 query heads and 2 KV heads of 16, FFN 128; the vocabulary is the real one.
Json TinyQwen3Config() {
  return Json::parse(R"({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
    "num_hidden_layers": 2, "max_position_embeddings": 4096, "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "rope_theta": 1000000, "rms_norm_eps": 1e-6, "vocab_size": 151936, "bos_token_id": 151643,
    "eos_token_id": 151645, "tie_word_embeddings": true})");
}

std::vector<std::byte> Encode(const std::vector<float>& x, GgmlType type) {
  std::vector<std::byte> out(GgmlRowBytes(type, static_cast<int64_t>(x.size())));
  if (type == GgmlType::kF32) {
    std::memcpy(out.data(), x.data(), out.size());
  } else if (type == GgmlType::kF16) {
    for (size_t i = 0; i < x.size(); ++i) {
      uint16_t h = F32ToF16(x[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    QuantizeQ8_0(x.data(), static_cast<int64_t>(x.size()), out.data());
  }
  return out;
}

// (HF name, PyTorch shape) of every tensor of the tiny model.
std::vector<std::pair<std::string, std::vector<int64_t>>> TinyTensors(const Json& c) {
  const int64_t h = c["hidden_size"], i = c["intermediate_size"], v = c["vocab_size"], hd = c["head_dim"];
  const int64_t q = c["num_attention_heads"].get<int64_t>() * hd, kv = c["num_key_value_heads"].get<int64_t>() * hd;
  std::vector<std::pair<std::string, std::vector<int64_t>>> t = {{"model.embed_tokens.weight", {v, h}},
                                                                 {"model.norm.weight", {h}}};
  for (int l = 0; l < c["num_hidden_layers"].get<int>(); ++l) {
    auto p = fmt::format("model.layers.{}.", l);
    t.insert(t.end(), {{p + "input_layernorm.weight", {h}}, {p + "self_attn.q_proj.weight", {q, h}},
                       {p + "self_attn.k_proj.weight", {kv, h}}, {p + "self_attn.v_proj.weight", {kv, h}},
                       {p + "self_attn.o_proj.weight", {h, q}}, {p + "self_attn.q_norm.weight", {hd}},
                       {p + "self_attn.k_norm.weight", {hd}}, {p + "post_attention_layernorm.weight", {h}},
                       {p + "mlp.gate_proj.weight", {i, h}}, {p + "mlp.up_proj.weight", {i, h}},
                       {p + "mlp.down_proj.weight", {h, i}}});
  }
  return t;
}

}  // namespace

int WriteTinyQwen3(const std::string& out, const std::string& tokenizer_dir, const std::string& dtype) {
  StatusOr<GgmlType> type = GgmlTypeFromName(dtype);
  StatusOr<Json> tok = ReadJsonFile(tokenizer_dir + "/tokenizer.json");
  StatusOr<Json> tc = ReadJsonFile(tokenizer_dir + "/tokenizer_config.json");
  if (!type.ok() || !tok.ok() || !tc.ok()) {
    std::fprintf(stderr, "tiny-qwen3: bad dtype or tokenizer dir %s\n", tokenizer_dir.c_str());
    return 1;
  }
  const Json config = TinyQwen3Config();
  GgufWriter w;
  StatusOr<GgufMetadata> model_kv = BuildGgufModelMetadata(config, *type, "pagellm-tiny-qwen3");
  StatusOr<GgufMetadata> tok_kv = BuildGgufTokenizerMetadata(*tok, *tc, config, "qwen2");
  if (!model_kv.ok() || !tok_kv.ok()) return 1;
  for (auto& [k, v] : *model_kv) w.AddMetadata(k, v);
  for (auto& [k, v] : *tok_kv) w.AddMetadata(k, v);
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [hf_name, shape] : TinyTensors(config)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const bool is_norm = shape.size() == 1;
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = is_norm ? 1.0f + 0.1f * normal(rng) : 0.05f * normal(rng);
    StatusOr<std::string> name = HfToGgufTensorName("qwen3", hf_name);
    GgmlType t = is_norm ? GgmlType::kF32 : *type;
    if (!name.ok() || !w.AddTensor(*name, t, {shape.rbegin(), shape.rend()}, Encode(x, t)).ok()) return 1;
  }
  Status s = w.WriteFile(out);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok() ? 0 : 1;
}

}  // namespace pagellm
