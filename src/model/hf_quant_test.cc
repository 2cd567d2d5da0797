// HF int4 checkpoints (AWQ, GPTQ, compressed-tensors) repacked as q4_z: tiny tensors packed
// here from known codes / zeros / scales by each format's definition (the packing side,
// written independently of the loader's unpacking), then checked value for value
// against (code - zero) * scale in float32 through DequantizeRowKQuant.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "model/convert.h"
#include "model/hf_int4_linear.h"
#include "model/hf_int4_test_util.h"
#include "model/hf_quant_config.h"
#include "model/hf_quant_source.h"
#include "model/hf_quant_test_util.h"
#include "model/model_loader.h"
#include "model/quantization_flag.h"
#include "model/safetensors_writer.h"
#include "model/shard_plan.h"
#include "model/weight_binding.h"
#include "model/weight_spec.h"
#include "tensor/element_access.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

using hf_int4_testing::AwqJson;
using hf_int4_testing::CompressedJson;
using hf_int4_testing::ExpectLossless;
using hf_int4_testing::GptqJson;
using hf_int4_testing::Int4Reference;
using hf_int4_testing::Ints;
using hf_int4_testing::Parse;
using hf_int4_testing::PutAwq;
using hf_int4_testing::PutCompressed;
using hf_int4_testing::PutGptq;
using hf_int4_testing::RandomReference;
using hf_quant_testing::ErrorOf;
using hf_quant_testing::Repack;

const std::string kP = "model.layers.0.mlp.down_proj";

TEST(HfQuantRepackTest, AwqGemmIsLossless) {
  for (int64_t group : {32, 64, 128, -1}) {
    SCOPED_TRACE(group);
    TensorStore store;
    const Int4Reference r = RandomReference(48, 256, group, /*symmetric=*/false, 1 + static_cast<uint32_t>(group & 255));
    PutAwq(store, kP, r);
    store.Allocate("model.norm.weight", DType::kF16, {8});
    auto source = Repack(store, AwqJson(group));
    ASSERT_TRUE(source.ok()) << source.status();
    ExpectLossless(**source, kP + ".weight", r);
    // The packed tensors are consumed; the rest passes through.
    EXPECT_EQ((*source)->num_repacked(), 1u);
    for (const char* hidden : {".qweight", ".qzeros", ".scales"}) EXPECT_EQ((*source)->Find(kP + hidden), nullptr);
    EXPECT_EQ((*source)->Find("model.norm.weight"), store.Find("model.norm.weight"));
    EXPECT_EQ((*source)->Names(), (std::vector<std::string>{kP + ".weight", "model.norm.weight"}));
    EXPECT_NE((*source)->Origin(kP + ".weight").find("awq int4"), std::string::npos);
  }
}

