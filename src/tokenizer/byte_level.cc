#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {
namespace {

struct Tables {
  std::array<char32_t, 256> byte_to_char;
  std::array<int16_t, 512> char_to_byte;  // every mapped char is < 0x144
};

const Tables& GetTables() {
  static const Tables tables = [] {
    Tables t;
    t.char_to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t.byte_to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      t.char_to_byte[t.byte_to_char[b]] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return tables;
}

}  // namespace

char32_t ByteToChar(uint8_t byte) { return GetTables().byte_to_char[byte]; }

int CharToByte(char32_t c) { return c < 512 ? GetTables().char_to_byte[c] : -1; }

std::string ByteLevelEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) AppendUtf8(ByteToChar(static_cast<uint8_t>(b)), &out);
  return out;
}

std::optional<std::string> ByteLevelDecode(std::string_view text) {
  if (!IsValidUtf8(text)) return std::nullopt;
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    int b = CharToByte(DecodeUtf8(text, &pos));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace pagellm::tokenizer
