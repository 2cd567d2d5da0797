// quantization_config of the int8 and fp8 formats (compressed-tensors W8A8 / W8A16, GPTQ
// 8-bit, fp8, msModelSlim descriptions): what parses, what each becomes, every refusal's
// message, and vLLM's --quantization matching for each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/hf_ascend_config.h"
#include "model/hf_quant_config.h"
#include "model/quantization_flag.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

StatusOr<HfQuantConfig> ParseQ(const Json& quantization_config) {
  return ParseHfQuantConfig(Json{{"model_type", "qwen3"}, {"quantization_config", quantization_config}});
}

HfQuantConfig Parse(const Json& quantization_config) {
  auto c = ParseQ(quantization_config);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : HfQuantConfig{};
}

std::string ParseError(const Json& quantization_config) {
  auto c = ParseQ(quantization_config);
  if (c.ok()) return "OK";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

// llm-compressor's W8A8 preset (vLLM's W8A8 int8 dynamic scheme), as config.json holds it.
Json W8A8Json() {
  return Json::parse(R"({
    "quant_method": "compressed-tensors", "format": "int-quantized", "quantization_status": "compressed",
    "global_compression_ratio": null, "ignore": ["lm_head"], "kv_cache_scheme": null, "sparsity_config": {},
    "config_groups": {"group_0": {"targets": ["Linear"], "format": "int-quantized", "output_activations": null,
      "weights": {"num_bits": 8, "type": "int", "symmetric": true, "strategy": "channel", "dynamic": false,
                  "group_size": null, "block_structure": null, "actorder": null, "observer": "minmax"},
      "input_activations": {"num_bits": 8, "type": "int", "symmetric": true, "strategy": "token",
                            "dynamic": true, "group_size": null, "observer": null}}}})");
}

Json& Weights(Json& j) { return j["config_groups"]["group_0"]["weights"]; }
Json& Activations(Json& j) { return j["config_groups"]["group_0"]["input_activations"]; }

// Qwen3-*-FP8's config.json entry.
Json Fp8Json() {
  return {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
          {"weight_block_size", {128, 128}}};
}

Json Gptq8Json() {
  return {{"quant_method", "gptq"}, {"bits", 8}, {"group_size", -1}, {"sym", true}, {"desc_act", false},
          {"checkpoint_format", "gptq"}};
}

TEST(HfQuantConfigInt8Test, ParsesCompressedTensorsW8A8AndW8A16) {
  HfQuantConfig w8a8 = Parse(W8A8Json());
  EXPECT_EQ(w8a8.method, HfQuantMethod::kCompressedTensors);
  EXPECT_EQ(w8a8.bits, 8);
  EXPECT_TRUE(w8a8.int8_weight_tensor);
  EXPECT_EQ(w8a8.Describe(), "compressed-tensors int8 channel sym W8A8");
  EXPECT_TRUE(w8a8.run_note.empty()) << w8a8.run_note;  // exactly the backends' W8A8
  EXPECT_TRUE(w8a8.IsIgnored("lm_head"));

  Json tensor = W8A8Json();
  Weights(tensor)["strategy"] = "tensor";  // one scale: every row's
  EXPECT_EQ(Parse(tensor).Describe(), "compressed-tensors int8 tensor sym W8A8");

  Json w8a16 = W8A8Json();
  w8a16["format"] = "pack-quantized";
  w8a16["config_groups"]["group_0"]["format"] = "pack-quantized";
  Activations(w8a16) = nullptr;
  const HfQuantConfig weight_only = Parse(w8a16);
  EXPECT_FALSE(weight_only.int8_weight_tensor);
  EXPECT_EQ(weight_only.Describe(), "compressed-tensors int8 channel sym W8A16");
  EXPECT_NE(weight_only.run_note.find("runs it as W8A8"), std::string::npos) << weight_only.run_note;

  Json asym_act = W8A8Json();
  Activations(asym_act)["symmetric"] = false;
  EXPECT_NE(Parse(asym_act).run_note.find("asymmetric activations"), std::string::npos);
}

TEST(HfQuantConfigInt8Test, RefusesCompressedTensorsInt8ItCannotRepresent) {
  Json j = W8A8Json();
  Activations(j)["dynamic"] = false;
  EXPECT_NE(ParseError(j).find("input_activations.dynamic false (static activation scales, input_scale tensors) "
                               "is not supported"), std::string::npos) << ParseError(j);
  j = W8A8Json();
  Weights(j)["symmetric"] = false;
  EXPECT_NE(ParseError(j).find("weights.symmetric false (asymmetric int8 weights with a weight_zero_point)"),
            std::string::npos) << ParseError(j);
  j = W8A8Json();
  Weights(j)["strategy"] = "group";
  Weights(j)["group_size"] = 128;
  EXPECT_NE(ParseError(j).find("weights.strategy 'group' (group_size 128) is not supported for 8-bit weights"),
            std::string::npos) << ParseError(j);
  j = W8A8Json();
  Activations(j)["strategy"] = "tensor";
  EXPECT_NE(ParseError(j).find("input_activations.strategy 'tensor' is not supported"), std::string::npos);
  j = W8A8Json();
  Activations(j)["type"] = "float";
  EXPECT_NE(ParseError(j).find("only 8-bit int activations load"), std::string::npos) << ParseError(j);
  j = W8A8Json();
  j["format"] = "float-quantized";
  j["config_groups"]["group_0"].erase("format");
  EXPECT_NE(ParseError(j).find("'float-quantized' (fp8 weights and activations) is not supported"),
            std::string::npos) << ParseError(j);
  j = W8A8Json();
  Weights(j)["num_bits"] = 4;  // int4 weights with int8 activations (W4A8)
  j["format"] = j["config_groups"]["group_0"]["format"] = "pack-quantized";
  EXPECT_NE(ParseError(j).find("activation quantization is not supported with int4 weights"), std::string::npos);
}

