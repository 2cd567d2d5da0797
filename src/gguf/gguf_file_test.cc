// GgufFile: every malformed input is a clear Status, never a crash or an out-of-bounds read.
#include "gguf/gguf_file.h"

#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"

namespace pagellm {
namespace {

// Builds GGUF images field by field so each test can break exactly one thing.
class Raw {
 public:
  Raw& U32(uint32_t v) { return Put(&v, 4); }
  Raw& U64(uint64_t v) { return Put(&v, 8); }
  Raw& Str(const std::string& s) { U64(s.size()); bytes_.append(s); return *this; }
  Raw& Header(uint64_t num_tensors, uint64_t num_kv, uint32_t version = 3) {
    return U32(kGgufMagic).U32(version).U64(num_tensors).U64(num_kv);
  }
  // A tensor info: name, dims, type, offset.
  Raw& Tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) U64(d);
    return U32(type).U64(offset);
  }
  Raw& PadTo(size_t alignment) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, '\0');
    return *this;
  }
  Raw& Zeros(size_t n) { bytes_.append(n, '\0'); return *this; }
  const std::string& str() const { return bytes_; }

 private:
  Raw& Put(const void* p, size_t n) { bytes_.append(static_cast<const char*>(p), n); return *this; }
  std::string bytes_;
};

Status ParseStatus(const std::string& bytes) {
  std::span<const std::byte> span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Parse(span, "test.gguf");
  return f.ok() ? OkStatus() : f.status();
}

