// How the AVX-512 k-quant kernels unpack a packed record's code bytes (kquant_packed.h)
// into one byte per weight: shared by the VNNI kernels (kquant_packed_avx512.cc) and the
// AMX tile kernels (kquant_packed_amx.cc). Include only after a
// `#pragma GCC target("avx512f,avx512bw,...")`: these are AVX-512 functions.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "tensor/dtype.h"

namespace pagellm::kquant_packed {

inline __m512i Load(const uint8_t* p) { return _mm512_load_si512(p); }
inline __m512 LoadF16x16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// Bits 4..5 of each byte <- bits 2g..2g+1 of the same byte of h (Q6_K's top 2 bits).
template <int G>
inline __m512i HighBits(__m512i h) {
  const __m512i m = _mm512_set1_epi8(0x30);
  if constexpr (G == 0) return _mm512_and_si512(_mm512_slli_epi16(h, 4), m);
  if constexpr (G == 1) return _mm512_and_si512(_mm512_slli_epi16(h, 2), m);
  if constexpr (G == 2) return _mm512_and_si512(h, m);
  return _mm512_and_si512(_mm512_srli_epi16(h, 2), m);
}

// Q5_K's 5th bits for group g: bit g (low nibbles) or 4 + g (high nibbles) of each byte of
// h, moved to bit 4.
inline __m512i FifthBitLo(__m512i h, int g) { return _mm512_and_si512(_mm512_slli_epi16(h, 4 - g), _mm512_set1_epi8(0x10)); }
inline __m512i FifthBitHi(__m512i h, int g) { return _mm512_and_si512(_mm512_srli_epi16(h, g), _mm512_set1_epi8(0x10)); }

// How the nibbles of a block decode: plain 4-bit codes, with a 5th bit from a plane
// (Q5_K, Q5_0), or IQ4 codes looked up as table value + 128.
enum class Nibbles { kPlain, kFifthBit, kIq4 };

constexpr bool IsSuperBlock(DType t) {
  return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K || t == DType::kIQ4_XS;
}
constexpr int BlockCols(DType t) { return IsSuperBlock(t) ? 256 : 32; }

// f.template operator()<I>() for I = 0 .. N-1, unrolled.
template <int N, class F>
inline void Unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }(std::make_integer_sequence<int, N>{});
}

}  // namespace pagellm::kquant_packed
