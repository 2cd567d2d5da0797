// gguf_test_tool: writes GGUF files for the cross-checks against independent readers.
//
//   gguf_test_tool sample OUT.gguf EXPECTED.json     every metadata type + tensors of every type;
//                                                   EXPECTED.json describes what was written
//   gguf_test_tool quant-vectors OUT.gguf            random blocks "raw.<type>" with our dequantized
//                                                   "deq.<type>" (F32), and "q8_src" (F32) with our
//                                                   QuantizeQ8_0 of it as "q8_ours"
//   gguf_test_tool dequant TYPE IN.bin OUT.bin      raw blocks of TYPE (e.g. q4_K) -> our float32
//                                                   values (tests/gguf/check_with_libggml.py)
//   gguf_test_tool quantize TYPE N IN.f32 OUT.bin   rows of N float32 values -> our TYPE bytes
//                                                   (tests/gguf/check_quantizers_with_libggml.py)
//   gguf_test_tool tiny-qwen3 OUT.gguf TOKENIZER_DIR [f32|f16|q8_0]
//                                                   a 2-layer qwen3-shaped random model with the real
//                                                   tokenizer metadata (for llama.cpp loading)
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/json.h"
#include "common/mapped_file.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_quantize.h"
#include "gguf/gguf_quants.h"
#include "gguf/gguf_tokenizer_metadata.h"
#include "gguf/gguf_writer.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

OrderedJson ValueToJson(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> OrderedJson {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, GgufArray>) {
          OrderedJson arr = OrderedJson::array();
          for (const GgufValue& item : x.items) arr.push_back(ValueToJson(item));
          return arr;
        } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) {
          return std::to_string(x);  // exact beyond 2^53
        } else if constexpr (std::is_same_v<T, float>) {
          return static_cast<double>(x);
        } else {
          return x;
        }
      },
      v.storage());
}

std::vector<std::byte> RandomBytes(size_t n, std::mt19937& rng) {
  std::vector<std::byte> out(n);
  for (std::byte& b : out) b = static_cast<std::byte>(rng() & 0xFF);
  return out;
}

// Overwrites the fp16 scale fields of each block with finite values of moderate size, so
// random blocks decode to finite numbers.
void FixScales(GgmlType type, std::vector<std::byte>& bytes, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  size_t block = GgmlTypeSize(type);
  std::vector<size_t> fields;
  if (type == GgmlType::kQ8_0 || type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0 ||
      type == GgmlType::kIQ4_NL || type == GgmlType::kIQ4_XS) {
    fields = {0};
  }
  if (type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1) {
    fields = {0, 2};
  }
  if (type == GgmlType::kQ6_K) fields = {208};
  for (size_t b = 0; b + block <= bytes.size(); b += block) {
    for (size_t f : fields) {
      uint16_t h = F32ToF16(dist(rng));
      std::memcpy(bytes.data() + b + f, &h, 2);
    }
  }
}

