// Unicode helpers the tokenizer needs, matched to what Hugging Face tokenizers does
// rather than to the newest Unicode standard:
//  - UTF-8 decode/encode, Rust `String::from_utf8_lossy` replacement (maximal subparts),
//  - the general category and `\s` of every code point as Oniguruma (HF's regex engine)
//    sees them (Unicode 16 tables, generated into unicode_tables.inc),
//  - ProxyForRegex: rewrites text so PCRE2 (Unicode 14 tables) classifies each code
//    point exactly as Oniguruma does, without changing any byte offset.
//
//   std::string clean = Utf8Lossy(bytes);            // valid UTF-8 from anything
//   std::string proxied = ProxyForRegex(clean);       // same length; run PCRE2 on it
//   // offsets found in `proxied` index `clean` directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagellm::tokenizer {

// Oniguruma general categories; the order matches kUnicodeCategoryNames.
enum class UnicodeCategory : uint8_t {
  kCn, kLu, kLl, kLt, kLm, kLo, kMn, kMc, kMe, kNd, kNl, kNo, kPc, kPd, kPs, kPe, kPi,
  kPf, kPo, kSm, kSc, kSk, kSo, kZs, kZl, kZp, kCc, kCf, kCo, kNumCategories
};

// Decodes the scalar value starting at text[*pos] and advances *pos.
// Precondition: `text` is valid UTF-8 and *pos < text.size() starts a sequence.
char32_t DecodeUtf8(std::string_view text, size_t* pos);
void AppendUtf8(char32_t cp, std::string* out);
int Utf8Length(char32_t cp);

bool IsAscii(std::string_view text);
bool IsValidUtf8(std::string_view bytes);

// Rust String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
std::string Utf8Lossy(std::string_view bytes);

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence
// that could still be completed by more bytes. Decoding that prefix lossily and the rest
// later gives the same text as decoding everything at once.
size_t CompleteUtf8PrefixLength(std::string_view bytes);

UnicodeCategory OnigCategory(char32_t cp);
// Rust char::is_whitespace == Oniguruma \s == Unicode White_Space.
bool IsUnicodeSpace(char32_t cp);
// Rust regex \w: Alphabetic, marks, decimal digits, connector punctuation, joiners.
bool IsWordChar(char32_t cp);
// True if HF's (older) normalization data does not know this code point, so HF's NFC
// leaves it untouched and never composes across it.
bool IsHfNormalizationInert(char32_t cp);

// Same-length rewrite of valid UTF-8 `text` in which every non-ASCII code point is
// replaced by an old representative of its Oniguruma category (kept as is where no
// representative of that byte length exists, and for U+017F/U+212A, which case-fold to
// ASCII letters). Precondition: the regex uses only ASCII and general categories.
std::string ProxyForRegex(std::string_view text);

}  // namespace pagellm::tokenizer