TEST(HfQuantConfigInt8Test, ParsesGptqInt8AndRefusesGroupsAndAsymmetry) {
  const HfQuantConfig gptq = Parse(Gptq8Json());
  EXPECT_EQ(gptq.bits, 8);
  EXPECT_EQ(gptq.Describe(), "gptq int8 channel sym W8A16");
  EXPECT_NE(gptq.run_note.find("runs it as W8A8"), std::string::npos);
  Json j = Gptq8Json();
  j["group_size"] = 128;  // Qwen's official GPTQ-Int8 checkpoints
  EXPECT_NE(ParseError(j).find("GPTQ 8-bit with group_size 128 is not supported; q8_s keeps one scale per output "
                               "row"), std::string::npos) << ParseError(j);
  j = Gptq8Json();
  j["sym"] = false;
  EXPECT_NE(ParseError(j).find("GPTQ 8-bit with sym false"), std::string::npos) << ParseError(j);
  j = Gptq8Json();
  j["bits"] = 3;
  EXPECT_NE(ParseError(j).find("GPTQ bits 3 is not supported"), std::string::npos);
}

TEST(HfQuantConfigFp8Test, ParsesQwenFp8AndRefusesWhatDoesNotWork) {
  const HfQuantConfig fp8 = Parse(Fp8Json());
  EXPECT_EQ(fp8.method, HfQuantMethod::kFp8);
  EXPECT_EQ(fp8.block_n, 128);
  EXPECT_EQ(fp8.block_k, 128);
  EXPECT_EQ(fp8.Describe(), "fp8 e4m3 128x128 blocks");
  Json j = Fp8Json();
  j["weight_block_size"] = {64, 32};  // any block works
  EXPECT_EQ(Parse(j).Describe(), "fp8 e4m3 64x32 blocks");
  j = Fp8Json();
  j.erase("weight_block_size");
  j["activation_scheme"] = "static";  // per-tensor weight and input scales: works, input_scale unused
  j["ignored_layers"] = {"lm_head"};
  const HfQuantConfig per_tensor = Parse(j);
  EXPECT_EQ(per_tensor.Describe(), "fp8 e4m3 per-tensor");
  EXPECT_NE(per_tensor.run_note.find("input_scale tensors are not used"), std::string::npos);
  EXPECT_TRUE(per_tensor.IsIgnored("lm_head"));

  j = Fp8Json();
  j["fmt"] = "e5m2";
  EXPECT_NE(ParseError(j).find("fmt 'e5m2' is not supported; only e4m3"), std::string::npos) << ParseError(j);
  j = Fp8Json();
  j["activation_scheme"] = "per_token";
  EXPECT_NE(ParseError(j).find("activation_scheme 'per_token' is not supported"), std::string::npos);
  j = Fp8Json();
  j["weight_block_size"] = {128, 0};
  EXPECT_NE(ParseError(j).find("weight_block_size must be two positive integers"), std::string::npos);
}