// Golden words, from the formats' own unpacking code rather than from this file's packers:
// AutoAWQ / vLLM read column j of an int32 from nibble {0, 4, 1, 5, 2, 6, 3, 7}[j]; GPTQ v1
// adds 1 to the stored zero; compressed-tensors subtracts 8 from a symmetric code.
TEST(HfQuantRepackTest, GoldenWordsOfEachFormat) {
  const int32_t nibble_i_is_i = 0x76543210;
  {
    TensorStore store;
    TensorView& qweight = store.Allocate(kP + ".qweight", DType::kI32, {32, 1});
    for (int k = 0; k < 32; ++k) Ints(qweight)[k] = nibble_i_is_i;
    store.Allocate(kP + ".qzeros", DType::kI32, {1, 1});  // zeros 0
    TensorView& scales = store.Allocate(kP + ".scales", DType::kF16, {1, 8});
    for (int n = 0; n < 8; ++n) scales.as<uint16_t>()[n] = F32ToF16(1.0f);
    auto source = Repack(store, AwqJson(-1));
    ASSERT_TRUE(source.ok()) << source.status();
    const auto* w = static_cast<const BlockQ4_Z*>((*source)->Find(kP + ".weight")->data);
    const int kAwqReverseOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    for (int n = 0; n < 8; ++n) EXPECT_EQ(Q4_ZCode(w[n], 5), kAwqReverseOrder[n]) << n;
  }
  {
    TensorStore store;
    TensorView& qweight = store.Allocate(kP + ".qweight", DType::kI32, {4, 8});
    for (int i = 0; i < 32; ++i) Ints(qweight)[i] = nibble_i_is_i;  // input k = 8i + j holds code j
    TensorView& qzeros = store.Allocate(kP + ".qzeros", DType::kI32, {1, 1});
    Ints(qzeros)[0] = 0x77777777;  // sym v1: 7 stored for 8
    TensorView& scales = store.Allocate(kP + ".scales", DType::kF16, {1, 8});
    for (int n = 0; n < 8; ++n) scales.as<uint16_t>()[n] = F32ToF16(0.5f);
    auto source = Repack(store, GptqJson(-1, true, false));
    ASSERT_TRUE(source.ok()) << source.status();
    std::vector<float> row(32);
    DequantizeRowKQuant(DType::kQ4_Z, (*source)->Find(kP + ".weight")->data, 32, row.data());
    for (int k = 0; k < 32; ++k) EXPECT_EQ(row[static_cast<size_t>(k)], (k % 8 - 8) * 0.5f) << k;
  }
  {
    TensorStore store;
    TensorView& packed = store.Allocate(kP + ".weight_packed", DType::kI32, {1, 4});
    for (int c = 0; c < 4; ++c) Ints(packed)[c] = static_cast<int32_t>(0x89ABCDEFu);  // k = 8c + j holds 15 - j
    TensorView& scale = store.Allocate(kP + ".weight_scale", DType::kBF16, {1, 1});
    scale.as<uint16_t>()[0] = F32ToBf16(2.0f);
    auto source = Repack(store, CompressedJson(true, -1));
    ASSERT_TRUE(source.ok()) << source.status();
    std::vector<float> row(32);
    DequantizeRowKQuant(DType::kQ4_Z, (*source)->Find(kP + ".weight")->data, 32, row.data());
    for (int k = 0; k < 32; ++k) EXPECT_EQ(row[static_cast<size_t>(k)], (15 - k % 8 - 8) * 2.0f) << k;
  }
}

TEST(HfQuantRepackTest, GptqV1AndV2SymAndAsymAreLossless) {
  for (bool v2 : {false, true}) {
    for (bool sym : {true, false}) {
      for (int64_t group : {32, 64, 128, -1}) {
        SCOPED_TRACE(testing::Message() << "v2 " << v2 << " sym " << sym << " group " << group);
        TensorStore store;
        // v1 cannot store zero 0 (it stores zero - 1): AutoGPTQ's format, kept as is.
        const Int4Reference r = RandomReference(40, 256, group, sym, 7 + static_cast<uint32_t>(group & 255), v2 ? 0 : 1);
        PutGptq(store, kP, r, v2, /*with_g_idx=*/group != 64);
        auto source = Repack(store, GptqJson(group, sym, v2));
        ASSERT_TRUE(source.ok()) << source.status();
        ExpectLossless(**source, kP + ".weight", r);
        EXPECT_EQ((*source)->Find(kP + ".g_idx"), nullptr);
        EXPECT_EQ((*source)->Names().size(), 1u);
      }
    }
  }
}

TEST(HfQuantRepackTest, CompressedTensorsGroupAndChannelAreLossless) {
  for (bool symmetric : {true, false}) {
    for (int64_t group : {32, 128, -1}) {
      for (DType scale_dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
        SCOPED_TRACE(testing::Message() << "sym " << symmetric << " group " << group << " " << DTypeName(scale_dtype));
        TensorStore store;
        // 44 rows: the zero points' last packed row is half used.
        const Int4Reference r = RandomReference(44, 256, group, symmetric, 11 + static_cast<uint32_t>(group & 255), 0,
                                                /*bf16_exact=*/scale_dtype == DType::kBF16);
        PutCompressed(store, kP, r, symmetric, scale_dtype);
        auto source = Repack(store, CompressedJson(symmetric, group));
        ASSERT_TRUE(source.ok()) << source.status();
        ExpectLossless(**source, kP + ".weight", r);
        EXPECT_EQ((*source)->Names(), (std::vector<std::string>{kP + ".weight"}));
      }
    }
  }
}

