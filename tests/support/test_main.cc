// main() for every pagellm GoogleTest binary.
//
// CTest runs each test case as its own process, two at a time, so tests that write
// fixtures under ::testing::TempDir() would race on the same paths. Give every process
// a private temporary directory (TEST_TMPDIR, which TempDir() honours) and remove it
// when the process ends.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  std::string base = getenv("TMPDIR") != nullptr ? getenv("TMPDIR") : "/tmp";
  std::string dir = base + "/pagellm-test-XXXXXX";
  bool made = mkdtemp(dir.data()) != nullptr;
  if (made) setenv("TEST_TMPDIR", dir.c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  if (made && getenv("PAGELLM_KEEP_TEST_TMPDIR") == nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return result;
}
