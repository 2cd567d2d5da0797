// Hugging Face fp8 checkpoints (quant_method fp8, e4m3 with 128x128 weight_scale_inv blocks
// or one weight_scale per tensor) dequantized at load: every weight must be the exact
// product fp8 * scale rounded once, to nearest even, into the run dtype. The reference
// rounding here picks the nearer of the two neighbouring bf16 values by exact double
// arithmetic (ties to the even one), independently of the loader's bit manipulation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "model/convert.h"
#include "model/hf_fp8_linear.h"
#include "model/hf_quant_config.h"
#include "model/hf_quant_source.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "model/weight_spec.h"
#include "tensor/element_access.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

// The bf16 value nearest to `x` (normal range), ties to even: of the bf16 values below and
// above x (truncation toward zero and its successor), the nearer one.
float NearestBf16(double x) {
  const auto toward_zero = static_cast<float>(x);  // may round up: step back if it did
  uint32_t bits;
  std::memcpy(&bits, &toward_zero, sizeof(bits));
  uint32_t lo = bits >> 16;
  if (std::fabs(static_cast<double>(Bf16ToF32(static_cast<uint16_t>(lo)))) > std::fabs(x)) --lo;
  const uint32_t hi = lo + 1;
  const double a = Bf16ToF32(static_cast<uint16_t>(lo)), b = Bf16ToF32(static_cast<uint16_t>(hi));
  const double da = std::fabs(x - a), db = std::fabs(b - x);
  return static_cast<float>(da < db ? a : db < da ? b : ((lo & 1) == 0 ? a : b));
}

// Random e4m3 bytes, NaN (0x7F / 0xFF) excluded, both ends (±448) and subnormals included.
std::vector<uint8_t> RandomFp8(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> codes(static_cast<size_t>(count));
  for (uint8_t& c : codes) {
    do c = static_cast<uint8_t>(rng() % 256); while ((c & 0x7F) == 0x7F);
  }
  codes[0] = 0x7E;
  codes[1] = 0xFE;
  codes[2] = 0x01;
  return codes;
}

Json Fp8Json(int64_t bn, int64_t bk) {
  Json j = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"}};
  if (bn > 0) j["weight_block_size"] = {bn, bk};
  return j;
}

HfQuantConfig Fp8Config(int64_t bn, int64_t bk) {
  return ParseHfQuantConfig(Json{{"quantization_config", Fp8Json(bn, bk)}}).value();
}