TEST(HfQuantRepackTest, GeometryErrorsNameTheTensor) {
  {  // K = 48: not whole q4_z blocks.
    TensorStore store;
    PutAwq(store, kP, RandomReference(16, 48, -1, false, 3));
    const std::string error = ErrorOf(store, AwqJson(-1));
    EXPECT_NE(error.find(kP + ".qweight"), std::string::npos) << error;
    EXPECT_NE(error.find("not a multiple of 32"), std::string::npos) << error;
  }
  {  // G = 48 on K = 96.
    TensorStore store;
    PutGptq(store, kP, RandomReference(16, 96, 48, true, 3, 1), false);
    const std::string error = ErrorOf(store, GptqJson(48, true, false));
    EXPECT_NE(error.find(kP + ".qweight"), std::string::npos) << error;
    EXPECT_NE(error.find("group_size 48"), std::string::npos) << error;
  }
  {  // The config's group size disagrees with the stored scales.
    TensorStore store;
    PutAwq(store, kP, RandomReference(16, 128, 64, false, 3));
    const std::string error = ErrorOf(store, AwqJson(32));
    EXPECT_NE(error.find(kP + ".qzeros"), std::string::npos) << error;
  }
}

TEST(HfQuantRepackTest, ScalesFp16CannotHoldAreRefused) {
  {
    TensorStore store;
    Int4Reference r = RandomReference(16, 64, 32, true, 5);
    r.scales[3] = 0.1f;  // not an fp16 value
    PutCompressed(store, kP, r, true, DType::kF32);
    const std::string error = ErrorOf(store, CompressedJson(true, 32));
    EXPECT_NE(error.find(kP + ".weight_scale"), std::string::npos) << error;
    EXPECT_NE(error.find("0.1"), std::string::npos) << error;
    EXPECT_NE(error.find("fp16"), std::string::npos) << error;
  }
  {  // bf16 beyond fp16's range.
    TensorStore store;
    Int4Reference r = RandomReference(16, 64, 32, true, 5, 0, true);
    r.scales[0] = Bf16ToF32(F32ToBf16(1e5f));
    PutCompressed(store, kP, r, true, DType::kBF16);
    const std::string error = ErrorOf(store, CompressedJson(true, 32));
    EXPECT_NE(error.find(kP + ".weight_scale"), std::string::npos) << error;
    EXPECT_NE(error.find("99840"), std::string::npos) << error;
  }
}

TEST(HfQuantRepackTest, OutOfRangeZerosAndMixedModulesAreRefused) {
  {  // v1 stored 15 means zero 16.
    TensorStore store;
    PutGptq(store, kP, RandomReference(16, 64, 32, false, 9, 1), true);  // written as v2 ...
    Ints(*const_cast<TensorView*>(store.Find(kP + ".qzeros")))[0] |= 0xF;
    const std::string error = ErrorOf(store, GptqJson(32, false, false));  // ... read as v1
    EXPECT_NE(error.find(kP + ".qzeros"), std::string::npos) << error;
    EXPECT_NE(error.find("zero point 16"), std::string::npos) << error;
  }
  {  // A module stored both ways.
    TensorStore store;
    PutAwq(store, kP, RandomReference(16, 64, 32, false, 9));
    store.Allocate(kP + ".weight", DType::kF16, {16, 64});
    EXPECT_NE(ErrorOf(store, AwqJson(32)).find("both a float"), std::string::npos);
  }
  {  // Asymmetric compressed-tensors without its zero points.
    TensorStore store;
    PutCompressed(store, kP, RandomReference(16, 64, 32, true, 9), /*symmetric=*/true);
    EXPECT_NE(ErrorOf(store, CompressedJson(false, 32)).find(kP + ".weight_zero_point"), std::string::npos);
  }
}