int WriteSample(const std::string& out, const std::string& expected_path) {
  GgufWriter w;
  w.AddMetadata("general.architecture", GgufValue::String("qwen3"));
  w.AddMetadata("test.u8", GgufValue::U8(250));
  w.AddMetadata("test.i8", GgufValue::I8(-7));
  w.AddMetadata("test.u16", GgufValue::U16(65000));
  w.AddMetadata("test.i16", GgufValue::I16(-32000));
  w.AddMetadata("test.u32", GgufValue::U32(4000000000u));
  w.AddMetadata("test.i32", GgufValue::I32(-2000000000));
  w.AddMetadata("test.f32", GgufValue::F32(0.1f));
  w.AddMetadata("test.bool", GgufValue::Bool(true));
  w.AddMetadata("test.string", GgufValue::String("h\u00e9llo \"w\"\n\u4e16\u754c"));
  w.AddMetadata("test.u64", GgufValue::U64(18000000000000000000ull));
  w.AddMetadata("test.i64", GgufValue::I64(-9000000000000000000ll));
  w.AddMetadata("test.f64", GgufValue::F64(-1.25e-300));
  w.AddMetadata("test.strings", GgufValue::StringArray({"\xC4\xA0the", "", "<|im_end|>"}));
  w.AddMetadata("test.i32s", GgufValue::I32Array({1, -2, 3}));
  w.AddMetadata("test.f32s", GgufValue::Array(GgufValueType::kFloat32, {GgufValue::F32(1.5f), GgufValue::F32(-0.3f)}));
  w.AddMetadata("test.bools", GgufValue::Array(GgufValueType::kBool, {GgufValue::Bool(false), GgufValue::Bool(true)}));
  std::mt19937 rng(7);
  const std::pair<GgmlType, std::vector<int64_t>> shapes[] = {
      {GgmlType::kF32, {3, 2}},      {GgmlType::kF16, {8}},         {GgmlType::kBF16, {4, 1, 2}},
      {GgmlType::kQ8_0, {64, 3}},    {GgmlType::kQ4_0, {32, 2, 2}}, {GgmlType::kQ4_K, {256, 2}},
      {GgmlType::kQ5_K, {512}},      {GgmlType::kQ6_K, {256, 1, 1, 2}}};
  OrderedJson expected = {{"version", 3}, {"metadata", OrderedJson::object()}, {"tensors", OrderedJson::array()}};
  for (const auto& [type, ne] : shapes) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::string name = fmt::format("t.{}", GgmlTypeName(type));
    if (!w.AddTensor(name, type, ne, RandomBytes(GgmlRowBytes(type, n), rng)).ok()) return 1;
  }
  StatusOr<std::string> bytes = w.WriteToString();
  if (!bytes.ok() || !WriteStringToFile(out, *bytes).ok()) return 1;
  for (const auto& [key, value] : w.metadata()) {
    OrderedJson entry = {{"type", static_cast<int>(value.type())}, {"value", ValueToJson(value)}};
    if (value.is_array()) entry["subType"] = static_cast<int>(value.array().elem_type);
    expected["metadata"][key] = entry;
  }
  uint64_t offset = 0;
  for (const auto& [type, ne] : shapes) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    expected["tensors"].push_back({{"name", fmt::format("t.{}", GgmlTypeName(type))}, {"shape", ne},
                                   {"dtype", static_cast<int>(type)}, {"offset", offset}});
    offset += (GgmlRowBytes(type, n) + 31) / 32 * 32;
  }
  return WriteStringToFile(expected_path, expected.dump(1)).ok() ? 0 : 1;
}

int WriteQuantVectors(const std::string& out) {
  GgufWriter w;
  std::mt19937 rng(42);
  const GgmlType types[] = {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0,  GgmlType::kQ4_1,
                            GgmlType::kQ5_1, GgmlType::kQ4_K, GgmlType::kQ5_K,  GgmlType::kQ6_K,
                            GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kF16, GgmlType::kBF16};
  for (GgmlType type : types) {
    const int64_t n = 4 * 256;
    std::vector<std::byte> raw = RandomBytes(GgmlRowBytes(type, n), rng);
    if (type == GgmlType::kF16 || type == GgmlType::kBF16) {
      for (size_t i = 1; i < raw.size(); i += 2) raw[i] &= std::byte{0x3F};  // keep values finite
    }
    FixScales(type, raw, rng);
    std::vector<float> deq(static_cast<size_t>(n));
    if (!Dequantize(type, raw, n, deq.data()).ok()) return 1;
    std::vector<std::byte> deq_bytes(deq.size() * 4);
    std::memcpy(deq_bytes.data(), deq.data(), deq_bytes.size());
    if (!w.AddTensor(fmt::format("raw.{}", GgmlTypeName(type)), type, {256, 4}, std::move(raw)).ok()) return 1;
    if (!w.AddTensor(fmt::format("deq.{}", GgmlTypeName(type)), GgmlType::kF32, {256, 4}, std::move(deq_bytes)).ok()) return 1;
  }
  // Quantizer input: normal values, exact ties, zeros and an all-zero block.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> src(32 * 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = normal(rng) * (1 + static_cast<float>(i % 7));
  for (size_t i = 0; i < 32; ++i) src[i] = static_cast<float>(static_cast<int>(i) - 16) + 0.5f;  // ties
  for (size_t i = 32; i < 64; ++i) src[i] = 0.0f;
  std::vector<std::byte> q(GgmlRowBytes(GgmlType::kQ8_0, static_cast<int64_t>(src.size())));
  QuantizeQ8_0(src.data(), static_cast<int64_t>(src.size()), q.data());
  std::vector<std::byte> src_bytes(src.size() * 4);
  std::memcpy(src_bytes.data(), src.data(), src_bytes.size());
  if (!w.AddTensor("q8_src", GgmlType::kF32, {256, 8}, std::move(src_bytes)).ok()) return 1;
  if (!w.AddTensor("q8_ours", GgmlType::kQ8_0, {256, 8}, std::move(q)).ok()) return 1;
  return w.WriteFile(out).ok() ? 0 : 1;
}