TEST(Fp8FormatTest, E4M3Values) {
  EXPECT_EQ(E4M3ToF32(0x00), 0.0f);
  EXPECT_EQ(E4M3ToF32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(E4M3ToF32(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(E4M3ToF32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(E4M3ToF32(0x38), 1.0f);
  EXPECT_EQ(E4M3ToF32(0x3C), 1.5f);
  EXPECT_EQ(E4M3ToF32(0x40), 2.0f);
  EXPECT_EQ(E4M3ToF32(0x7E), 448.0f);  // e4m3fn saturates at 448: no infinity
  EXPECT_EQ(E4M3ToF32(0xFE), -448.0f);
  EXPECT_EQ(E4M3ToF32(0x80), 0.0f);
  EXPECT_TRUE(std::signbit(E4M3ToF32(0x80)));
  EXPECT_TRUE(std::isnan(E4M3ToF32(0x7F)));
  EXPECT_TRUE(std::isnan(E4M3ToF32(0xFF)));
  for (int b = 1; b < 0x7F; ++b) {  // the encoding is monotonic, and sign-symmetric
    EXPECT_LT(E4M3ToF32(static_cast<uint8_t>(b - 1)), E4M3ToF32(static_cast<uint8_t>(b))) << b;
    EXPECT_EQ(E4M3ToF32(static_cast<uint8_t>(b | 0x80)), -E4M3ToF32(static_cast<uint8_t>(b))) << b;
  }
}

TEST(Fp8FormatTest, RoundingIsToNearestEvenOnce) {
  // Exact ties: 1 + 2^-8 lies midway between bf16 1 and 1 + 2^-7 (goes to the even 1);
  // 1 + 3 * 2^-8 midway between 1 + 2^-7 and 1 + 2^-6 (goes to the even 1 + 2^-6).
  EXPECT_EQ(RoundToBinaryFormat(1.0 + std::ldexp(1.0, -8), 7, -126), 1.0);
  EXPECT_EQ(RoundToBinaryFormat(1.0 + 3 * std::ldexp(1.0, -8), 7, -126), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(RoundToBinaryFormat(-(2.0 - std::ldexp(1.0, -9)), 7, -126), -2.0);  // carry into the exponent
  // Rounding a double to bf16 directly differs from rounding it to f32 first: here f32
  // rounds 1 + 2^-8 + 2^-30 down onto the tie 1 + 2^-8, which then goes to 1; the exact
  // value is above the tie and must go up.
  const double above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(Bf16ToF32(F32ToBf16(static_cast<float>(above_tie))), 1.0f);
  EXPECT_EQ(RoundToBinaryFormat(above_tie, 7, -126), 1.0 + std::ldexp(1.0, -7));
  // f16 subnormals: multiples of 2^-24.
  EXPECT_EQ(RoundToBinaryFormat(2.5 * std::ldexp(1.0, -24), 10, -14), 2 * std::ldexp(1.0, -24));
  EXPECT_EQ(RoundToBinaryFormat(std::ldexp(1.0, -30), 10, -14), 0.0);
  // Random products of e4m3 values and f32 scales against the nearest-neighbour reference,
  // and against the hardware's own double -> float rounding for f32.
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> scale(-3e-3f, 3e-3f);
  for (int i = 0; i < 20000; ++i) {
    const double product = static_cast<double>(E4M3ToF32(static_cast<uint8_t>(rng() % 0x7F))) * scale(rng);
    if (product == 0.0) continue;
    ASSERT_EQ(RoundToBinaryFormat(product, 7, -126), NearestBf16(product)) << product;
    ASSERT_EQ(RoundToBinaryFormat(product, 23, -126), static_cast<double>(static_cast<float>(product))) << product;
    const auto f = static_cast<float>(product);
    if (static_cast<double>(f) == product) {  // exact in f32: the scalar f16 rounding is a reference too
      ASSERT_EQ(RoundToBinaryFormat(product, 10, -14), F16ToF32(F32ToF16(f))) << product;
    }
  }
}

// P [n, k] in `store` with scales per (bn x bk) block (per tensor when bn == 0).
struct Fp8Module {
  int64_t n = 0, k = 0, bn = 0, bk = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;  // [ceil(n / bn), ceil(k / bk)], or [1]
  int64_t col_blocks() const { return bn > 0 ? (k + bk - 1) / bk : 1; }
  double Product(int64_t row, int64_t col) const {
    const float s = bn > 0 ? scales[static_cast<size_t>((row / bn) * col_blocks() + col / bk)] : scales[0];
    return static_cast<double>(E4M3ToF32(codes[static_cast<size_t>(row * k + col)])) * s;
  }
};

Fp8Module PutFp8(TensorStore& store, const std::string& p, int64_t n, int64_t k, int64_t bn, int64_t bk,
                 DType scale_dtype, uint32_t seed) {
  Fp8Module m{n, k, bn, bk, RandomFp8(n * k, seed), {}};
  std::memcpy(store.Allocate(p + ".weight", DType::kU8, {n, k}).data, m.codes.data(), m.codes.size());
  const int64_t rb = bn > 0 ? (n + bn - 1) / bn : 1;
  TensorView& s = store.Allocate(p + (bn > 0 ? ".weight_scale_inv" : ".weight_scale"), scale_dtype,
                                 bn > 0 ? std::vector<int64_t>{rb, m.col_blocks()} : std::vector<int64_t>{});
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<float> dist(1e-4f, 4e-3f);
  for (int64_t i = 0; i < rb * m.col_blocks(); ++i) {
    StoreElementFromF32(s.data, scale_dtype, i, dist(rng));
    m.scales.push_back(LoadElementAsF32(s.data, scale_dtype, i));
  }
  return m;
}

const std::string kP = "model.layers.0.mlp.up_proj";

TEST(Fp8DequantTest, BlockScalesWithRaggedTilesGiveTheRoundedProducts) {
  for (DType scale_dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(scale_dtype));
    TensorStore store;
    const Fp8Module m = PutFp8(store, kP, 200, 160, 128, 128, scale_dtype, 3);  // 2 x 2 tiles, last ones ragged
    std::shared_ptr<void> buffer;
    auto bf16 = DequantizeFp8Linear(store, kP, Fp8Config(128, 128), DType::kBF16, buffer);
    ASSERT_TRUE(bf16.ok()) << bf16.status();
    ASSERT_EQ(bf16->dtype, DType::kBF16);
    ASSERT_EQ(bf16->shape, (std::vector<int64_t>{200, 160}));
    std::shared_ptr<void> buffer32;
    auto f32 = DequantizeFp8Linear(store, kP, Fp8Config(128, 128), DType::kF32, buffer32);
    ASSERT_TRUE(f32.ok()) << f32.status();
    for (int64_t row = 0; row < m.n; ++row) {
      for (int64_t col = 0; col < m.k; ++col) {
        const double product = m.Product(row, col);
        const float want = product == 0.0 ? static_cast<float>(product) : NearestBf16(product);
        ASSERT_EQ(ReadElementAsFloat(*bf16, row * m.k + col), want) << row << "," << col;
        ASSERT_EQ(f32->as<const float>()[row * m.k + col], static_cast<float>(product)) << row << "," << col;
      }
    }
  }
}

TEST(Fp8DequantTest, PerTensorScaleAndOtherBlockSizes) {
  for (auto [bn, bk] : {std::pair<int64_t, int64_t>{0, 0}, {64, 32}, {1, 160}}) {
    SCOPED_TRACE(testing::Message() << bn << "x" << bk);
    TensorStore store;
    const Fp8Module m = PutFp8(store, kP, 96, 160, bn, bk, DType::kF32, 5);
    std::shared_ptr<void> buffer;
    auto w = DequantizeFp8Linear(store, kP, Fp8Config(bn, bk), DType::kBF16, buffer);
    ASSERT_TRUE(w.ok()) << w.status();
    for (int64_t i = 0; i < m.n * m.k; ++i) {
      const double product = m.Product(i / m.k, i % m.k);
      ASSERT_EQ(ReadElementAsFloat(*w, i), product == 0.0 ? static_cast<float>(product) : NearestBf16(product)) << i;
    }
  }
}

TEST(Fp8DequantTest, RefusesByName) {
  std::shared_ptr<void> buffer;
  {
    TensorStore store;
    PutFp8(store, kP, 8, 32, 128, 128, DType::kF32, 1);
    const_cast<TensorView*>(store.Find(kP + ".weight"))->as<uint8_t>()[37] = 0xFF;
    auto w = DequantizeFp8Linear(store, kP, Fp8Config(128, 128), DType::kBF16, buffer);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find(kP + ".weight': element 37 is an e4m3 NaN (byte 0xff)"), std::string::npos)
        << w.status();
  }
  {  // 448 * 0.004 fits bf16; 448 * 1000 does not fit f16.
    TensorStore store;
    PutFp8(store, kP, 8, 32, 0, 0, DType::kF32, 1);
    const_cast<TensorView*>(store.Find(kP + ".weight_scale"))->as<float>()[0] = 1000.0f;
    auto w = DequantizeFp8Linear(store, kP, Fp8Config(0, 0), DType::kF16, buffer);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find("beyond f16's range"), std::string::npos) << w.status();
    EXPECT_TRUE(DequantizeFp8Linear(store, kP, Fp8Config(0, 0), DType::kBF16, buffer).ok());
  }
  {  // Scales for 64-row blocks under a 128x128 config.
    TensorStore store;
    PutFp8(store, kP, 200, 32, 64, 128, DType::kF32, 1);
    auto w = DequantizeFp8Linear(store, kP, Fp8Config(128, 128), DType::kBF16, buffer);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find(kP + ".weight_scale_inv' has shape [4, 1]; expected [2, 1]"),
              std::string::npos) << w.status();
  }
  {  // A float weight where fp8 codes belong.
    TensorStore store;
    store.Allocate(kP + ".weight", DType::kBF16, {8, 32});
    store.Allocate(kP + ".weight_scale_inv", DType::kF32, {1, 1});
    auto w = DequantizeFp8Linear(store, kP, Fp8Config(128, 128), DType::kBF16, buffer);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find("is bf16 [8, 32]; expected an F8_E4M3 matrix"), std::string::npos);
  }
}

