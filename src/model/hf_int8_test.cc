// HF per-channel int8 checkpoints (compressed-tensors W8A8 / W8A16, GPTQ 8-bit, msModelSlim
// W8A8_DYNAMIC) repacked as q8_s: tiny tensors packed here from known codes and scales by
// each format's definition (the packing side, written independently of the loader's
// unpacking), then checked block for block: every code and every row's scale ends in the
// q8_s tensor bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "model/hf_quant_config.h"
#include "model/hf_quant_source.h"
#include "model/hf_quant_test_util.h"
#include "model/model_loader.h"
#include "model/safetensors_writer.h"
#include "model/weight_spec.h"
#include "tensor/element_access.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

// A linear [n, k] in its meaning: value = codes[row, col] * scales[row].
struct Int8Reference {
  int64_t n = 0, k = 0;
  std::vector<int8_t> codes;  // [n, k]
  std::vector<float> scales;  // [n]
};

// Random codes (both ends of int8 included) and scales exact in `scale_dtype`.
Int8Reference RandomInt8(int64_t n, int64_t k, uint32_t seed, DType scale_dtype = DType::kF32) {
  std::mt19937 rng(seed);
  Int8Reference r{n, k, std::vector<int8_t>(static_cast<size_t>(n * k)), std::vector<float>(static_cast<size_t>(n))};
  for (int8_t& c : r.codes) c = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  r.codes[0] = -128;
  r.codes[1] = 127;
  std::uniform_real_distribution<float> scale(-0.01f, 0.04f);
  for (float& s : r.scales) {
    s = scale(rng);
    if (scale_dtype == DType::kBF16) s = Bf16ToF32(F32ToBf16(s));
    if (scale_dtype == DType::kF16) s = F16ToF32(F32ToF16(s));
  }
  return r;
}

uint8_t Unsigned(int8_t code) { return static_cast<uint8_t>(code + 128); }  // GPTQ / pack_to_int32 storage

void PutScales(TensorStore& store, const std::string& name, const Int8Reference& r, DType dtype, bool per_tensor) {
  TensorView& t = store.Allocate(name, dtype, per_tensor ? std::vector<int64_t>{1} : std::vector<int64_t>{r.n, 1});
  for (int64_t row = 0; row < (per_tensor ? 1 : r.n); ++row) StoreElementFromF32(t.data, dtype, row, r.scales[row]);
}

// compressed-tensors int-quantized and msModelSlim: the int8 codes as P.weight.
void PutInt8Weight(TensorStore& store, const std::string& p, const Int8Reference& r) {
  TensorView& w = store.Allocate(p + ".weight", DType::kI8, {r.n, r.k});
  std::memcpy(w.data, r.codes.data(), r.codes.size());
}

// compressed-tensors pack_to_int32 with num_bits 8: byte j of word c = code of k = 4c + j, + 128.
void PutCtPacked8(TensorStore& store, const std::string& p, const Int8Reference& r) {
  TensorView& packed = store.Allocate(p + ".weight_packed", DType::kI32, {r.n, r.k / 4});
  for (int64_t row = 0; row < r.n; ++row) {
    for (int64_t c = 0; c < r.k / 4; ++c) {
      uint32_t word = 0;
      for (int j = 0; j < 4; ++j) {
        word |= uint32_t{Unsigned(r.codes[static_cast<size_t>(row * r.k + 4 * c + j)])} << (8 * j);
      }
      packed.as<int32_t>()[row * (r.k / 4) + c] = static_cast<int32_t>(word);
    }
  }
  TensorView& shape = store.Allocate(p + ".weight_shape", DType::kI64, {2});
  shape.as<int64_t>()[0] = r.n;
  shape.as<int64_t>()[1] = r.k;
  PutScales(store, p + ".weight_scale", r, DType::kBF16, false);
}