// IN.bin holds whole blocks of `type_name`; OUT.bin gets their float32 values.
int DequantFile(const std::string& type_name, const std::string& in, const std::string& out) {
  StatusOr<GgmlType> type = GgmlTypeFromName(type_name);
  StatusOr<std::string> raw = ReadFileToString(in);
  if (!type.ok() || !raw.ok()) return 1;
  const int64_t n = static_cast<int64_t>(raw->size() / GgmlTypeSize(*type)) * GgmlBlockSize(*type);
  std::vector<float> deq(static_cast<size_t>(n));
  Status s = Dequantize(*type, {reinterpret_cast<const std::byte*>(raw->data()), raw->size()}, n, deq.data());
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return WriteStringToFile(out, {reinterpret_cast<const char*>(deq.data()), deq.size() * sizeof(float)}).ok() ? 0 : 1;
}

// IN.f32 holds rows of `row_len` float32 values; OUT.bin gets QuantizeRow(type) of each row.
int QuantizeFile(const std::string& type_name, const std::string& row_len_text, const std::string& in,
                 const std::string& out) {
  StatusOr<GgmlType> type = GgmlTypeFromName(type_name);
  StatusOr<std::string> raw = ReadFileToString(in);
  const int64_t row_len = std::stoll(row_len_text);
  if (!type.ok() || !raw.ok() || row_len <= 0 || row_len % GgmlBlockSize(*type) != 0) return 1;
  const int64_t num_values = static_cast<int64_t>(raw->size() / sizeof(float));
  if (num_values % row_len != 0) return 1;
  std::vector<float> x(static_cast<size_t>(num_values));
  std::memcpy(x.data(), raw->data(), x.size() * sizeof(float));
  const size_t row_bytes = GgmlRowBytes(*type, row_len);
  std::string bytes(static_cast<size_t>(num_values / row_len) * row_bytes, '\0');
  for (int64_t r = 0; r < num_values / row_len; ++r) {
    QuantizeRow(*type, x.data() + r * row_len, row_len, reinterpret_cast<std::byte*>(bytes.data()) + r * row_bytes);
  }
  return WriteStringToFile(out, bytes).ok() ? 0 : 1;
}

}  // namespace

int WriteTinyQwen3(const std::string& out, const std::string& tokenizer_dir, const std::string& dtype);

}  // namespace pagellm

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "sample") return pagellm::WriteSample(args[1], args[2]);
  if (args.size() == 2 && args[0] == "quant-vectors") return pagellm::WriteQuantVectors(args[1]);
  if (args.size() == 4 && args[0] == "dequant") return pagellm::DequantFile(args[1], args[2], args[3]);
  if (args.size() == 5 && args[0] == "quantize") return pagellm::QuantizeFile(args[1], args[2], args[3], args[4]);
  if ((args.size() == 3 || args.size() == 4) && args[0] == "tiny-qwen3") {
    return pagellm::WriteTinyQwen3(args[1], args[2], args.size() == 4 ? args[3] : "f16");
  }
  std::fprintf(stderr,
               "usage: gguf_test_tool sample OUT.gguf EXPECTED.json | quant-vectors OUT.gguf |\n"
               "       dequant TYPE IN.bin OUT.bin | quantize TYPE N IN.f32 OUT.bin |\n"
               "       tiny-qwen3 OUT.gguf TOKENIZER_DIR [f32|f16|q8_0]\n");
  return 2;
}