TEST(HfQuantConfigAscendTest, ParsesDescriptionsAndRefusesStaticW8A8ByName) {
  Json d = {{"model_quant_type", "W8A8_DYNAMIC"}, {"version", "1.0.0"}, {"kv_cache_type", ""},
            {"model.layers.0.mlp.down_proj.weight", "W8A8_DYNAMIC"},
            {"model.layers.0.mlp.down_proj.weight_scale", "W8A8_DYNAMIC"},
            {"model.layers.0.mlp.gate.weight", "FLOAT"}, {"lm_head.weight", "FLOAT"}};
  ASSERT_TRUE(LooksLikeAscendDescription(d));
  const HfQuantConfig pasted = Parse(d);  // vLLM-Ascend's old docs: paste it into quantization_config
  EXPECT_EQ(pasted.method, HfQuantMethod::kAscend);
  EXPECT_EQ(pasted.Describe(), "ascend int8 channel sym W8A8_DYNAMIC");
  EXPECT_TRUE(pasted.IsIgnored("model.layers.0.mlp.gate"));
  EXPECT_FALSE(pasted.IsIgnored("model.layers.0.mlp.down_proj"));
  EXPECT_TRUE(pasted.run_note.empty());

  Json w8a16 = d;
  w8a16["model.layers.0.mlp.down_proj.weight"] = "W8A16";
  w8a16["model.layers.0.mlp.down_proj.weight_scale"] = "W8A16";
  w8a16["model_quant_type"] = "W8A16";
  EXPECT_NE(Parse(w8a16).run_note.find("runs it as W8A8"), std::string::npos);

  Json w8a8 = d;
  w8a8["model.layers.0.mlp.down_proj.input_scale"] = "W8A8";
  EXPECT_NE(ParseError(w8a8).find("msModelSlim quant type 'W8A8' (model.layers.0.mlp.down_proj.input_scale) is not "
                                  "supported: static W8A8 quantizes activations with calibrated per-tensor constants"),
            std::string::npos) << ParseError(w8a8);
  Json w4a8 = d;
  w4a8["model_quant_type"] = "W4A8_DYNAMIC";
  EXPECT_NE(ParseError(w4a8).find("'W4A8_DYNAMIC' (model_quant_type)"), std::string::npos) << ParseError(w4a8);
  Json c8 = d;
  c8["kv_cache_type"] = "C8";
  EXPECT_NE(ParseError(c8).find("'C8' (kv_cache_type) is not supported: a quantized KV cache"), std::string::npos);
  EXPECT_NE(ParseError({{"bits", 4}}).find("has no 'quant_method'"), std::string::npos);
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(HfQuantConfigAscendTest, LoadFindsTheDescriptionBesideConfigJson) {
  const std::string dir = ::testing::TempDir() + "/hf_quant_config_ascend";
  fs::remove_all(dir);
  fs::create_directories(dir);
  WriteText(dir + "/config.json", R"({"model_type": "qwen3", "quantize": "w8a8_dynamic"})");
  auto missing = LoadHfQuantConfig(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("quantize 'w8a8_dynamic' marks an msModelSlim (ascend) checkpoint, but"),
            std::string::npos) << missing.status();
  WriteText(dir + "/quant_model_description.json", R"({"model_quant_type": "W8A8", "x.weight": "W8A8"})");
  auto refused = LoadHfQuantConfig(dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(dir + "/quant_model_description.json: "), std::string::npos)
      << refused.status();
  WriteText(dir + "/quant_model_description.json",
            R"({"model_quant_type": "W8A8_DYNAMIC", "x.weight": "W8A8_DYNAMIC"})");
  auto ok = LoadHfQuantConfig(dir);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->method, HfQuantMethod::kAscend);
  WriteText(dir + "/config.json", Json{{"model_type", "qwen3"}, {"quantization_config", Fp8Json()}}.dump());
  auto both = LoadHfQuantConfig(dir);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("which one describes the weights is ambiguous"), std::string::npos);
}

TEST(QuantizationFlagTest, MatchesVllmForInt8AndFp8Formats) {
  const HfQuantConfig ct = Parse(W8A8Json()), gptq = Parse(Gptq8Json()), fp8 = Parse(Fp8Json()), none;
  HfQuantConfig ascend;
  ascend.method = HfQuantMethod::kAscend;
  EXPECT_TRUE(CheckQuantizationFlag("compressed-tensors", ct, "/m").ok());
  EXPECT_TRUE(CheckQuantizationFlag("gptq", gptq, "/m").ok());
  EXPECT_TRUE(CheckQuantizationFlag("gptq_marlin", gptq, "/m").ok());
  EXPECT_TRUE(CheckQuantizationFlag("fp8", fp8, "/m").ok());
  EXPECT_TRUE(CheckQuantizationFlag("ascend", ascend, "/m").ok());
  for (const HfQuantConfig* c : {&ct, &gptq, &fp8, static_cast<const HfQuantConfig*>(&ascend)}) {
    EXPECT_TRUE(CheckQuantizationFlag("none", *c, "/m").ok());
  }
  EXPECT_EQ(CheckQuantizationFlag("fp8", ct, "/m").message(),
            "Quantization method specified in the model config (compressed-tensors) does not match the quantization "
            "method specified in the `quantization` argument (fp8).");
  EXPECT_NE(CheckQuantizationFlag("ascend", fp8, "/m").message().find("model config (fp8) does not match"),
            std::string::npos);
  EXPECT_NE(CheckQuantizationFlag("compressed-tensors", ascend, "/m").message().find("(ascend) does not match"),
            std::string::npos);
  EXPECT_NE(CheckQuantizationFlag("int8", fp8, "/m").message().find("already quantized (fp8 e4m3 128x128 blocks)"),
            std::string::npos);
  EXPECT_NE(CheckQuantizationFlag("fp8", none, "/m").message().find("/m has no quantization_config"),
            std::string::npos);
  EXPECT_NE(CheckQuantizationFlag("bitsandbytes", none, "/m").message().find("unknown --quantization"),
            std::string::npos);
  EXPECT_EQ(FloatLinearQuantization("fp8"), "none");
  EXPECT_EQ(FloatLinearQuantization("ascend"), "none");
}

}  // namespace
}  // namespace pagellm
