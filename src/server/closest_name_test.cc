#include "server/closest_name.h"

#include <gtest/gtest.h>

namespace pagellm::server {
namespace {

TEST(ClosestNameTest, EditDistanceBasics) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("abc", ""), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("--port", "--prot"), 1);  // one transposition
}

TEST(ClosestNameTest, SuggestsTheNearestFlag) {
  std::vector<std::string> flags = {"--max-model-len", "--max-num-seqs", "--port", "--host", "--block-size"};
  EXPECT_EQ(ClosestName("--max-model-length", flags), "--max-model-len");
  EXPECT_EQ(ClosestName("--max-num-seq", flags), "--max-num-seqs");
  EXPECT_EQ(ClosestName("--prot", flags), "--port");
  EXPECT_EQ(ClosestName("--blocksize", flags), "--block-size");
}

TEST(ClosestNameTest, NoSuggestionForUnrelatedNames) {
  std::vector<std::string> flags = {"--max-model-len", "--port"};
  EXPECT_EQ(ClosestName("--temperature", flags), "");
  EXPECT_EQ(ClosestName("--x", {}), "");
}

}  // namespace
}  // namespace pagellm::server
