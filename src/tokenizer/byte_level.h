// ByteLevel: GPT-2's reversible byte <-> printable-character mapping that byte-level BPE
// vocabularies are written in (byte 0x20 ' ' is "Ġ" U+0120, 0x0A is "Ċ" U+010A, ...).
//
//   std::string token = ByteLevelEncode("\n hi");             // "ĊĠhi"
//   std::optional<std::string> bytes = ByteLevelDecode("ĊĠhi"); // "\n hi"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagellm::tokenizer {

char32_t ByteToChar(uint8_t byte);
// The byte a mapped character stands for, or -1 if `c` is not one of the 256.
int CharToByte(char32_t c);

// Raw bytes -> mapped UTF-8 text.
std::string ByteLevelEncode(std::string_view bytes);
// Mapped text -> raw bytes; nullopt if `text` is not valid UTF-8 or contains a
// character outside the mapping (HF's decoder then keeps the token's own UTF-8).
std::optional<std::string> ByteLevelDecode(std::string_view text);

}  // namespace pagellm::tokenizer
