// Writer -> reader round trips, and the exact byte layout llama.cpp expects.
#include "gguf/gguf_writer.h"

#include <cstring>

#include <gtest/gtest.h>

#include "gguf/gguf_file.h"

namespace pagellm {
namespace {

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::vector<std::byte> Iota(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 7 + 1);
  return v;
}

TEST(GgufWriterTest, EveryValueTypeRoundTrips) {
  GgufWriter w;
  std::vector<std::pair<std::string, GgufValue>> kvs = {
      {"u8", GgufValue::U8(200)},          {"i8", GgufValue::I8(-100)},
      {"u16", GgufValue::U16(60000)},      {"i16", GgufValue::I16(-30000)},
      {"u32", GgufValue::U32(4000000000u)}, {"i32", GgufValue::I32(-2000000000)},
      {"f32", GgufValue::F32(1.5e-6f)},    {"bool", GgufValue::Bool(true)},
      {"str", GgufValue::String("héllo\n")}, {"u64", GgufValue::U64(1ull << 60)},
      {"i64", GgufValue::I64(-(1ll << 60))}, {"f64", GgufValue::F64(1e300)},
      {"strs", GgufValue::StringArray({"a", "", "Ġthe"})},
      {"ints", GgufValue::I32Array({1, -2, 3})},
      {"empty", GgufValue::Array(GgufValueType::kFloat32, {})},
      {"nested", GgufValue::Array(GgufValueType::kArray,
                                  {GgufValue::I32Array({1, 2}), GgufValue::I32Array({})})},
  };
  for (const auto& [k, v] : kvs) w.AddMetadata(k, v);
  StatusOr<std::string> bytes = w.WriteToString();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Parse(AsBytes(*bytes), "mem");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->version(), 3u);
  ASSERT_EQ((*f)->metadata().size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ((*f)->metadata()[i].first, kvs[i].first);
    EXPECT_TRUE((*f)->metadata()[i].second == kvs[i].second) << kvs[i].first;
    EXPECT_EQ((*f)->metadata()[i].second.type(), kvs[i].second.type()) << kvs[i].first;
  }
  EXPECT_EQ(*(*f)->GetInt("u32"), 4000000000ll);
  EXPECT_EQ(*(*f)->GetString("str"), "héllo\n");
  EXPECT_EQ(*(*f)->GetStringArray("strs"), (std::vector<std::string>{"a", "", "Ġthe"}));
  EXPECT_EQ(*(*f)->GetIntArray("ints"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_DOUBLE_EQ(*(*f)->GetDouble("f32"), static_cast<double>(1.5e-6f));
  EXPECT_EQ((*f)->GetString("u32").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetInt("missing").status().code(), StatusCode::kNotFound);
}

TEST(GgufWriterTest, TensorsAreLaidOutLikeLlamaCpp) {
  GgufWriter w;
  w.AddMetadata("general.architecture", GgufValue::String("qwen3"));
  ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, {3}, Iota(12)).ok());            // 12 B -> pad to 32
  ASSERT_TRUE(w.AddTensor("b", GgmlType::kQ8_0, {64, 2}, Iota(4 * 34)).ok());    // 136 B -> 160
  ASSERT_TRUE(w.AddTensor("c", GgmlType::kF16, {5, 1, 1}, [](std::span<std::byte> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte{0xAB};
    return OkStatus();
  }).ok());
  StatusOr<std::string> bytes = w.WriteToString();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Parse(AsBytes(*bytes), "mem");
  ASSERT_TRUE(f.ok()) << f.status();
  const auto& t = (*f)->tensors();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ((*f)->data_offset() % 32, 0u);
  EXPECT_EQ(t[0].offset, 0u);
  EXPECT_EQ(t[1].offset, 32u);
  EXPECT_EQ(t[2].offset, 32u + 160u);
  EXPECT_EQ(bytes->size(), (*f)->data_offset() + 192 + 32);  // last tensor padded too
  EXPECT_EQ(t[1].ne, (std::vector<int64_t>{64, 2}));
  EXPECT_EQ(t[1].TorchShape(), (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(t[1].num_elements, 128);
  EXPECT_EQ(t[1].type, GgmlType::kQ8_0);
  std::vector<std::byte> expected = Iota(136);
  ASSERT_EQ(t[1].num_bytes(), 136u);
  EXPECT_EQ(std::memcmp(t[1].data.data(), expected.data(), 136), 0);
  EXPECT_EQ(t[2].data[9], std::byte{0xAB});
  EXPECT_EQ((*f)->FindTensor("c"), &t[2]);
  EXPECT_EQ((*f)->FindTensor("zzz"), nullptr);
}

TEST(GgufWriterTest, CustomAlignmentIsHonoured) {
  GgufWriter w;
  w.AddMetadata("general.alignment", GgufValue::U32(64));
  ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, {1}, Iota(4)).ok());
  ASSERT_TRUE(w.AddTensor("b", GgmlType::kF32, {1}, Iota(4)).ok());
  StatusOr<std::string> bytes = w.WriteToString();
  ASSERT_TRUE(bytes.ok());
  StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Parse(AsBytes(*bytes), "mem");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset() % 64, 0u);
  EXPECT_EQ((*f)->tensors()[1].offset, 64u);
}

TEST(GgufWriterTest, RejectsBadTensors) {
  GgufWriter w;
  EXPECT_FALSE(w.AddTensor("x", GgmlType::kQ8_0, {16}, Iota(17)).ok());   // ne0 not a block multiple
  EXPECT_FALSE(w.AddTensor("x", GgmlType::kF32, {4}, Iota(15)).ok());     // wrong byte count
  EXPECT_FALSE(w.AddTensor("x", GgmlType::kF32, {1, 1, 1, 1, 1}, Iota(4)).ok());
  ASSERT_TRUE(w.AddTensor("x", GgmlType::kF32, {1}, Iota(4)).ok());
  EXPECT_FALSE(w.AddTensor("x", GgmlType::kF32, {1}, Iota(4)).ok());      // duplicate
}

TEST(GgufWriterTest, ProducerErrorsNameTheTensor) {
  GgufWriter w;
  ASSERT_TRUE(w.AddTensor("boom", GgmlType::kF32, {1}, [](std::span<std::byte>) {
    return DataLossError("source unreadable");
  }).ok());
  StatusOr<std::string> bytes = w.WriteToString();
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("boom"), std::string::npos);
}

TEST(GgufWriterTest, WritesAndMapsARealFile) {
  GgufWriter w;
  w.AddMetadata("k", GgufValue::String("v"));
  ASSERT_TRUE(w.AddTensor("t", GgmlType::kBF16, {4}, Iota(8)).ok());
  std::string path = std::string(PAGELLM_BINARY_DIR) + "/gguf_writer_test.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*(*f)->GetString("k"), "v");
  EXPECT_EQ((*f)->tensors()[0].data[7], Iota(8)[7]);
  EXPECT_EQ(GgufFile::Open(path + ".missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pagellm