// AutoGPTQ 8-bit: qweight [K/4, N] along K, qzeros [1, N/4] (zero 128, v1 stores 127), scales [1, N].
void PutGptq8(TensorStore& store, const std::string& p, const Int8Reference& r, bool v2) {
  TensorView& qweight = store.Allocate(p + ".qweight", DType::kI32, {r.k / 4, r.n});
  for (int64_t i = 0; i < r.k / 4; ++i) {
    for (int64_t col = 0; col < r.n; ++col) {
      uint32_t word = 0;
      for (int j = 0; j < 4; ++j) {
        word |= uint32_t{Unsigned(r.codes[static_cast<size_t>(col * r.k + 4 * i + j)])} << (8 * j);
      }
      qweight.as<int32_t>()[i * r.n + col] = static_cast<int32_t>(word);
    }
  }
  TensorView& qzeros = store.Allocate(p + ".qzeros", DType::kI32, {1, r.n / 4});
  for (int64_t c = 0; c < r.n / 4; ++c) qzeros.as<int32_t>()[c] = v2 ? static_cast<int32_t>(0x80808080u) : 0x7F7F7F7F;
  TensorView& scales = store.Allocate(p + ".scales", DType::kF16, {1, r.n});
  for (int64_t col = 0; col < r.n; ++col) scales.as<uint16_t>()[col] = F32ToF16(r.scales[static_cast<size_t>(col)]);
  store.Allocate(p + ".g_idx", DType::kI32, {r.k});  // all group 0
}

void PutAscend(TensorStore& store, const std::string& p, const Int8Reference& r) {
  PutInt8Weight(store, p, r);
  PutScales(store, p + ".weight_scale", r, DType::kBF16, false);
  store.Allocate(p + ".weight_offset", DType::kBF16, {r.n, 1});  // zeros
}

Json CtInt8Json(const std::string& strategy, bool activations, const std::string& format = "int-quantized") {
  Json weights = {{"num_bits", 8}, {"type", "int"}, {"symmetric", true}, {"dynamic", false},
                  {"strategy", strategy}, {"group_size", nullptr}, {"observer", "minmax"}};
  Json act = activations ? Json{{"num_bits", 8}, {"type", "int"}, {"symmetric", true}, {"dynamic", true},
                                {"strategy", "token"}, {"observer", nullptr}}
                         : Json(nullptr);
  return {{"quant_method", "compressed-tensors"}, {"format", format}, {"quantization_status", "compressed"},
          {"ignore", {"lm_head"}}, {"kv_cache_scheme", nullptr},
          {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", act},
                                          {"output_activations", nullptr}, {"format", format}}}}}};
}

Json Gptq8Json(bool v2) {
  return {{"quant_method", "gptq"}, {"bits", 8}, {"group_size", -1}, {"sym", true}, {"desc_act", false},
          {"checkpoint_format", v2 ? "gptq_v2" : "gptq"}};
}

// An msModelSlim description pasted into quantization_config, for `modules`.
Json AscendJson(const std::vector<std::string>& modules, const std::string& type = "W8A8_DYNAMIC") {
  Json j = {{"model_quant_type", type}, {"version", "1.0.0"}, {"model.norm.weight", "FLOAT"}};
  for (const std::string& m : modules) {
    for (const char* suffix : {".weight", ".weight_scale", ".weight_offset"}) j[m + suffix] = type;
  }
  return j;
}

using hf_quant_testing::ErrorOf;
using hf_quant_testing::Repack;

