#include "common/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

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

// Rss of the mapping that starts at `begin`, from /proc/self/smaps (kB).
int64_t MappingRssKb(const void* begin) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0;
    if (std::sscanf(line.c_str(), "%lx-", &start) == 1 && line.find('-') < 17 && line.find(':') > 17) {
      inside = start == reinterpret_cast<uintptr_t>(begin);
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stoll(line.substr(4));
    }
  }
  return -1;
}

TEST(MappedFileTest, ReleasePagesDropsWholePagesAndKeepsTheBytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::string contents(8 * page, '\0');
  for (size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<char>(i * 7 + 3);
  const std::string path = ::testing::TempDir() + "/mapped_file_release.bin";
  ASSERT_TRUE(WriteStringToFile(path, contents).ok());
  auto file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const auto* data = reinterpret_cast<const char*>((*file)->bytes().data());
  int64_t sum = 0;
  for (size_t i = 0; i < contents.size(); i += 64) sum += data[i];  // fault every page in
  EXPECT_NE(sum, 0);
  EXPECT_EQ(MappingRssKb(data), static_cast<int64_t>(8 * page / 1024));
  // [page / 2, 6.5 pages) holds pages 1 .. 5 whole: those go, the partial ends stay.
  EXPECT_EQ(MappedFile::ReleasePages(data + page / 2, 6 * page), 5 * page);
  EXPECT_EQ(MappingRssKb(data), static_cast<int64_t>(3 * page / 1024));
  EXPECT_EQ(std::string(data, contents.size()), contents);  // read back from the file
  EXPECT_EQ(MappedFile::ReleasePages(data, 9 * page), 0u) << "a range past the mapping is refused";
  std::vector<char> heap(4 * page, 'x');
  EXPECT_EQ(MappedFile::ReleasePages(heap.data(), heap.size()), 0u) << "memory that is not a file mapping";
  EXPECT_EQ(std::string(heap.data(), heap.size()), std::string(4 * page, 'x'));
}

TEST(JsonTest, InvalidJsonNamesTheSource) {
  auto parsed = ParseJson("{\"a\": ", "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("config.json"), std::string::npos);
}

}  // namespace
}  // namespace pagellm