// --- quantization_config parsing -------------------------------------------------------

std::string ParseError(const Json& quantization_config) {
  auto c = ParseHfQuantConfig(Json{{"model_type", "qwen3"}, {"quantization_config", quantization_config}});
  if (c.ok()) return "OK";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

TEST(HfQuantConfigTest, ParsesTheThreeFormats) {
  HfQuantConfig awq = Parse({{"quant_method", "awq"}, {"w_bit", 4}, {"q_group_size", 128}, {"zero_point", true},
                             {"version", "GEMM"}, {"modules_to_not_convert", {"gate"}}});
  EXPECT_EQ(awq.method, HfQuantMethod::kAwq);
  EXPECT_EQ(awq.group_size, 128);
  EXPECT_EQ(awq.Describe(), "awq int4 g128");
  EXPECT_TRUE(awq.IsIgnored("model.layers.0.mlp.gate"));
  EXPECT_FALSE(awq.IsIgnored("model.layers.0.mlp.gate_proj"));
  HfQuantConfig regex = Parse(CompressedJson(true, 128));
  regex.ignore = {"re:.*mlp\\.gate$"};
  EXPECT_TRUE(regex.IsIgnored("model.layers.3.mlp.gate"));
  EXPECT_FALSE(regex.IsIgnored("model.layers.3.mlp.gate_proj"));

  HfQuantConfig gptq = Parse(GptqJson(-1, true, true));
  EXPECT_EQ(gptq.method, HfQuantMethod::kGptq);
  EXPECT_TRUE(gptq.gptq_v2);
  EXPECT_EQ(gptq.Describe(), "gptq int4 channel sym v2");
  EXPECT_FALSE(Parse(GptqJson(128, false, false)).gptq_v2);  // v1 is the default

  HfQuantConfig ct = Parse(CompressedJson(false, 128));
  EXPECT_EQ(ct.method, HfQuantMethod::kCompressedTensors);
  EXPECT_FALSE(ct.symmetric);
  EXPECT_EQ(ct.Describe(), "compressed-tensors int4 g128 asym");
  EXPECT_TRUE(ct.IsIgnored("lm_head"));
  EXPECT_FALSE(ct.IsIgnored("model.layers.0.mlp.down_proj"));
  EXPECT_EQ(Parse(CompressedJson(true, -1)).group_size, -1);

  auto none = ParseHfQuantConfig(Json{{"model_type", "qwen3"}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->quantized());
}

TEST(HfQuantConfigTest, RefusesWhatItCannotLoadByName) {
  EXPECT_NE(ParseError({{"quant_method", "hqq"}}).find("'hqq'"), std::string::npos);
  EXPECT_NE(ParseError({{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}}).find("'bitsandbytes'"),
            std::string::npos);
  Json awq = AwqJson(128);
  awq["version"] = "gemv";
  EXPECT_NE(ParseError(awq).find("'gemv'"), std::string::npos);
  awq = AwqJson(128);
  awq["bits"] = 3;
  EXPECT_NE(ParseError(awq).find("only 4-bit"), std::string::npos);
  Json gptq = GptqJson(128, true, false);
  gptq["bits"] = 8;  // g128: no per-row scale (hf_quant_config_test.cc has the loadable 8-bit forms)
  EXPECT_NE(ParseError(gptq).find("GPTQ 8-bit with group_size 128"), std::string::npos);
  gptq = GptqJson(128, true, false);
  gptq["checkpoint_format"] = "marlin";
  EXPECT_NE(ParseError(gptq).find("'marlin'"), std::string::npos);

  Json w8a8 = CompressedJson(true, -1);
  w8a8["format"] = "int-quantized";
  w8a8["config_groups"]["group_0"]["weights"]["num_bits"] = 8;
  w8a8["config_groups"]["group_0"]["input_activations"] = {{"num_bits", 8}, {"type", "int"}, {"dynamic", true}};
  EXPECT_NE(ParseError(w8a8).find("input_activations.strategy '(missing)'"), std::string::npos) << ParseError(w8a8);
  w8a8["format"] = "naive-quantized";
  EXPECT_NE(ParseError(w8a8).find("'naive-quantized'"), std::string::npos);
  Json fp8 = CompressedJson(true, -1);
  fp8["format"] = "float-quantized";
  EXPECT_NE(ParseError(fp8).find("'float-quantized'"), std::string::npos);
  Json w4a8 = CompressedJson(true, 128);
  w4a8["config_groups"]["group_0"]["input_activations"] = {{"num_bits", 8}, {"type", "int"}};
  EXPECT_NE(ParseError(w4a8).find("input_activations"), std::string::npos);
  Json w8a16 = CompressedJson(true, 128);
  w8a16["config_groups"]["group_0"]["weights"]["num_bits"] = 8;  // grouped int8: no per-row scale
  EXPECT_NE(ParseError(w8a16).find("strategy 'group' (group_size 128) is not supported for 8-bit"), std::string::npos);
  w8a16["config_groups"]["group_0"]["weights"]["num_bits"] = 6;
  EXPECT_NE(ParseError(w8a16).find("num_bits 6"), std::string::npos);
}

TEST(QuantizationFlagTest, MatchesVllm) {
  const HfQuantConfig awq = Parse(AwqJson(128)), gptq = Parse(GptqJson(128, true, false)), none;
  for (const char* ok : {"", "none", "awq", "awq_marlin"}) EXPECT_TRUE(CheckQuantizationFlag(ok, awq, "/m").ok()) << ok;
  EXPECT_TRUE(CheckQuantizationFlag("gptq_marlin", gptq, "/m").ok());
  EXPECT_EQ(CheckQuantizationFlag("gptq", awq, "/m").message(),
            "Quantization method specified in the model config (awq) does not match the quantization method "
            "specified in the `quantization` argument (gptq).");
  const Status int8 = CheckQuantizationFlag("int8", awq, "/m");
  EXPECT_EQ(int8.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(int8.message().find("already quantized"), std::string::npos);
  EXPECT_TRUE(CheckQuantizationFlag("int8", none, "/m").ok());
  const Status on_float = CheckQuantizationFlag("awq", none, "/m");
  EXPECT_NE(on_float.message().find("/m has no quantization_config"), std::string::npos) << on_float.message();
  EXPECT_NE(CheckQuantizationFlag("hqq", none, "/m").message().find("unknown --quantization 'hqq'"), std::string::npos);
  EXPECT_EQ(FloatLinearQuantization("awq_marlin"), "none");
  EXPECT_EQ(FloatLinearQuantization("compressed-tensors"), "none");
  EXPECT_EQ(FloatLinearQuantization("int8"), "int8");
  EXPECT_EQ(FloatLinearQuantization("none"), "none");
}

// --- binding, conversion, sharding, loading --------------------------------------------

// qwen3: H 64, 4 heads of 16 (q 64), 2 KV heads (kv 32), I 128, V 40, untied.
ModelConfig TinyConfig() {
  Json j = {{"model_type", "qwen3"},       {"vocab_size", 40},        {"hidden_size", 64},
            {"intermediate_size", 128},    {"num_hidden_layers", 2},  {"num_attention_heads", 4},
            {"num_key_value_heads", 2},    {"head_dim", 16},          {"tie_word_embeddings", false},
            {"torch_dtype", "float16"}};
  return ParseModelConfig(j).value();
}

bool IsProjection(const WeightSpec& spec) {
  return spec.role == WeightRole::kQProj || spec.role == WeightRole::kKProj || spec.role == WeightRole::kVProj ||
         spec.role == WeightRole::kOProj || spec.role == WeightRole::kGateUp || spec.role == WeightRole::kDown;
}

std::string ModuleOf(const WeightSpec& spec) { return spec.name.substr(0, spec.name.size() - 7); }  // "...weight"

// Float tensors (f16; norms `norm_dtype`) plus every projection as GPTQ v2 asym G=32, with a
// desc_act g_idx on the roles in `act_order`; `refs` gets each projection's reference.
std::unique_ptr<TensorStore> TinyGptqStore(const ModelConfig& config, std::map<std::string, Int4Reference>& refs,
                                           DType norm_dtype = DType::kF16,
                                           const std::set<WeightRole>& act_order = {}) {
  auto store = std::make_unique<TensorStore>();
  uint32_t seed = 100;
  for (const WeightSpec& spec : ListWeightSpecs(config)) {
    if (IsProjection(spec)) {
      Int4Reference r = RandomReference(spec.shape[0], spec.shape[1], 32, false, seed++);
      if (act_order.count(spec.role) != 0) hf_int4_testing::SetActOrder(r, seed);
      PutGptq(*store, ModuleOf(spec), r, /*v2=*/true);
      refs[spec.name] = std::move(r);
      continue;
    }
    const bool norm = spec.shape.size() == 1;
    TensorView& v = store->Allocate(spec.name, norm ? norm_dtype : DType::kF16, spec.shape);
    for (int64_t i = 0; i < v.numel(); ++i) StoreElementFromF32(v.data, v.dtype, i, static_cast<float>(i % 7) * 0.25f);
  }
  return store;
}

TEST(HfQuantBindingTest, BindsQ4_ZProjectionsAndConvertsOnlyFloats) {
  const ModelConfig config = TinyConfig();
  std::map<std::string, Int4Reference> refs;
  // Mixed floats: 9 bf16 norms outnumber the f16 embedding and lm_head.
  auto store = TinyGptqStore(config, refs, /*norm_dtype=*/DType::kBF16);
  auto source = HfQuantTensorSource::Create(*store, Parse(GptqJson(32, false, true)));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->num_repacked(), refs.size());
  auto w = BindWeights(config, **source);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->dtype, DType::kQ4_Z);
  EXPECT_EQ(w->embed_tokens.dtype, DType::kBF16);  // the f16 minority converted
  EXPECT_EQ(w->lm_head.dtype, DType::kBF16);
  EXPECT_EQ(w->layers[1].input_layernorm.dtype, DType::kBF16);
  EXPECT_EQ(w->layers[0].down_proj.dtype, DType::kQ4_Z);
  EXPECT_EQ(w->layers[0].down_proj.data, (*source)->Find("model.layers.0.mlp.down_proj.weight")->data);
  ExpectLossless(**source, "model.layers.1.self_attn.k_proj.weight", refs["model.layers.1.self_attn.k_proj.weight"]);
  EXPECT_NE(WeightFormatSummary(*w).find("attention q4_z x8"), std::string::npos) << WeightFormatSummary(*w);
  EXPECT_NE(WeightFormatSummary(*w).find("mlp q4_z x6"), std::string::npos) << WeightFormatSummary(*w);

  auto f32 = ConvertWeights(*w, DType::kF32);  // --dtype float32
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->dtype, DType::kQ4_Z);
  EXPECT_EQ(f32->embed_tokens.dtype, DType::kF32);
  EXPECT_EQ(f32->lm_head.dtype, DType::kF32);
  EXPECT_FLOAT_EQ(ReadElementAsFloat(f32->embed_tokens, 3), 0.75f);
  EXPECT_EQ(f32->layers[1].o_proj.dtype, DType::kQ4_Z);
  EXPECT_EQ(f32->layers[1].o_proj.data, w->layers[1].o_proj.data);  // untouched, still owned
  // The q4_z buffers outlive the source that made them: ModelWeights::storage holds them.
  source->reset();
  const Int4Reference& o = refs["model.layers.1.self_attn.o_proj.weight"];
  std::vector<float> row(static_cast<size_t>(o.k));
  DequantizeRowKQuant(DType::kQ4_Z, f32->layers[1].o_proj.data, o.k, row.data());
  for (int64_t k = 0; k < o.k; ++k) ASSERT_EQ(row[static_cast<size_t>(k)], o.Expected(0, k));
}