// `name` is q8_s [r.n, r.k] whose every block holds r's codes and its row's scale bit for bit.
void ExpectLossless(const TensorSource& source, const std::string& name, const Int8Reference& r) {
  const TensorView* w = source.Find(name);
  ASSERT_NE(w, nullptr) << name;
  ASSERT_EQ(w->dtype, DType::kQ8_S);
  ASSERT_EQ(w->shape, (std::vector<int64_t>{r.n, r.k}));
  const auto* blocks = static_cast<const BlockQ8_S*>(w->data);
  int mismatches = 0;
  for (int64_t b = 0; b < r.n * r.k / 32; ++b) {
    const int64_t row = b / (r.k / 32);
    if (std::memcmp(&blocks[b].d, &r.scales[static_cast<size_t>(row)], sizeof(float)) != 0 && mismatches++ < 5) {
      ADD_FAILURE() << name << " block " << b << ": scale " << blocks[b].d << " != " << r.scales[row];
    }
    if (std::memcmp(blocks[b].qs, r.codes.data() + 32 * b, 32) != 0 && mismatches++ < 5) {
      ADD_FAILURE() << name << " block " << b << ": codes differ";
    }
  }
  EXPECT_EQ(mismatches, 0);
  std::vector<float> row(static_cast<size_t>(r.k));
  DequantizeRowQ8_S(blocks + (r.n - 1) * (r.k / 32), r.k, row.data());
  for (int64_t col = 0; col < r.k; ++col) {
    ASSERT_EQ(row[static_cast<size_t>(col)], r.codes[static_cast<size_t>((r.n - 1) * r.k + col)] * r.scales[r.n - 1]);
  }
}

const std::string kP = "model.layers.0.mlp.down_proj";

TEST(HfInt8RepackTest, CompressedTensorsW8A8IsLossless) {
  for (DType scale_dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (bool per_tensor : {false, true}) {
      SCOPED_TRACE(testing::Message() << DTypeName(scale_dtype) << (per_tensor ? " tensor" : " channel"));
      TensorStore store;
      Int8Reference r = RandomInt8(24, 96, 3, scale_dtype);
      if (per_tensor) r.scales.assign(r.scales.size(), r.scales[0]);
      PutInt8Weight(store, kP, r);
      PutScales(store, kP + ".weight_scale", r, scale_dtype, per_tensor);
      store.Allocate("lm_head.weight", DType::kBF16, {8, 96});  // ignored: stays float
      auto source = Repack(store, CtInt8Json(per_tensor ? "tensor" : "channel", true));
      ASSERT_TRUE(source.ok()) << source.status();
      ExpectLossless(**source, kP + ".weight", r);
      EXPECT_EQ((*source)->Find(kP + ".weight_scale"), nullptr);
      EXPECT_EQ((*source)->Find("lm_head.weight"), store.Find("lm_head.weight"));
      EXPECT_EQ((*source)->Names(), (std::vector<std::string>{"lm_head.weight", kP + ".weight"}));
      const std::string origin = (*source)->Origin(kP + ".weight");
      const std::string want = per_tensor ? "int8 tensor sym W8A8 as q8_s" : "int8 channel sym W8A8 as q8_s";
      EXPECT_NE(origin.find("compressed-tensors " + want), std::string::npos) << origin;
    }
  }
}

TEST(HfInt8RepackTest, CompressedTensorsW8A16PackedIsLossless) {
  TensorStore store;
  const Int8Reference r = RandomInt8(16, 128, 5, DType::kBF16);
  PutCtPacked8(store, kP, r);
  auto source = Repack(store, CtInt8Json("channel", false, "pack-quantized"));
  ASSERT_TRUE(source.ok()) << source.status();
  ExpectLossless(**source, kP + ".weight", r);
  EXPECT_EQ((*source)->Names(), (std::vector<std::string>{kP + ".weight"}));
}

TEST(HfInt8RepackTest, GptqInt8V1AndV2AreLossless) {
  for (bool v2 : {false, true}) {
    SCOPED_TRACE(v2 ? "v2" : "v1");
    TensorStore store;
    const Int8Reference r = RandomInt8(32, 64, 7, DType::kF16);
    PutGptq8(store, kP, r, v2);
    auto source = Repack(store, Gptq8Json(v2));
    ASSERT_TRUE(source.ok()) << source.status();
    ExpectLossless(**source, kP + ".weight", r);
    EXPECT_EQ((*source)->Names(), (std::vector<std::string>{kP + ".weight"}));
  }
}