TEST(Fp8SourceTest, ReplacesWeightHidesScalesAndKeepsFloats) {
  TensorStore store;
  const Fp8Module m = PutFp8(store, kP, 64, 128, 128, 128, DType::kF32, 9);
  store.Allocate(kP + ".input_scale", DType::kF32, {});
  store.Allocate("lm_head.weight", DType::kBF16, {8, 128});
  auto source = HfQuantTensorSource::Create(store, Fp8Config(128, 128), DType::kF32);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->num_repacked(), 1u);
  EXPECT_EQ((*source)->Names(), (std::vector<std::string>{"lm_head.weight", kP + ".weight"}));
  const TensorView* w = (*source)->Find(kP + ".weight");
  ASSERT_EQ(w->dtype, DType::kF32);
  EXPECT_EQ(w->as<const float>()[77], static_cast<float>(m.Product(0, 77)));
  EXPECT_NE((*source)->Origin(kP + ".weight").find("fp8 e4m3 128x128 blocks as f32"), std::string::npos);
}

// --- safetensors and loading -----------------------------------------------------------

struct RawTensor {
  std::string name, dtype;  // dtype as safetensors spells it
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A safetensors file written by hand (SafetensorsWriter has no fp8 dtype to write).
void WriteRawSafetensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  Json header = Json::object();
  uint64_t offset = 0;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = text.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text;
  for (const RawTensor& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  }
}

