#include "tokenizer/unicode.h"

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"

namespace pagellm::tokenizer {
namespace {

TEST(Utf8LossyTest, MaximalSubpartsAsInUnicodeTable3_8) {
  // The Unicode Standard, section 3.9, Table 3-8 (U+FFFD substitution of maximal subparts).
  std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Utf8Lossy(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(Utf8Lossy("\xED\xA0\x80"), r + r + r);  // surrogates are invalid
  EXPECT_EQ(Utf8Lossy("\xF0\x9F\x98"), r);           // truncated 4-byte sequence
  EXPECT_EQ(Utf8Lossy("ok \xC3\xA9"), "ok \xC3\xA9");
}

TEST(Utf8Test, CompletePrefixHoldsBackOnlyCompletableTails) {
  EXPECT_EQ(CompleteUtf8PrefixLength("ab"), 2u);
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xF0\x9F"), 1u);      // could become an emoji
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xE4"), 1u);
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xC0"), 2u);          // never valid: emit now
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xED\xA0"), 3u);      // surrogate prefix: invalid
  EXPECT_EQ(CompleteUtf8PrefixLength("\x80\x80"), 2u);
}

TEST(UnicodeTest, DecodeEncodeRoundTrip) {
  for (char32_t cp : {U'A', U'\u00E9', U'\u4E16', U'\U0001F600', U'\U0010FFFF'}) {
    std::string s;
    AppendUtf8(cp, &s);
    EXPECT_EQ(static_cast<int>(s.size()), Utf8Length(cp));
    size_t pos = 0;
    EXPECT_EQ(DecodeUtf8(s, &pos), cp);
    EXPECT_EQ(pos, s.size());
  }
}

TEST(UnicodeTest, CategoriesFollowOniguruma) {
  EXPECT_EQ(OnigCategory(U'A'), UnicodeCategory::kLu);
  EXPECT_EQ(OnigCategory(U'7'), UnicodeCategory::kNd);
  EXPECT_EQ(OnigCategory(0x0301), UnicodeCategory::kMn);
  // Probed from HF tokenizers: Todhri (Unicode 16) is a letter there, PCRE2 10.42
  // (Unicode 14) does not know it.
  EXPECT_EQ(OnigCategory(0x105C0), UnicodeCategory::kLo);
  EXPECT_EQ(OnigCategory(0x31350), UnicodeCategory::kLo);  // CJK Ext H (Unicode 15)
  EXPECT_EQ(OnigCategory(0x180E), UnicodeCategory::kCf);
  EXPECT_TRUE(IsUnicodeSpace(0x85));
  EXPECT_TRUE(IsUnicodeSpace(0x3000));
  EXPECT_FALSE(IsUnicodeSpace(0x180E));  // HF's \s excludes it; PCRE2's \s does not
  EXPECT_FALSE(IsUnicodeSpace(0x200B));
}

TEST(UnicodeTest, ProxyKeepsByteOffsets) {
  std::string text = "a\u00E9\u4E16\U0001F600\U000105C0 \u180E\u017F";
  std::string proxied = ProxyForRegex(text);
  ASSERT_EQ(proxied.size(), text.size());
  EXPECT_EQ(proxied.substr(0, 1), "a");
  EXPECT_NE(proxied, text);  // U+105C0 and U+180E are rewritten
  EXPECT_EQ(proxied.substr(proxied.size() - 2), "\u017F");  // long s kept for (?i:'s)
}

TEST(NormalizeTest, NfcComposesLikeHf) {
  EXPECT_EQ(UnicodeNormalize("cafe\u0301", NormalizationForm::kNFC), "caf\u00E9");
  EXPECT_EQ(UnicodeNormalize("\u1100\u1161\u11A8", NormalizationForm::kNFC), "\uAC01");
  EXPECT_EQ(UnicodeNormalize("a\u0308\u0301", NormalizationForm::kNFC), "\u00E4\u0301");
  EXPECT_EQ(UnicodeNormalize("plain ascii", NormalizationForm::kNFC), "plain ascii");
  // Probed from HF: its NFC data predates U+0898 (ccc 230), so it does not reorder
  // "a U+0898 U+0334" (utf8proc, with Unicode 15 data, would).
  EXPECT_EQ(UnicodeNormalize("a\u0898\u0334", NormalizationForm::kNFC), "a\u0898\u0334");
  EXPECT_EQ(UnicodeNormalize("\u00E9", NormalizationForm::kNFD), "e\u0301");
}

}  // namespace
}  // namespace pagellm::tokenizer

namespace pagellm::tokenizer {
namespace {

// Over every scalar value: after ProxyForRegex, PCRE2's \p{..} and \s classify each
// code point exactly as the Oniguruma table (probed from HF tokenizers) says.
TEST(UnicodeTest, ProxyMakesPcre2AgreeWithOnigurumaEverywhere) {
  std::string all;
  std::vector<char32_t> cps;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    cps.push_back(cp);
    AppendUtf8(cp, &all);
  }
  std::string proxied = ProxyForRegex(all);
  ASSERT_EQ(proxied.size(), all.size());
  using C = UnicodeCategory;
  auto in = [](C c, std::initializer_list<C> set) { return std::find(set.begin(), set.end(), c) != set.end(); };
  const std::vector<std::pair<std::string, std::function<bool(char32_t)>>> classes = {
      {R"(\p{L})", [&](char32_t c) { return in(OnigCategory(c), {C::kLu, C::kLl, C::kLt, C::kLm, C::kLo}); }},
      {R"(\p{N})", [&](char32_t c) { return in(OnigCategory(c), {C::kNd, C::kNl, C::kNo}); }},
      {R"(\p{M})", [&](char32_t c) { return in(OnigCategory(c), {C::kMn, C::kMc, C::kMe}); }},
      {R"(\p{Lu})", [&](char32_t c) { return OnigCategory(c) == C::kLu; }},
      {R"(\p{Ll})", [&](char32_t c) { return OnigCategory(c) == C::kLl; }},
      {R"(\p{Lo})", [&](char32_t c) { return OnigCategory(c) == C::kLo; }},
      {R"(\p{Lm})", [&](char32_t c) { return OnigCategory(c) == C::kLm; }},
      {R"(\s)", [&](char32_t c) { return IsUnicodeSpace(c); }},
  };
  for (const auto& [pattern, expected] : classes) {
    auto re = Regex::Compile(pattern);
    ASSERT_TRUE(re.ok());
    // Regex::FindAll proxies on its own; run it on the original text.
    std::vector<Regex::Match> matches;
    (*re)->FindAll(all, &matches);
    std::vector<bool> matched(0x110000, false);
    for (const auto& m : matches) {
      size_t pos = m.begin;
      matched[DecodeUtf8(all, &pos)] = true;
    }
    int mismatches = 0;
    for (char32_t cp : cps) {
      if (matched[cp] != expected(cp) && mismatches++ < 5)
        ADD_FAILURE() << pattern << " disagrees on U+" << std::hex << static_cast<uint32_t>(cp);
    }
    EXPECT_EQ(mismatches, 0) << pattern;
  }
}

}  // namespace
}  // namespace pagellm::tokenizer