TEST(HfInt8RepackTest, AscendW8A8DynamicIsLossless) {
  TensorStore store;
  const Int8Reference r = RandomInt8(40, 64, 9, DType::kBF16);
  PutAscend(store, kP, r);
  store.Allocate(kP + ".bias", DType::kBF16, {40});  // passes through
  auto source = Repack(store, AscendJson({kP}));
  ASSERT_TRUE(source.ok()) << source.status();
  ExpectLossless(**source, kP + ".weight", r);
  EXPECT_EQ((*source)->Names(), (std::vector<std::string>{kP + ".bias", kP + ".weight"}));
}

// Golden words read off the producers' own code: AutoGPTQ's pack shifts input 4i + j by 8j
// bits and stores sym zeros as 128 - 1; pack_to_int32 adds 1 << (num_bits - 1) to each code.
TEST(HfInt8RepackTest, GoldenWords) {
  const int8_t want[4] = {1, 0, 127, -128};  // stored 0x81, 0x80, 0xFF, 0x00
  const int32_t word = 0x00FF8081;
  {
    TensorStore store;
    TensorView& qweight = store.Allocate(kP + ".qweight", DType::kI32, {8, 4});
    for (int i = 0; i < 32; ++i) qweight.as<int32_t>()[i] = word;
    TensorView& qzeros = store.Allocate(kP + ".qzeros", DType::kI32, {1, 1});
    qzeros.as<int32_t>()[0] = 0x7F7F7F7F;
    TensorView& scales = store.Allocate(kP + ".scales", DType::kF16, {1, 4});
    for (int n = 0; n < 4; ++n) scales.as<uint16_t>()[n] = F32ToF16(0.5f * static_cast<float>(n + 1));
    auto source = Repack(store, Gptq8Json(false));
    ASSERT_TRUE(source.ok()) << source.status();
    const auto* w = static_cast<const BlockQ8_S*>((*source)->Find(kP + ".weight")->data);
    for (int n = 0; n < 4; ++n) {
      EXPECT_EQ(w[n].d, 0.5f * static_cast<float>(n + 1));
      for (int k = 0; k < 32; ++k) EXPECT_EQ(w[n].qs[k], want[k % 4]) << n << "," << k;
    }
  }
  {
    TensorStore store;
    TensorView& packed = store.Allocate(kP + ".weight_packed", DType::kI32, {1, 8});
    for (int c = 0; c < 8; ++c) packed.as<int32_t>()[c] = word;
    TensorView& scale = store.Allocate(kP + ".weight_scale", DType::kF32, {1, 1});
    scale.as<float>()[0] = 3.0f;
    auto source = Repack(store, CtInt8Json("channel", false, "pack-quantized"));
    ASSERT_TRUE(source.ok()) << source.status();
    const auto* w = static_cast<const BlockQ8_S*>((*source)->Find(kP + ".weight")->data);
    EXPECT_EQ(w[0].d, 3.0f);
    for (int k = 0; k < 32; ++k) EXPECT_EQ(w[0].qs[k], want[k % 4]) << k;
  }
}

