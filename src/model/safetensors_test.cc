#include "model/safetensors.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "model/safetensors_writer.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

std::string TestDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/safetensors_test_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A safetensors file built by hand (independently of SafetensorsWriter).
std::string RawFile(const std::string& header, const std::string& data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

std::string ReadAll(const std::string& path) { return ReadFileToString(path).value(); }

std::string OpenError(const std::string& path) {
  auto ckpt = SafetensorsCheckpoint::Open(path);
  EXPECT_FALSE(ckpt.ok()) << path;
  return ckpt.ok() ? "" : ckpt.status().message();
}

TEST(SafetensorsWriterTest, ProducesTheHuggingFaceByteLayout) {
  std::string dir = TestDir("layout");
  SafetensorsWriter writer;
  float a[2] = {1.0f, 2.0f};
  uint16_t b[3] = {F32ToBf16(1.0f), F32ToBf16(-2.0f), F32ToBf16(0.5f)};
  ASSERT_TRUE(writer.Add("b", TensorView{b, DType::kBF16, {1, 3}}).ok());  // sorted by name on disk
  ASSERT_TRUE(writer.Add("a", TensorView{a, DType::kF32, {2}}).ok());
  ASSERT_TRUE(writer.WriteFile(dir + "/x.safetensors").ok());
  // 142-byte compact header padded with 2 spaces to 144 (0x90); data 8-byte aligned.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[1,3],"data_offsets":[8,14]}}  )";
  std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x80\x3f\x00\xc0\x00\x3f", 14);
  EXPECT_EQ(ReadAll(dir + "/x.safetensors"), std::string("\x90\0\0\0\0\0\0\0", 8) + header + data);
  EXPECT_FALSE(writer.Add("a", TensorView{a, DType::kF32, {2}}).ok());  // duplicate name
}

TEST(SafetensorsTest, ReadsHandBuiltFile) {
  std::string dir = TestDir("handbuilt");
  // Unpadded header: tensor "w" lands at an odd address and must still read correctly.
  std::string header = R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"k":"v"}})";
  std::string data("\x00\x3c\x00\xc0", 4);  // f16 1.0, -2.0
  ASSERT_TRUE(WriteStringToFile(dir + "/m.safetensors", RawFile(header, data)).ok());
  auto ckpt = SafetensorsCheckpoint::Open(dir + "/m.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  const TensorView* w = (*ckpt)->Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kF16);
  EXPECT_EQ(w->shape, std::vector<int64_t>{2});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data) % 2, 0u);
  EXPECT_EQ(F16ToF32(w->as<uint16_t>()[0]), 1.0f);
  EXPECT_EQ(F16ToF32(w->as<uint16_t>()[1]), -2.0f);
  EXPECT_EQ((*ckpt)->Find("absent"), nullptr);
  EXPECT_EQ((*ckpt)->Names(), std::vector<std::string>{"w"});
}

// Tensors of every supported dtype, including a scalar and an empty tensor.
SafetensorsWriter MakeWriter(std::vector<std::vector<float>>& storage_f32, std::vector<std::vector<uint16_t>>& storage16) {
  SafetensorsWriter writer;
  storage_f32 = {{1.5f, -2.25f, 3.0f, 4.0f, 5.0f, 6.0f}, {42.0f}, {}};
  storage16 = {std::vector<uint16_t>(1000), std::vector<uint16_t>(999)};
  for (size_t i = 0; i < 1000; ++i) storage16[0][i] = F32ToBf16(static_cast<float>(i) * 0.25f);
  for (size_t i = 0; i < 999; ++i) storage16[1][i] = F32ToF16(static_cast<float>(i) - 500.0f);
  EXPECT_TRUE(writer.Add("model.f32", TensorView{storage_f32[0].data(), DType::kF32, {2, 3}}).ok());
  EXPECT_TRUE(writer.Add("model.scalar", TensorView{storage_f32[1].data(), DType::kF32, {}}).ok());
  EXPECT_TRUE(writer.Add("model.empty", TensorView{storage_f32[2].data(), DType::kF32, {0, 4}}).ok());
  EXPECT_TRUE(writer.Add("model.bf16", TensorView{storage16[0].data(), DType::kBF16, {10, 100}}).ok());
  EXPECT_TRUE(writer.Add("model.f16", TensorView{storage16[1].data(), DType::kF16, {999}}).ok());
  return writer;
}

void ExpectSameTensors(const TensorSource& source, const std::vector<std::vector<float>>& f32,
                       const std::vector<std::vector<uint16_t>>& h16) {
  ASSERT_EQ(source.Names().size(), 5u);
  const TensorView* t = source.Find("model.f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(t->as<float>(), t->as<float>() + 6), f32[0]);
  t = source.Find("model.scalar");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->shape.empty());
  EXPECT_EQ(t->as<float>()[0], 42.0f);
  t = source.Find("model.empty");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->numel(), 0);
  t = source.Find("model.bf16");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::kBF16);
  EXPECT_EQ(std::vector<uint16_t>(t->as<uint16_t>(), t->as<uint16_t>() + 1000), h16[0]);
  t = source.Find("model.f16");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::kF16);
  EXPECT_EQ(std::vector<uint16_t>(t->as<uint16_t>(), t->as<uint16_t>() + 999), h16[1]);
}

TEST(SafetensorsTest, SingleFileRoundTrip) {
  std::string dir = TestDir("single");
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<uint16_t>> h16;
  SafetensorsWriter writer = MakeWriter(f32, h16);
  auto files = writer.WriteCheckpoint(dir, 1'000'000);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, std::vector<std::string>{"model.safetensors"});
  auto ckpt = SafetensorsCheckpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ((*ckpt)->files().size(), 1u);
  EXPECT_EQ((*ckpt)->total_bytes(), writer.total_bytes());
  ExpectSameTensors(**ckpt, f32, h16);
}

