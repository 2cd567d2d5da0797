#include "tokenizer/unicode.h"

#include <array>
#include <memory>

namespace pagellm::tokenizer {
namespace {

struct CategoryRange {
  char32_t first, last;
  uint8_t category;
};
struct CodepointRange {
  char32_t first, last;
};
#include "tokenizer/unicode_tables.inc"

constexpr char32_t kMaxCodepoint = 0x10FFFF;
constexpr size_t kNumCodepoints = 0x110000;
constexpr uint8_t kSpaceBit = 0x80;
constexpr uint8_t kInertBit = 0x40;
constexpr uint8_t kCategoryMask = 0x3F;

// One byte per code point: category | space bit | NFC-inert bit (1.1 MB, built once).
const uint8_t* Table() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    auto t = std::make_unique<uint8_t[]>(kNumCodepoints);  // zero = Cn
    for (const auto& r : kOnigCategoryRanges)
      for (char32_t c = r.first; c <= r.last; ++c) t[c] = r.category;
    for (const auto& r : kOnigSpaceRanges)
      for (char32_t c = r.first; c <= r.last; ++c) t[c] |= kSpaceBit;
    for (const auto& r : kHfNfcInertRanges)
      for (char32_t c = r.first; c <= r.last; ++c) t[c] |= kInertBit;
    return t;
  }();
  return table.get();
}

// Representatives per category and UTF-8 length (2, 3, 4 bytes), all assigned by
// Unicode 6 so that PCRE2's tables agree with Oniguruma's; 0 = none of that length.
constexpr char32_t kReps[][3] = {
    /*Cn*/ {0x0378, 0xFFFE, 0x1FFFE}, /*Lu*/ {0x00C0, 0x1E00, 0x10400},
    /*Ll*/ {0x00E0, 0x1E01, 0x10428}, /*Lt*/ {0x01C5, 0x1F88, 0},
    /*Lm*/ {0x02B0, 0x3005, 0x16F93}, /*Lo*/ {0x05D0, 0x4E00, 0x20000},
    /*Mn*/ {0x0300, 0x0900, 0x101FD}, /*Mc*/ {0, 0x0903, 0x11000},
    /*Me*/ {0x0488, 0x20DD, 0},       /*Nd*/ {0x0660, 0x0966, 0x104A0},
    /*Nl*/ {0, 0x2160, 0x10140},      /*No*/ {0x00B2, 0x2070, 0x10107},
    /*Pc*/ {0, 0x203F, 0},            /*Pd*/ {0x058A, 0x2010, 0},
    /*Ps*/ {0, 0x2045, 0},            /*Pe*/ {0, 0x2046, 0},
    /*Pi*/ {0x00AB, 0x2018, 0},       /*Pf*/ {0x00BB, 0x2019, 0},
    /*Po*/ {0x00A1, 0x2020, 0x10100}, /*Sm*/ {0x00AC, 0x2200, 0x1D6C1},
    /*Sc*/ {0x00A2, 0x20AC, 0},       /*Sk*/ {0x00A8, 0x309B, 0x1F3FB},
    /*So*/ {0x00A6, 0x2100, 0x1F600}, /*Zs*/ {0x00A0, 0x2000, 0},
    /*Zl*/ {0, 0x2028, 0},            /*Zp*/ {0, 0x2029, 0},
    /*Cc*/ {0x0080, 0, 0},            /*Cf*/ {0x00AD, 0x200B, 0xE0001},
    /*Co*/ {0, 0xE000, 0xF0000},
};
static_assert(std::size(kReps) == static_cast<size_t>(UnicodeCategory::kNumCategories));

// Byte-level validation of one sequence at bytes[i]: number of bytes of the valid
// sequence (>0), or -k where k is the length of the maximal invalid subpart (>=1).
int CheckSequence(std::string_view bytes, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(bytes[k]); };
  uint8_t lead = b(i);
  if (lead < 0x80) return 1;
  int need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) need = 1;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k <= need; ++k) {
    if (i + k >= bytes.size()) return -k;
    uint8_t c = b(i + k);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return -k;
  }
  return need + 1;
}

}  // namespace

char32_t DecodeUtf8(std::string_view text, size_t* pos) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + *pos;
  uint8_t lead = s[0];
  if (lead < 0x80) { *pos += 1; return lead; }
  if (lead < 0xE0) { *pos += 2; return ((lead & 0x1F) << 6) | (s[1] & 0x3F); }
  if (lead < 0xF0) {
    *pos += 3;
    return ((lead & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
  }
  *pos += 4;
  return ((lead & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

int Utf8Length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsAscii(std::string_view text) {
  for (char c : text)
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  return true;
}

bool IsValidUtf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    int n = CheckSequence(bytes, i);
    if (n < 0) return false;
    i += n;
  }
  return true;
}

std::string Utf8Lossy(std::string_view bytes) {
  if (IsValidUtf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 8);
  for (size_t i = 0; i < bytes.size();) {
    int n = CheckSequence(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += -n;
    }
  }
  return out;
}

size_t CompleteUtf8PrefixLength(std::string_view bytes) {
  // A pending sequence is at most 3 bytes long: look for its lead byte.
  size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    uint8_t c = static_cast<uint8_t>(bytes[n - back]);
    if (c >= 0x80 && c < 0xC0) continue;  // continuation byte: keep looking
    if (c < 0xC2 || c > 0xF4) return n;    // ASCII or a byte that never starts a sequence
    // Found a non-continuation byte; the tail is pending iff it is a valid prefix
    // that ran out of input (CheckSequence reports the end of input as -k with
    // i + k == n).
    int r = CheckSequence(bytes, n - back);
    if (r < 0 && static_cast<size_t>(-r) == back) return n - back;
    return n;
  }
  return n;
}

UnicodeCategory OnigCategory(char32_t cp) {
  if (cp > kMaxCodepoint) return UnicodeCategory::kCn;
  return static_cast<UnicodeCategory>(Table()[cp] & kCategoryMask);
}

bool IsUnicodeSpace(char32_t cp) { return cp <= kMaxCodepoint && (Table()[cp] & kSpaceBit); }

bool IsHfNormalizationInert(char32_t cp) {
  return cp <= kMaxCodepoint && (Table()[cp] & kInertBit);
}

bool IsWordChar(char32_t cp) {
  using C = UnicodeCategory;
  if (cp == 0x200C || cp == 0x200D) return true;
  // Other_Alphabetic symbols: circled / squared Latin letters.
  if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
      (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189))
    return true;
  switch (OnigCategory(cp)) {
    case C::kLu: case C::kLl: case C::kLt: case C::kLm: case C::kLo: case C::kNl:
    case C::kMn: case C::kMc: case C::kMe: case C::kNd: case C::kPc:
      return true;
    default:
      return false;
  }
}

std::string ProxyForRegex(std::string_view text) {
  std::string out(text);
  const uint8_t* table = Table();
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) { ++pos; continue; }
    size_t start = pos;
    char32_t cp = DecodeUtf8(text, &pos);
    if (cp == 0x017F || cp == 0x212A || cp == 0x0085) continue;  // case folding, NEL
    int len = static_cast<int>(pos - start);
    char32_t rep = kReps[table[cp] & kCategoryMask][len - 2];
    if (rep == 0 || rep == cp) continue;
    std::string bytes;
    AppendUtf8(rep, &bytes);  // same length as `len` by construction of kReps
    out.replace(start, len, bytes);
  }
  return out;
}

}  // namespace pagellm::tokenizer