RawTensor RawOf(const std::string& name, const TensorView& v) {
  const auto* p = static_cast<const uint8_t*>(v.data);
  return {name, v.dtype == DType::kU8 ? "F8_E4M3" : std::string(DTypeToSafetensors(v.dtype)), v.shape,
          std::vector<uint8_t>(p, p + v.nbytes())};
}

TEST(Fp8SafetensorsTest, ReadsE4M3AsBytesAndRefusesE5M2) {
  const std::string dir = ::testing::TempDir() + "/hf_fp8_safetensors";
  fs::create_directories(dir);
  WriteRawSafetensors(dir + "/e4m3.safetensors", {{"w", "F8_E4M3", {2, 3}, {0x38, 0x7E, 0x01, 0xFE, 0x00, 0x40}}});
  auto ckpt = SafetensorsCheckpoint::Open(dir + "/e4m3.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  const TensorView* w = (*ckpt)->Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kU8);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(E4M3ToF32(w->as<const uint8_t>()[1]), 448.0f);
  WriteRawSafetensors(dir + "/e5m2.safetensors", {{"w", "F8_E5M2", {2}, {0x3C, 0x40}}});
  auto e5m2 = SafetensorsCheckpoint::Open(dir + "/e5m2.safetensors");
  ASSERT_FALSE(e5m2.ok());
  EXPECT_NE(e5m2.status().message().find("tensor 'w' has dtype F8_E5M2"), std::string::npos) << e5m2.status();
}

// A tiny Qwen3 with every projection in fp8 128x128 blocks, written and loaded from disk.
TEST(Fp8LoaderTest, LoadsIntoTheRunDtype) {
  Json config = {{"model_type", "qwen3"},    {"vocab_size", 40},       {"hidden_size", 64},
                 {"intermediate_size", 128}, {"num_hidden_layers", 1}, {"num_attention_heads", 4},
                 {"num_key_value_heads", 2}, {"head_dim", 16},         {"tie_word_embeddings", false},
                 {"torch_dtype", "bfloat16"}};
  TensorStore store;
  std::map<std::string, Fp8Module> modules;
  uint32_t seed = 30;
  for (const WeightSpec& spec : ListWeightSpecs(ParseModelConfig(config).value())) {
    if (spec.shape.size() == 2 && spec.name.rfind("model.layers.", 0) == 0) {
      const std::string p = spec.name.substr(0, spec.name.size() - 7);
      modules[p] = PutFp8(store, p, spec.shape[0], spec.shape[1], 128, 128, DType::kBF16, seed++);
      continue;
    }
    TensorView& v = store.Allocate(spec.name, DType::kBF16, spec.shape);
    for (int64_t i = 0; i < v.numel(); ++i) StoreElementFromF32(v.data, v.dtype, i, 0.5f);
  }
  const std::string dir = ::testing::TempDir() + "/hf_fp8_tiny";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<RawTensor> raw;
  for (const std::string& name : store.Names()) raw.push_back(RawOf(name, *store.Find(name)));
  WriteRawSafetensors(dir + "/model.safetensors", raw);
  std::ofstream(dir + "/config.json") << config.dump();  // no quantization_config yet
  LoadOptions options;
  options.model_path = dir;
  auto unlabelled = LoadModel(options);
  ASSERT_FALSE(unlabelled.ok());
  EXPECT_NE(unlabelled.status().message().find("an F8_E4M3 tensor: fp8 weights load with a quantization_config"),
            std::string::npos) << unlabelled.status();

  config["quantization_config"] = Fp8Json(128, 128);
  std::ofstream(dir + "/config.json") << config.dump();
  const std::string p = "model.layers.0.self_attn.o_proj";
  for (const char* dtype : {"auto", "float32"}) {
    SCOPED_TRACE(dtype);
    options.dtype = dtype;
    auto model = LoadModel(options);
    ASSERT_TRUE(model.ok()) << model.status();
    const bool f32 = std::string(dtype) == "float32";
    EXPECT_EQ(model->weights.dtype, f32 ? DType::kF32 : DType::kBF16);
    const TensorView& o = model->weights.layers[0].o_proj;
    ASSERT_EQ(o.dtype, model->weights.dtype);
    const Fp8Module& m = modules[p];
    for (int64_t i = 0; i < m.n * m.k; ++i) {
      const double product = m.Product(i / m.k, i % m.k);
      const float want = f32 || product == 0.0 ? static_cast<float>(product) : NearestBf16(product);
      ASSERT_EQ(ReadElementAsFloat(o, i), want) << i;
    }
  }
  options.quantization = "fp8";
  EXPECT_TRUE(LoadModel(options).ok());
  options.quantization = "compressed-tensors";
  EXPECT_NE(LoadModel(options).status().message().find("model config (fp8) does not match"), std::string::npos);
}

}  // namespace
}  // namespace pagellm
