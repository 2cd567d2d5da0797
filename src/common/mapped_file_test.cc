#include "common/mapped_file.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace pagellm {
namespace {

TEST(MappedFileTest, MapsWhatWasWritten) {
  std::string path = ::testing::TempDir() + "/mapped_file_test.bin";
  ASSERT_TRUE(WriteStringToFile(path, "hello weights").ok());
  auto file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto bytes = (*file)->bytes();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "hello weights");
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  auto file = MappedFile::Open("/nonexistent/pagellm/file");
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
}

TEST(JsonTest, InvalidJsonNamesTheSource) {
  auto parsed = ParseJson("{\"a\": ", "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("config.json"), std::string::npos);
}

}  // namespace
}  // namespace pagellm