TEST(HfInt8RepackTest, TensorsThatDoNotFitAreRefusedByName) {
  {  // GPTQ zeros other than 128 (an asymmetric checkpoint labelled sym).
    TensorStore store;
    PutGptq8(store, kP, RandomInt8(8, 32, 1), false);
    const_cast<TensorView*>(store.Find(kP + ".qzeros"))->as<int32_t>()[0] = 0x7F7F7F80;
    const std::string error = ErrorOf(store, Gptq8Json(false));
    EXPECT_NE(error.find(kP + ".qzeros': zero point 129 of column 0"), std::string::npos) << error;
  }
  {  // msModelSlim offsets must be 0.
    TensorStore store;
    PutAscend(store, kP, RandomInt8(8, 32, 1));
    StoreElementFromF32(const_cast<TensorView*>(store.Find(kP + ".weight_offset"))->data, DType::kBF16, 5, 3.0f);
    const std::string error = ErrorOf(store, AscendJson({kP}));
    EXPECT_NE(error.find(kP + ".weight_offset': offset 3 of row 5 is not 0"), std::string::npos) << error;
  }
  {  // Per-group scales [N, K / 32] have no q8_s form.
    TensorStore store;
    const Int8Reference r = RandomInt8(8, 64, 1);
    PutInt8Weight(store, kP, r);
    store.Allocate(kP + ".weight_scale", DType::kF32, {8, 2});
    const std::string error = ErrorOf(store, CtInt8Json("channel", true));
    EXPECT_NE(error.find(kP + ".weight_scale has shape [8, 2]"), std::string::npos) << error;
  }
  {  // K = 48: not whole q8_s blocks.
    TensorStore store;
    const Int8Reference r = RandomInt8(8, 48, 1);
    PutInt8Weight(store, kP, r);
    PutScales(store, kP + ".weight_scale", r, DType::kF32, false);
    const std::string error = ErrorOf(store, CtInt8Json("channel", true));
    EXPECT_NE(error.find(kP + ".weight: in_features 48 is not a multiple of 32"), std::string::npos) << error;
  }
  {  // int-quantized expects int8 codes in P.weight.
    TensorStore store;
    store.Allocate(kP + ".weight", DType::kBF16, {8, 32});
    store.Allocate(kP + ".weight_scale", DType::kF32, {8, 1});
    const std::string error = ErrorOf(store, CtInt8Json("channel", true));
    EXPECT_NE(error.find("'" + kP + ".weight' is bf16 [8, 32]; expected an int8 matrix"), std::string::npos) << error;
  }
  {  // A NaN scale.
    TensorStore store;
    Int8Reference r = RandomInt8(8, 32, 1);
    r.scales[2] = std::nanf("");
    PutInt8Weight(store, kP, r);
    PutScales(store, kP + ".weight_scale", r, DType::kF32, false);
    const std::string error = ErrorOf(store, CtInt8Json("channel", true));
    EXPECT_NE(error.find("scale nan of row 2 is not finite"), std::string::npos) << error;
  }
}

// --- binding and loading ---------------------------------------------------------------