// Expects a failure whose message names the file and contains `needle`.
void ExpectError(const std::string& bytes, const std::string& needle) {
  Status s = ParseStatus(bytes);
  ASSERT_FALSE(s.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(s.message().find("test.gguf"), std::string::npos) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST(GgufFileTest, MinimalValidFiles) {
  EXPECT_TRUE(ParseStatus(Raw().Header(0, 0).str()).ok());
  EXPECT_TRUE(ParseStatus(Raw().Header(0, 0, 2).str()).ok());
  std::string one = Raw().Header(1, 0).Tensor("w", {8}, 0, 0).PadTo(32).Zeros(32).str();
  EXPECT_TRUE(ParseStatus(one).ok()) << ParseStatus(one);
}

TEST(GgufFileTest, HeaderErrors) {
  ExpectError("GGUX" + Raw().U32(3).U64(0).U64(0).str(), "bad magic");
  ExpectError(Raw().Header(0, 0, 1).str(), "v1 is not supported");
  ExpectError(Raw().Header(0, 0, 4).str(), "unsupported GGUF version 4");
  ExpectError(Raw().Header(0, 0, 0x03000000).str(), "byte-swapped");
  ExpectError("GG", "truncated");
  ExpectError(Raw().U32(kGgufMagic).U32(3).U64(0).str(), "truncated");
  ExpectError(Raw().Header(1ull << 62, 0).str(), "tensor count");
  ExpectError(Raw().Header(0, 1ull << 62).str(), "metadata count");
}

TEST(GgufFileTest, MetadataErrors) {
  ExpectError(Raw().Header(0, 1).Str("k").U32(13).U32(0).str(), "unknown value type 13");
  ExpectError(Raw().Header(0, 1).U64(1ull << 40).Zeros(16).str(), "truncated");  // key length
  ExpectError(Raw().Header(0, 1).Str("").U32(4).U32(1).str(), "empty");
  ExpectError(Raw().Header(0, 1).Str("k").U32(8).U64(1000).Str("").str(), "truncated");  // string value
  ExpectError(Raw().Header(0, 1).Str("k").U32(9).U32(4).U64(1ull << 61).str(), "more than the file holds");
  ExpectError(Raw().Header(0, 1).Str("k").U32(9).U32(77).U64(0).str(), "unknown element type 77");
  ExpectError(Raw().Header(0, 1).Str("k").U32(7).U32(2).str(), "bool byte 2");
  ExpectError(Raw().Header(0, 2).Str("k").U32(4).U32(1).Str("k").U32(4).U32(2).str(), "duplicate metadata key 'k'");
  Raw deep;
  deep.Header(0, 1).Str("k").U32(9);
  for (int i = 0; i < 20; ++i) deep.U32(9).U64(1);
  deep.U32(4).U64(1).U32(0);
  ExpectError(deep.str(), "nests arrays too deeply");
  ExpectError(Raw().Header(0, 1).Str("general.alignment").U32(10).U64(32).str(), "must be uint32");
  ExpectError(Raw().Header(0, 1).Str("general.alignment").U32(4).U32(48).str(), "not a power of two");
}

TEST(GgufFileTest, TensorInfoErrors) {
  auto one = [](std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data = 64) {
    return Raw().Header(1, 0).Tensor("w", std::move(ne), type, offset).PadTo(32).Zeros(data).str();
  };
  ExpectError(one({8}, 99, 0), "unknown ggml type id 99");
  ExpectError(one({32}, 9, 0), "q8_1) is not supported");
  ExpectError(one({}, 0, 0), "0 dims");
  ExpectError(one({1, 1, 1, 1, 1}, 0, 0), "5 dims");
  ExpectError(one({1ull << 63}, 0, 0), "negative or huge dim");
  ExpectError(one({1ull << 32, 1ull << 32}, 0, 0), "element count overflows");
  ExpectError(one({1ull << 62}, 0, 0), "byte size overflows");
  ExpectError(one({16}, 8, 0), "not a multiple of the q8_0 block size 32");
  ExpectError(one({8}, 0, 4), "not a multiple of the alignment 32");
  ExpectError(one({32}, 0, 0, 64), "extends past the end");        // 128 bytes, 64 present
  ExpectError(one({8}, 0, 1ull << 63), "extends past the end");
  ExpectError(one({8}, 0, 0, 0), "extends past the end");
  ExpectError(Raw().Header(1, 0).Tensor("", {8}, 0, 0).str(), "empty name");
  ExpectError(Raw().Header(2, 0).Tensor("w", {8}, 0, 0).Tensor("w", {8}, 0, 32).PadTo(32).Zeros(64).str(),
              "duplicate tensor name 'w'");
  ExpectError(Raw().Header(2, 0).Tensor("a", {16}, 0, 0).Tensor("b", {8}, 0, 32).PadTo(32).Zeros(96).str(),
              "overlap");
  ExpectError(Raw().Header(1, 0).Tensor("w", {8}, 0, 0).str(), "data section would start");
}

// A valid file with a bit of everything, used as the seed for random corruption.
std::string SeedFile() {
  GgufWriter w;
  w.AddMetadata("general.architecture", GgufValue::String("qwen3"));
  w.AddMetadata("qwen3.block_count", GgufValue::U32(2));
  w.AddMetadata("tokenizer.ggml.tokens", GgufValue::StringArray({"a", "bc", "<|im_end|>"}));
  w.AddMetadata("tokenizer.ggml.token_type", GgufValue::I32Array({1, 1, 3}));
  w.AddMetadata("nested", GgufValue::Array(GgufValueType::kArray, {GgufValue::I32Array({7})}));
  w.AddMetadata("general.alignment", GgufValue::U32(32));
  PAGELLM_CHECK(w.AddTensor("t0", GgmlType::kF32, {4, 2}, std::vector<std::byte>(32)).ok());
  PAGELLM_CHECK(w.AddTensor("t1", GgmlType::kQ8_0, {32}, std::vector<std::byte>(34)).ok());
  PAGELLM_CHECK(w.AddTensor("t2", GgmlType::kQ4_K, {256}, std::vector<std::byte>(144)).ok());
  return *w.WriteToString();
}

TEST(GgufFileTest, EveryTruncationFails) {
  const std::string seed = SeedFile();
  std::span<const std::byte> full(reinterpret_cast<const std::byte*>(seed.data()), seed.size());
  StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Parse(full, "seed");
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufTensorInfo& last = (*f)->tensors().back();
  const size_t needed = (*f)->data_offset() + last.offset + last.num_bytes();
  for (size_t n = 0; n < needed; ++n) {
    EXPECT_FALSE(ParseStatus(seed.substr(0, n)).ok()) << "prefix of " << n << " bytes parsed";
  }
  EXPECT_TRUE(ParseStatus(seed.substr(0, needed)).ok());  // trailing padding is optional
}

// Flips, overwrites and truncates bytes of the seed many times. Every result must be a
// clean Status or a file whose tensor views lie inside the buffer.
TEST(GgufFileTest, RandomCorruptionNeverCrashes) {
  const std::string seed = SeedFile();
  std::mt19937_64 rng(12345);
  int num_ok = 0, num_failed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = seed;
    int num_edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < num_edits; ++e) {
      size_t pos = rng() % bytes.size();
      switch (rng() % 5) {
        case 0: bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8))); break;
        case 1: bytes[pos] = static_cast<char>(rng()); break;
        case 2: {  // a plausible-looking large integer
          uint64_t v = (rng() % 2) ? ~0ull >> (rng() % 64) : rng() % 1000;
          std::memcpy(bytes.data() + pos, &v, std::min<size_t>(8, bytes.size() - pos));
          break;
        }
        case 3: bytes.resize(pos); break;
        default: bytes.insert(pos, 1 + rng() % 9, static_cast<char>(rng())); break;
      }
      if (bytes.empty()) break;
    }
    std::span<const std::byte> span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
    StatusOr<std::unique_ptr<GgufFile>> f = GgufFile::Parse(span, "fuzz");
    if (!f.ok()) {
      ++num_failed;
      EXPECT_FALSE(f.status().message().empty());
      continue;
    }
    ++num_ok;
    for (const GgufTensorInfo& t : (*f)->tensors()) {
      ASSERT_GE(t.data.data(), span.data());
      ASSERT_LE(t.data.data() + t.data.size(), span.data() + span.size());
    }
  }
  EXPECT_GT(num_failed, 1000);
  EXPECT_GT(num_ok, 10);  // some edits (e.g. inside tensor data) leave a valid file
}

}  // namespace
}  // namespace pagellm