TEST(HfQuantBindingTest, RefusesQ4_ZOutsideProjections) {
  const ModelConfig config = TinyConfig();
  std::map<std::string, Int4Reference> refs;
  auto store = TinyGptqStore(config, refs);
  store->Allocate("lm_head.weight", DType::kQ4_Z, {40, 64});
  auto source = HfQuantTensorSource::Create(*store, Parse(GptqJson(32, false, true))).value();
  auto w = BindWeights(config, *source);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("lm_head.weight"), std::string::npos) << w.status();
  EXPECT_NE(w.status().message().find("only decoder-layer linear projections"), std::string::npos) << w.status();
}

// Tensor parallelism slices q4_z like Q4_0: rows as views, columns on 32-value blocks.
TEST(HfQuantBindingTest, ShardsQ4_ZColumnsOnBlockBoundaries) {
  const ModelConfig config = TinyConfig();
  std::map<std::string, Int4Reference> refs;
  auto store = TinyGptqStore(config, refs);
  auto source = HfQuantTensorSource::Create(*store, Parse(GptqJson(32, false, true))).value();
  const ModelWeights w = BindWeights(config, *source).value();
  auto shard = ShardModel(config, w, ShardSpec{.rank = 1, .size = 2});
  ASSERT_TRUE(shard.ok()) << shard.status();
  const Int4Reference& down = refs["model.layers.0.mlp.down_proj.weight"];  // [64, 128] -> columns [64, 128)
  const TensorView& d = shard->weights.layers[0].down_proj;
  ASSERT_EQ(d.dtype, DType::kQ4_Z);
  ASSERT_EQ(d.shape, (std::vector<int64_t>{64, 64}));
  std::vector<float> row(64);
  for (int64_t n = 0; n < 64; ++n) {
    DequantizeRowKQuant(DType::kQ4_Z, static_cast<const std::byte*>(d.data) + n * DTypeBytes(DType::kQ4_Z, 64), 64,
                        row.data());
    for (int64_t k = 0; k < 64; ++k) ASSERT_EQ(row[static_cast<size_t>(k)], down.Expected(n, 64 + k)) << n << "," << k;
  }
  const Int4Reference& up = refs["model.layers.1.mlp.up_proj.weight"];  // [128, 64] -> rows [64, 128)
  const TensorView& u = shard->weights.layers[1].up_proj;
  ASSERT_EQ(u.shape, (std::vector<int64_t>{64, 64}));
  DequantizeRowKQuant(DType::kQ4_Z, u.data, 64, row.data());
  for (int64_t k = 0; k < 64; ++k) ASSERT_EQ(row[static_cast<size_t>(k)], up.Expected(64, k));
}

