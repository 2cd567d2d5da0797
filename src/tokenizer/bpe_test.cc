#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"

namespace pagellm::tokenizer {
namespace {

// Vocab: the 256 byte characters (ids 0..255 in byte order) plus `extra` tokens.
std::unique_ptr<BpeModel> Make(std::vector<std::string> extra,
                               std::vector<std::pair<std::string, std::string>> merges) {
  BpeModel::Config config;
  for (int b = 0; b < 256; ++b) config.id_to_token.push_back(ByteLevelEncode(std::string(1, char(b))));
  for (auto& t : extra) config.id_to_token.push_back(t);
  config.merges = std::move(merges);
  auto m = BpeModel::Create(std::move(config));
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(*m);
}

std::vector<int32_t> Enc(const BpeModel& m, std::string_view s) {
  std::vector<int32_t> ids;
  m.Encode(s, &ids);
  return ids;
}

TEST(BpeTest, MergesApplyInRankOrder) {
  // ids: ab=256, abc=257, bc=258
  auto m = Make({"ab", "abc", "bc"}, {{"a", "b"}, {"ab", "c"}, {"b", "c"}});
  EXPECT_EQ(Enc(*m, "abc"), (std::vector<int32_t>{257}));
  auto m2 = Make({"ab", "abc", "bc"}, {{"b", "c"}, {"a", "b"}, {"ab", "c"}});
  // (b,c) has the lowest rank: a + bc, and there is no (a, bc) merge.
  EXPECT_EQ(Enc(*m2, "abc"), (std::vector<int32_t>{'a', 258}));
}

TEST(BpeTest, EqualRanksMergeLeftmostFirst) {
  auto m = Make({"aa"}, {{"a", "a"}});
  EXPECT_EQ(Enc(*m, "aaa"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(Enc(*m, "aaaa"), (std::vector<int32_t>{256, 256}));
}

TEST(BpeTest, ByteLevelSpaceAndNewline) {
  // Byte-level: ' ' is "Ġ", '\n' is "Ċ"; "Ġh" = 256.
  auto m = Make({"Ġh", "Ġhi"}, {{"Ġ", "h"}, {"Ġh", "i"}});
  EXPECT_EQ(Enc(*m, " hi\n"), (std::vector<int32_t>{257, '\n'}));
  EXPECT_EQ(m->IdToToken(257), "Ġhi");
  EXPECT_EQ(m->TokenToId("Ġh"), 256);
  // Cached and uncached paths agree.
  std::vector<int32_t> uncached;
  m->EncodeUncached(" hi\n", &uncached);
  EXPECT_EQ(Enc(*m, " hi\n"), uncached);
}

TEST(BpeTest, MergeWithUnknownTokenIsAnError) {
  BpeModel::Config config;
  config.id_to_token = {"a", "b"};
  config.merges = {{"a", "b"}};
  EXPECT_FALSE(BpeModel::Create(std::move(config)).ok());
}

TEST(ByteLevelTest, MappingRoundTripsAllBytes) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string mapped = ByteLevelEncode(all);
  EXPECT_EQ(ByteLevelEncode(" "), "\u0120");
  EXPECT_EQ(ByteLevelEncode("\n"), "\u010A");
  EXPECT_EQ(ByteLevelDecode(mapped), all);
  EXPECT_FALSE(ByteLevelDecode("\u4E16").has_value());
}

}  // namespace
}  // namespace pagellm::tokenizer