// qwen3: H 64, 4 heads of 16 (q 64), 2 KV heads (kv 32), I 128, V 40, untied.
Json TinyConfigJson() {
  return {{"model_type", "qwen3"},    {"vocab_size", 40},       {"hidden_size", 64},
          {"intermediate_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"head_dim", 16},         {"tie_word_embeddings", false},
          {"torch_dtype", "bfloat16"}};
}

bool IsProjection(const WeightSpec& spec) {
  return spec.role == WeightRole::kQProj || spec.role == WeightRole::kKProj || spec.role == WeightRole::kVProj ||
         spec.role == WeightRole::kOProj || spec.role == WeightRole::kGateUp || spec.role == WeightRole::kDown;
}

// The tiny model on disk with every projection stored by `put` (float tensors bf16);
// `refs` gets each projection's reference.
std::string WriteTinyInt8Checkpoint(const std::string& name, const Json& config_json,
                                    void (*put)(TensorStore&, const std::string&, const Int8Reference&),
                                    std::map<std::string, Int8Reference>& refs) {
  TensorStore store;
  uint32_t seed = 100;
  for (const WeightSpec& spec : ListWeightSpecs(ParseModelConfig(config_json).value())) {
    if (IsProjection(spec)) {
      Int8Reference r = RandomInt8(spec.shape[0], spec.shape[1], seed++, DType::kBF16);
      put(store, spec.name.substr(0, spec.name.size() - 7), r);  // "P.weight" -> "P"
      refs[spec.name] = std::move(r);
      continue;
    }
    TensorView& v = store.Allocate(spec.name, DType::kBF16, spec.shape);
    for (int64_t i = 0; i < v.numel(); ++i) StoreElementFromF32(v.data, v.dtype, i, static_cast<float>(i % 7) * 0.25f);
  }
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  SafetensorsWriter writer;
  for (const std::string& t : store.Names()) EXPECT_TRUE(writer.Add(t, *store.Find(t)).ok());
  EXPECT_TRUE(writer.WriteCheckpoint(dir, 1'000'000'000).ok());
  std::ofstream(dir + "/config.json") << config_json.dump();
  return dir;
}

void ExpectLoadedAsQ8_S(const LoadedModel& model, const std::map<std::string, Int8Reference>& refs) {
  EXPECT_EQ(model.weights.dtype, DType::kQ8_S);
  EXPECT_EQ(model.weights.embed_tokens.dtype, DType::kBF16);
  const TensorView& down = model.weights.layers[1].down_proj;
  const Int8Reference& r = refs.at("model.layers.1.mlp.down_proj.weight");
  ASSERT_EQ(down.dtype, DType::kQ8_S);
  const auto* blocks = static_cast<const BlockQ8_S*>(down.data);
  for (int64_t b = 0; b < r.n * r.k / 32; ++b) {
    ASSERT_EQ(blocks[b].d, r.scales[static_cast<size_t>(b / (r.k / 32))]) << b;
    ASSERT_EQ(std::memcmp(blocks[b].qs, r.codes.data() + 32 * b, 32), 0) << b;
  }
}

void PutCtInt8(TensorStore& store, const std::string& p, const Int8Reference& r) {
  PutInt8Weight(store, p, r);
  PutScales(store, p + ".weight_scale", r, DType::kBF16, false);
}

TEST(HfInt8LoaderTest, LoadsCompressedTensorsW8A8FromDisk) {
  Json config = TinyConfigJson();
  config["quantization_config"] = CtInt8Json("channel", true);
  std::map<std::string, Int8Reference> refs;
  LoadOptions options;
  options.model_path = WriteTinyInt8Checkpoint("hf_int8_ct_tiny", config, PutCtInt8, refs);
  auto model = LoadModel(options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->quantization.Describe(), "compressed-tensors int8 channel sym W8A8");
  ExpectLoadedAsQ8_S(*model, refs);
  options.quantization = "compressed-tensors";
  EXPECT_TRUE(LoadModel(options).ok());
  options.quantization = "ascend";
  auto mismatch = LoadModel(options);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("model config (compressed-tensors) does not match the quantization "
                                             "method specified in the `quantization` argument (ascend)"),
            std::string::npos) << mismatch.status();
}

// msModelSlim: config.json without quantization_config, the description beside it (here
// under an older msModelSlim name).
TEST(HfInt8LoaderTest, LoadsAscendW8A8DynamicWithItsDescriptionFile) {
  std::map<std::string, Int8Reference> refs;
  LoadOptions options;
  options.model_path = WriteTinyInt8Checkpoint("hf_int8_ascend_tiny", TinyConfigJson(), PutAscend, refs);
  std::vector<std::string> modules;
  for (const auto& [name, ref] : refs) modules.push_back(name.substr(0, name.size() - 7));
  std::ofstream(options.model_path + "/quant_model_description_w8a8_dynamic.json") << AscendJson(modules).dump();
  options.quantization = "ascend";
  auto model = LoadModel(options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->quantization.method, HfQuantMethod::kAscend);
  EXPECT_EQ(model->quantization.Describe(), "ascend int8 channel sym W8A8_DYNAMIC");
  ExpectLoadedAsQ8_S(*model, refs);
  options.quantization = "fp8";
  EXPECT_NE(LoadModel(options).status().message().find("model config (ascend) does not match"), std::string::npos);

  // A second typed description makes it ambiguous; vLLM-Ascend's own name then wins.
  std::ofstream(options.model_path + "/quant_model_description_w8a8.json") << AscendJson(modules, "W8A8").dump();
  options.quantization = "none";
  auto ambiguous = LoadModel(options);
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("holds 2 msModelSlim descriptions"), std::string::npos)
      << ambiguous.status();
  std::ofstream(options.model_path + "/quant_model_description.json") << AscendJson(modules).dump();
  EXPECT_TRUE(LoadModel(options).ok());
}

}  // namespace
}  // namespace pagellm