TEST(SafetensorsTest, ShardedRoundTrip) {
  std::string dir = TestDir("sharded");
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<uint16_t>> h16;
  SafetensorsWriter writer = MakeWriter(f32, h16);
  auto files = writer.WriteCheckpoint(dir, 1500);  // bf16 2000 B and f16 1998 B force 3 shards
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 4u);
  EXPECT_EQ((*files)[0], "model-00001-of-00003.safetensors");
  EXPECT_EQ((*files)[3], "model.safetensors.index.json");
  auto index = ReadJsonFile(dir + "/model.safetensors.index.json");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ((*index)["metadata"]["total_size"], writer.total_bytes());
  EXPECT_EQ((*index)["weight_map"]["model.f32"], "model-00001-of-00003.safetensors");
  EXPECT_EQ((*index)["weight_map"]["model.bf16"], "model-00002-of-00003.safetensors");
  EXPECT_EQ((*index)["weight_map"]["model.f16"], "model-00003-of-00003.safetensors");
  std::vector<std::pair<size_t, size_t>> progress;
  auto ckpt = SafetensorsCheckpoint::Open(dir, [&](size_t done, size_t total) { progress.emplace_back(done, total); });
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ((*ckpt)->files().size(), 3u);
  EXPECT_EQ(progress.back(), std::make_pair(size_t{3}, size_t{3}));
  EXPECT_NE((*ckpt)->Origin("model.f16").find("model-00003-of-00003.safetensors"), std::string::npos);
  ExpectSameTensors(**ckpt, f32, h16);
}

TEST(SafetensorsTest, CorruptFilesFailWithTheFileName) {
  std::string dir = TestDir("corrupt");
  const std::string good_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\x01');
  struct Case {
    const char* name;
    std::string bytes;
    const char* expected;
  };
  std::string huge_len = RawFile(good_header, data);
  huge_len[5] = '\x01';  // header length ~2^40
  std::vector<Case> cases = {
      {"tiny", "abc", "too short"},
      {"truncated", RawFile(good_header, data).substr(0, 8 + good_header.size() + 4), "outside the data section"},
      {"header_beyond_file", RawFile(good_header, data).substr(0, 20), "exceeds the file size"},
      {"huge_header_len", huge_len, "exceeds the file size"},
      {"bad_json", RawFile(R"({"a":{"dtype":)", data), "invalid JSON"},
      {"not_object", RawFile("[1,2]", data), "not a JSON object"},
      {"offsets_out_of_range", RawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", data),
       "outside the data section"},
      {"offsets_reversed", RawFile(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", data),
       "outside the data section"},
      {"size_mismatch", RawFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
       "needs 12"},
      {"overlap", RawFile(R"({"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                          R"("b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}})", data), "overlap"},
      {"bad_shape", RawFile(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data), "bad shape"},
      {"no_offsets", RawFile(R"({"a":{"dtype":"F32","shape":[2]}})", data), "data_offsets"},
      {"f64", RawFile(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", data), "dtype F64"},
  };
  for (const Case& c : cases) {
    std::string path = dir + "/" + c.name + ".safetensors";
    ASSERT_TRUE(WriteStringToFile(path, c.bytes).ok());
    std::string error = OpenError(path);
    EXPECT_NE(error.find(path), std::string::npos) << c.name << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.name << ": " << error;
  }
  ASSERT_TRUE(WriteStringToFile(dir + "/ok.safetensors", RawFile(good_header, data)).ok());
  EXPECT_TRUE(SafetensorsCheckpoint::Open(dir + "/ok.safetensors").ok());
}

TEST(SafetensorsTest, BadIndexFails) {
  std::string dir = TestDir("badindex");
  ASSERT_TRUE(WriteStringToFile(dir + "/s1.safetensors",
                                RawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                        std::string(8, '\0')))
                  .ok());
  auto write_index = [&](const std::string& map) {
    ASSERT_TRUE(WriteStringToFile(dir + "/model.safetensors.index.json", R"({"weight_map":)" + map + "}").ok());
  };
  write_index(R"({"a":"s1.safetensors","b":"s1.safetensors"})");
  EXPECT_NE(OpenError(dir).find("'b'"), std::string::npos);
  write_index(R"({"a":"s2.safetensors"})");
  EXPECT_NE(OpenError(dir).find("s2.safetensors"), std::string::npos);
  write_index(R"({"a":"../../etc/passwd"})");
  EXPECT_NE(OpenError(dir).find("outside the model directory"), std::string::npos);
  write_index(R"({"a":"s1.safetensors"})");
  EXPECT_TRUE(SafetensorsCheckpoint::Open(dir).ok());
  EXPECT_NE(OpenError(TestDir("empty")).find("neither model.safetensors"), std::string::npos);
}

TEST(SafetensorsWriterTest, ParseByteSize) {
  EXPECT_EQ(ParseByteSize("2GB").value(), 2'000'000'000u);
  EXPECT_EQ(ParseByteSize("500MB").value(), 500'000'000u);
  EXPECT_EQ(ParseByteSize("1GiB").value(), 1073741824u);
  EXPECT_EQ(ParseByteSize("4096").value(), 4096u);
  EXPECT_EQ(ParseByteSize("1.5kb").value(), 1500u);
  EXPECT_FALSE(ParseByteSize("GB").ok());
  EXPECT_FALSE(ParseByteSize("2 parsecs").ok());
}

}  // namespace
}  // namespace pagellm