// Act-order on the projections tensor parallelism splits by output rows (q, k, v, gate, up):
// the rank's rows are a view that keeps the column order. A projection split by input
// columns (o_proj, down_proj) cannot keep its groups whole on a rank: refused by name.
TEST(HfQuantBindingTest, ShardsActOrderByOutputRowsOnly) {
  const ModelConfig config = TinyConfig();
  const std::set<WeightRole> row_split = {WeightRole::kQProj, WeightRole::kKProj, WeightRole::kVProj,
                                          WeightRole::kGateUp};
  std::map<std::string, Int4Reference> refs;
  auto store = TinyGptqStore(config, refs, DType::kF16, row_split);
  auto source = HfQuantTensorSource::Create(*store, Parse(GptqJson(32, false, true, /*desc_act=*/true))).value();
  const ModelWeights w = BindWeights(config, *source).value();
  auto shard = ShardModel(config, w, ShardSpec{.rank = 1, .size = 2});
  ASSERT_TRUE(shard.ok()) << shard.status();
  const Int4Reference& up = refs["model.layers.1.mlp.up_proj.weight"];  // [128, 64] -> rows [64, 128)
  const TensorView& u = shard->weights.layers[1].up_proj;
  ASSERT_EQ(u.shape, (std::vector<int64_t>{64, 64}));
  ASSERT_EQ(u.column_order.size(), 64u);
  std::vector<float> row(64);
  for (int64_t n = 0; n < 64; ++n) {
    DequantizeRowKQuant(DType::kQ4_Z, static_cast<const std::byte*>(u.data) + n * DTypeBytes(DType::kQ4_Z, 64), 64,
                        row.data());
    for (int64_t j = 0; j < 64; ++j) {
      ASSERT_EQ(row[static_cast<size_t>(j)], up.Expected(64 + n, u.column_order[static_cast<size_t>(j)])) << n;
    }
  }
  EXPECT_TRUE(shard->weights.layers[0].down_proj.column_order.empty());

  std::map<std::string, Int4Reference> refs_o;
  auto store_o = TinyGptqStore(config, refs_o, DType::kF16, {WeightRole::kOProj});
  auto source_o = HfQuantTensorSource::Create(*store_o, Parse(GptqJson(32, false, true, true))).value();
  auto refused = ShardModel(config, BindWeights(config, *source_o).value(), ShardSpec{.rank = 0, .size = 2});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("o_proj"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("GPTQ act-order"), std::string::npos) << refused.status();
}

void WriteTextFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A GPTQ checkpoint on disk through LoadModel: config, flag checks, dtype, repacking.
TEST(HfQuantLoaderTest, LoadsGptqCheckpointFromDisk) {
  const ModelConfig config = TinyConfig();
  std::map<std::string, Int4Reference> refs;
  auto store = TinyGptqStore(config, refs);
  const std::string dir = ::testing::TempDir() + "/hf_quant_gptq_tiny";
  fs::remove_all(dir);
  fs::create_directories(dir);
  SafetensorsWriter writer;
  for (const std::string& name : store->Names()) ASSERT_TRUE(writer.Add(name, *store->Find(name)).ok());
  ASSERT_TRUE(writer.WriteCheckpoint(dir, 1'000'000'000).ok());
  Json json = {{"model_type", "qwen3"},    {"vocab_size", 40},       {"hidden_size", 64},
               {"intermediate_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
               {"num_key_value_heads", 2}, {"head_dim", 16},         {"tie_word_embeddings", false},
               {"torch_dtype", "float16"}, {"quantization_config", GptqJson(32, false, true)}};
  WriteTextFile(dir + "/config.json", json.dump());

  LoadOptions options;
  options.model_path = dir;
  auto model = LoadModel(options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->quantization.method, HfQuantMethod::kGptq);
  EXPECT_EQ(model->weights.dtype, DType::kQ4_Z);
  EXPECT_EQ(model->weights.embed_tokens.dtype, DType::kF16);
  const TensorView& q = model->weights.layers[1].q_proj;
  ASSERT_EQ(q.dtype, DType::kQ4_Z);
  std::vector<float> row(64);
  const Int4Reference& ref = refs["model.layers.1.self_attn.q_proj.weight"];
  for (int64_t n = 0; n < 64; ++n) {
    DequantizeRowKQuant(DType::kQ4_Z, static_cast<const std::byte*>(q.data) + n * DTypeBytes(DType::kQ4_Z, 64), 64,
                        row.data());
    for (int64_t k = 0; k < 64; ++k) ASSERT_EQ(row[static_cast<size_t>(k)], ref.Expected(n, k));
  }

  options.dtype = "float32";
  options.quantization = "gptq_marlin";
  auto f32 = LoadModel(options);
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->weights.dtype, DType::kQ4_Z);
  EXPECT_EQ(f32->weights.norm.dtype, DType::kF32);

  options.quantization = "awq";
  auto mismatch = LoadModel(options);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("model config (gptq) does not match"), std::string::npos);
  options.quantization = "int8";
  EXPECT_FALSE(LoadModel(options).ok());
}

}  // namespace
}  // namespace pagellm
